-- Scheduled profiling: a cron expression in an IANA time zone starts a
-- profile of one target; the api-server's scheduler fires due schedules
-- under an advisory lock and records every occurrence in schedule_runs.

create table schedules (
    id            uuid primary key,
    name          text not null unique,
    service       text not null,
    host          text not null,
    target        jsonb not null,
    mode          text not null default 'cpu',
    duration_secs integer not null check (duration_secs > 0),
    frequency_hz  integer not null check (frequency_hz > 0),
    window_secs   integer check (window_secs > 0),
    -- As given by the user (5 fields, or 6/7 with seconds first).
    cron          text not null,
    timezone      text not null default 'UTC',
    enabled       boolean not null default true,
    created_by    text not null,
    created_at    timestamptz not null default now(),
    updated_at    timestamptz not null default now(),
    -- The next occurrence to fire; null when disabled.
    next_run_at   timestamptz,
    last_run_at   timestamptz
);
create index schedules_due on schedules (next_run_at) where enabled;

create table schedule_runs (
    id            bigserial primary key,
    schedule_id   uuid not null references schedules (id) on delete cascade,
    -- The occurrence this run is for; unique per schedule, so an occurrence
    -- is fired at most once however many schedulers race for it.
    scheduled_for timestamptz not null,
    fired_at      timestamptz not null default now(),
    outcome       text not null
                  check (outcome in ('started', 'missed', 'skipped_busy', 'failed')),
    profile_id    uuid,
    detail        text,
    unique (schedule_id, scheduled_for)
);
