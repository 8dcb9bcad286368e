-- Common issue detection: the rules (seeded from rules/seed.json, editable
-- by admins) and what they found in each profile.

create table rules (
    id                 text primary key,
    title              text not null,
    explanation        text not null,
    fix                text not null,
    link               text not null,
    -- The rule kind ('stack_share'; later 'library_version',
    -- 'runtime_option') and its kind-specific parameters.
    kind               text not null,
    spec               jsonb not null,
    threshold_pct      double precision not null check (threshold_pct >= 0 and threshold_pct <= 100),
    -- Per-service threshold overrides: {"service": pct}.
    service_thresholds jsonb not null default '{}',
    enabled            boolean not null default true,
    -- 'seed' rows are refreshed from the shipped pack at start-up; a row an
    -- admin created or changed is 'user' and never overwritten.
    source             text not null default 'user' check (source in ('seed', 'user')),
    created_at         timestamptz not null default now(),
    updated_at         timestamptz not null default now()
);

create table detections (
    profile_id         uuid not null,
    rule_id            text not null references rules (id) on delete cascade,
    share              double precision not null,
    threshold_pct      double precision not null,
    samples_matched    bigint not null,
    samples_total      bigint not null,
    -- The heaviest matching stacks: [{"stack_id": uuid, "count": n}, ...].
    stacks             jsonb not null default '[]',
    first_evaluated_at timestamptz not null default now(),
    last_evaluated_at  timestamptz not null default now(),
    primary key (profile_id, rule_id)
);
create index detections_rule on detections (rule_id, last_evaluated_at desc);
