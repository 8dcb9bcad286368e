-- Services are defined once (name, target, owning team) and reused by
-- runs, schedules, rules and alerts. Agents report in their heartbeats
-- their host's labels (zone, version, operator labels, kernel, CPU), the
-- defined services with live processes on the host, and the digest of the
-- definitions they hold, so the API knows which hosts run a service and
-- which agents need the definitions again.
create table services (
    name        text primary key,
    target      jsonb not null,
    owner_team  text,
    description text,
    created_by  text not null,
    created_at  timestamptz not null default now(),
    updated_at  timestamptz not null default now()
);

alter table agents add column labels jsonb not null default '{}';
alter table agents add column services jsonb not null default '[]';
alter table agents add column services_digest text;
