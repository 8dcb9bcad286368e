-- Detection on a run (issue 26): the rules judge the merged samples of a
-- run's members once it ended, and a finding raises one alert per run and
-- channel, naming the hosts where its rule measures most. The members'
-- own detections are still stored, without alerts of their own for rules
-- the run judges.
create table run_detections (
    run_id          uuid not null references runs (id) on delete cascade,
    rule_id         text not null references rules (id) on delete cascade,
    share           double precision not null,
    threshold_pct   double precision not null,
    samples_matched bigint not null,
    samples_total   bigint not null,
    stacks          jsonb not null default '[]',
    detail          jsonb not null default 'null',
    -- The hosts where the rule measures most, highest first:
    -- [{"host", "profile_id", "share", "samples"}, ...].
    hosts           jsonb not null default '[]',
    evaluated_at    timestamptz not null default now(),
    primary key (run_id, rule_id)
);

-- When the run's detection ran: an ended run without it is due.
alter table runs add column detected_at timestamptz;
-- Runs that ended before this version raise no alerts now.
update runs set detected_at = ended_at where ended_at is not null;
create index runs_awaiting_detection on runs (ended_at)
    where ended_at is not null and detected_at is null;

-- A run's alert is queued under the profile of the host where its rule
-- measures most (the outbox's key stays one per profile, rule and
-- channel), with the run and the hosts beside it.
alter table alert_deliveries add column run_id uuid;
alter table alert_deliveries add column hosts jsonb not null default '[]';
