-- Continuous profiles (issue 29): a service profiled always, at a low rate
-- and within a per-host CPU budget. The api-server sends the enabled ones
-- to every agent in its signed service sync; each agent profiles the
-- service's processes on its host in hourly segments, and the pipeline
-- creates each segment's profile (an ordinary profile, `continuous_id`
-- set) when its first window arrives.
create table continuous_profiles (
    id             uuid primary key,
    -- One configuration per service; deleting the service deletes it.
    service        text not null unique references services (name) on delete cascade,
    event          text not null,
    frequency_hz   integer not null check (frequency_hz > 0),
    -- Millionths of one core (5000 = 0.5 %).
    cpu_budget_ppm integer not null check (cpu_budget_ppm > 0 and cpu_budget_ppm <= 1000000),
    -- The hosts that profile it, sorted; null: every host running it.
    hosts          jsonb not null default 'null',
    enabled        boolean not null default true,
    created_by     text not null,
    updated_by     text not null,
    created_at     timestamptz not null default now(),
    updated_at     timestamptz not null default now()
);

-- A segment of a continuous profile is live beside an on-demand profile
-- or a run of the same process: the one-live-profile rule is for requests.
alter table profiles add column continuous_id uuid;
drop index profiles_one_live_per_target;
create unique index profiles_one_live_per_target
    on profiles (host, mode, target)
    where status in ('requested', 'dispatched', 'running') and continuous_id is null;
create index profiles_continuous on profiles (continuous_id, created_at)
    where continuous_id is not null;
