-- Issue 26: a run's lifecycle. Each chosen host's start is recorded, so a
-- host whose member never started says why (its target already had a live
-- profile, the broker refused, ...); and a schedule may start a run of a
-- service instead of profiling one host.
create table run_hosts (
    run_id     uuid not null references runs (id) on delete cascade,
    host       text not null,
    -- The member profile, when one was recorded.
    profile_id uuid,
    started    boolean not null,
    -- Why the member was not started.
    reason     text,
    -- The live profile that kept the member from starting.
    blocked_by uuid,
    created_at timestamptz not null default now(),
    primary key (run_id, host)
);

-- A run schedule's run: the hosts selection, stratify_by, seed, strict and
-- stop rule (the service, duration and frequency are the schedule's own).
alter table schedules add column run_spec jsonb;
-- The run a run schedule's occurrence started.
alter table schedule_runs add column run_id uuid references runs (id) on delete set null;
