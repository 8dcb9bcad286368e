-- Retention and downsampling (see odp_store::retention).

-- Stacks no sample references are deleted in batches; the foreign key
-- check of each deleted stack, and the "still referenced?" test, need
-- samples by stack.
create index samples_stack on samples (stack_id);

-- Expired and old windows are found by age.
create index snapshots_window_end on snapshots (window_end);

-- When a stack row was written (the moment of the insert, not of its
-- transaction's start), so frame collection can tell stacks written after
-- it scanned from those it saw. Added with a stable default so existing
-- rows get the migration's time without a table rewrite, then switched to
-- the insert's own time.
alter table stacks add column stored_at timestamptz not null default now();
alter table stacks alter column stored_at set default clock_timestamp();
create index stacks_stored_at on stacks (stored_at);

-- How many agent windows a snapshot row holds: 1 as ingested, more once
-- downsampling merged old windows into a coarse bucket.
alter table snapshots add column merged_windows integer not null default 1
    check (merged_windows >= 1);
