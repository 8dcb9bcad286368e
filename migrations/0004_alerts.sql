-- Alerts: where new detections are announced (webhooks for now) and the
-- outbox of deliveries, each sent at most once per (profile, rule,
-- channel) and retried with backoff, with a log of every attempt.

create table alert_channels (
    id              uuid primary key,
    name            text not null unique,
    kind            text not null default 'webhook' check (kind in ('webhook')),
    url             text not null,
    -- Key of the HMAC-SHA256 signature sent with each delivery.
    secret          text not null,
    -- Glob over the profile's service ('*' any run of characters, '?' one);
    -- '*' alone applies to every service.
    service_pattern text not null default '*',
    enabled         boolean not null default true,
    created_at      timestamptz not null default now()
);

create table alert_deliveries (
    id              uuid primary key,
    profile_id      uuid not null,
    rule_id         text not null references rules (id) on delete cascade,
    channel_id      uuid not null references alert_channels (id) on delete cascade,
    -- The detection as it was found, so the alert says what fired even if
    -- later windows dilute it away.
    service         text not null,
    host            text not null,
    share           double precision not null,
    threshold_pct   double precision not null,
    stacks          jsonb not null default '[]',
    detected_at     timestamptz not null,
    status          text not null default 'pending'
                    check (status in ('pending', 'delivered', 'failed')),
    attempts        integer not null default 0,
    -- When a pending delivery is next due; a claimed one is leased by
    -- pushing this forward, so a crashed sender's work comes back.
    next_attempt_at timestamptz not null default now(),
    created_at      timestamptz not null default now(),
    finished_at     timestamptz,
    unique (profile_id, rule_id, channel_id)
);
create index alert_deliveries_due on alert_deliveries (next_attempt_at) where status = 'pending';

create table alert_attempts (
    delivery_id  uuid not null references alert_deliveries (id) on delete cascade,
    attempt      integer not null,
    attempted_at timestamptz not null default now(),
    -- The HTTP status when there was a response, else the error.
    status_code  integer,
    error        text,
    success      boolean not null,
    primary key (delivery_id, attempt)
);
