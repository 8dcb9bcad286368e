-- Requests other than profile starts: deploying and undeploying agents and
-- stopping profiles. Each is stored with who asked, when, and how it went,
-- like profile requests, so the control plane's history is auditable.

create table control_requests (
    id            uuid primary key,
    kind          text not null check (kind in ('deploy', 'undeploy', 'stop')),
    host          text not null,
    -- The profile a stop is about.
    profile_id    uuid,
    -- undeploy: now | drain.
    mode          text,
    requested_by  text not null,
    status        text not null check (status in
                    ('requested', 'dispatched', 'running', 'finished', 'failed')),
    status_reason text,
    -- The signed command sent for it, when one was.
    command_id    uuid,
    created_at    timestamptz not null default now(),
    updated_at    timestamptz not null default now()
);
create index control_requests_created on control_requests (created_at desc);
create index control_requests_open on control_requests (kind, host)
    where status in ('requested', 'dispatched', 'running');

-- One deploy in flight per host: a second request joins the first rather
-- than running the deployer twice.
create unique index control_requests_one_open_deploy on control_requests (host)
    where kind = 'deploy' and status in ('requested', 'dispatched', 'running');
