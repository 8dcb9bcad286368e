-- Re-analysis: a rule an admin creates or changes is applied to the
-- profiles stored before the change by a background job in the pipeline.
-- One row per change, with its progress; a worker holds a job by leasing it
-- (pushing `lease_until` forward), so a crashed worker's job resumes from
-- its cursor elsewhere.

create table rule_reanalyses (
    id                uuid primary key,
    rule_id           text not null references rules (id) on delete cascade,
    requested_by      text not null,
    requested_at      timestamptz not null default now(),
    status            text not null default 'pending'
                      check (status in ('pending', 'running', 'finished', 'failed')),
    -- Profiles created up to `requested_at`, counted when the job starts.
    profiles_total    bigint,
    profiles_done     bigint not null default 0,
    -- The last profile evaluated, in (created_at, id) order.
    cursor_created_at timestamptz,
    cursor_id         uuid,
    lease_until       timestamptz not null default '-infinity',
    started_at        timestamptz,
    finished_at       timestamptz,
    error             text
);
create index rule_reanalyses_open on rule_reanalyses (requested_at)
    where status in ('pending', 'running');
create index rule_reanalyses_rule on rule_reanalyses (rule_id, requested_at desc);
create index profiles_created on profiles (created_at, id);

-- What a rule kind found beyond the share, for people: a schedule
-- regression's grown functions and newly hit rules.
alter table detections add column detail jsonb not null default 'null';
