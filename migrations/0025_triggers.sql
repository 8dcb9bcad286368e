-- Triggers (issue 29): profile a service's host when a condition holds
-- there. Agents evaluate the condition and report it; the api-server
-- records each report as a firing and decides, in one transaction that
-- locks the trigger's row, whether the host's cooldown and the trigger's
-- fleet-wide cap let it start a profile.
create table triggers (
    id               uuid primary key,
    service          text not null references services (name) on delete cascade,
    -- {"kind": "cpu_above", "percent": 80, "for_secs": 30} or
    -- {"kind": "rss_growth", "mib_per_min": 50, "for_secs": 120}.
    condition        jsonb not null,
    duration_secs    integer not null check (duration_secs > 0),
    event            text not null,
    frequency_hz     integer not null check (frequency_hz > 0),
    cooldown_secs    integer not null check (cooldown_secs > 0),
    max_concurrent   integer not null check (max_concurrent > 0),
    -- The hosts that watch it, sorted; null: every host running it.
    hosts            jsonb not null default 'null',
    enabled          boolean not null default true,
    fired            bigint not null default 0,
    held_back        bigint not null default 0,
    last_fired_at    timestamptz,
    -- Set by the first firing held back since the last one that started a
    -- profile: what is reported once.
    held_back_since  timestamptz,
    held_back_reason text,
    created_by       text not null,
    updated_by       text not null,
    created_at       timestamptz not null default now(),
    updated_at       timestamptz not null default now()
);
create index triggers_service on triggers (service);

create table trigger_firings (
    id            uuid primary key,
    trigger_id    uuid not null references triggers (id) on delete cascade,
    host          text not null,
    -- When the condition began to hold, unix ms by the agent's clock: with
    -- the trigger and host, what makes a report the same report (every
    -- api-server replica reads it).
    held_since_ms bigint not null,
    observed      double precision not null,
    fired_at      timestamptz not null default now(),
    outcome       text not null,
    reason        text,
    profile_id    uuid,
    unique (trigger_id, host, held_since_ms)
);
create index trigger_firings_latest on trigger_firings (trigger_id, fired_at);
