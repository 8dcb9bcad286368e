-- ODP schema, version 1.
-- Frames and stacks are content-addressed (XXH3-128 of their contents, see
-- odp_core::hash) so each is stored once however often it is reported.

create table profiles (
    id            uuid primary key,
    host          text not null,
    target        jsonb not null,
    mode          text not null default 'cpu',
    duration_ms   bigint not null,
    frequency_hz  integer not null,
    status        text not null check (status in
                    ('requested', 'dispatched', 'running', 'finished', 'stopped', 'failed', 'expired')),
    status_reason text,
    requested_by  text not null,
    event         text,
    agent_id      text,
    created_at    timestamptz not null default now(),
    updated_at    timestamptz not null default now(),
    started_at    timestamptz,
    finished_at   timestamptz
);
create index profiles_host_status on profiles (host, status);
create index profiles_created_at on profiles (created_at desc);

create table frames (
    id       uuid primary key,
    function text not null,
    module   text not null,
    file     text,
    line     integer
);

create table stacks (
    id        uuid primary key,
    -- Frame ids, root first, as concatenated 16-byte values: half the size
    -- of a uuid[] and simple to bulk-insert.
    frame_ids bytea not null check (length(frame_ids) % 16 = 0 and length(frame_ids) > 0)
);

create table snapshots (
    id           bigserial primary key,
    profile_id   uuid not null,
    agent_id     text not null,
    sequence     bigint not null,
    host         text not null,
    window_start timestamptz not null,
    window_end   timestamptz not null,
    event        text not null,
    period       bigint not null,
    frequency_hz integer not null,
    samples      bigint not null,
    ingested_at  timestamptz not null default now(),
    unique (agent_id, profile_id, sequence)
);
create index snapshots_profile on snapshots (profile_id, window_start);

create table samples (
    snapshot_id bigint not null references snapshots (id) on delete cascade,
    stack_id    uuid not null references stacks (id),
    tid         integer not null,
    count       bigint not null check (count > 0),
    primary key (snapshot_id, stack_id, tid)
);

create table snapshot_threads (
    snapshot_id bigint not null references snapshots (id) on delete cascade,
    tid         integer not null,
    name        text not null,
    primary key (snapshot_id, tid)
);

create table agents (
    host             text not null,
    agent_id         text not null,
    version          text not null,
    plugins          text[] not null default '{}',
    running_profiles uuid[] not null default '{}',
    last_seen        timestamptz not null,
    primary key (host, agent_id)
);

create table profile_events (
    id         bigserial primary key,
    profile_id uuid,
    host       text not null,
    agent_id   text not null,
    kind       text not null,
    at         timestamptz not null,
    body       jsonb not null
);
create index profile_events_profile on profile_events (profile_id, at);
