-- Profile requests carry the service they profile (what authorization and
-- detection thresholds are scoped by) and an optional client idempotency
-- key; at most one live profile per (host, target, mode).

alter table profiles add column service text not null default '';
alter table profiles add column idempotency_key text;

create unique index profiles_idempotency
    on profiles (requested_by, idempotency_key)
    where idempotency_key is not null;

create unique index profiles_one_live_per_target
    on profiles (host, mode, target)
    where status in ('requested', 'dispatched', 'running');

create index profiles_service_created on profiles (service, created_at desc);
