-- A run is one on-demand question about a service: the hosts chosen from
-- those running it (all, K or P%, stratified by labels, from a seed),
-- one member profile per chosen host, and an optional stop rule that ends
-- every member once the top shares of the aggregate are known well enough.
create table runs (
    id              uuid primary key,
    service         text not null,
    -- What was asked: the selection, stratify_by, seed, strict.
    selection       jsonb not null,
    -- What it came to: the chosen hosts, how many were eligible, strata.
    chosen          jsonb not null,
    stop_rule       jsonb,
    max_duration_ms bigint not null,
    -- running, then finished (every member ended by itself), stopped (on
    -- request) or precise (its stop rule was met).
    status          text not null,
    status_reason   text,
    reached_epsilon double precision,
    samples_used    bigint,
    requested_by    text not null,
    created_at      timestamptz not null default now(),
    ended_at        timestamptz
);
create index runs_created on runs (created_at desc);

alter table profiles add column run_id uuid references runs (id) on delete set null;
create index profiles_run on profiles (run_id) where run_id is not null;
