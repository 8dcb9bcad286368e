-- Samples move from one row per (window, stack, thread), with frames and
-- stacks in global tables, into compact blocks that hold their own
-- dictionaries:
--
-- * each window arrives as its own block (`snapshots.block`, the agent's
--   snapshot as it was sent: frames deduplicated, LZ4);
-- * once a profile has ended, its windows are merged into one block
--   (`profile_blocks`, odp-profile's format: string table, stack tree,
--   varint columns, deflate) and the windows' own blocks are dropped
--   (`compacted`).
--
-- A profile is read as its profile block plus the blocks of windows not
-- compacted yet: one or a few rows, however many samples it has. Windows
-- stored before this migration keep their rows in `samples` and
-- `snapshot_threads` (block null, not compacted) until the pipeline's
-- compaction moves them into a profile block; the frames and stacks then
-- referenced by nothing are collected by retention as before.
alter table snapshots add column block bytea;
alter table snapshots add column compacted boolean not null default false;

create table profile_blocks (
    profile_id uuid primary key,
    -- Windows merged into the block, and their samples.
    windows    integer not null check (windows >= 0),
    samples    bigint not null check (samples >= 0),
    block      bytea not null,
    built_at   timestamptz not null default now()
);

-- Profiles whose windows are not all in their profile block yet.
create index snapshots_uncompacted on snapshots (profile_id) where not compacted;

-- A service's compacted profiles of one hour, merged into one block
-- (their windows kept apart, each with its profile id), so an aggregate
-- across a fleet reads one block per hour instead of one per instance.
-- `rollup` says where a compacted profile stands: `pending`, `rolled` (in
-- its service's rollups; windows compacted into it later are added to
-- them as they are compacted), or `alone` (a rollup of it would be about
-- as large as its block: its stacks share little with its service's, and
-- it is read from its own block).
alter table profile_blocks add column rollup text not null default 'pending'
    check (rollup in ('pending', 'rolled', 'alone'));

create table service_rollups (
    service  text not null,
    hour     timestamptz not null,
    windows  integer not null check (windows >= 0),
    samples  bigint not null check (samples >= 0),
    block    bytea not null,
    built_at timestamptz not null default now(),
    primary key (service, hour)
);

create index profile_blocks_to_roll_up on profile_blocks (profile_id) where rollup = 'pending';
