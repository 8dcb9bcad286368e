-- What each window's target earned and what the window lacks, by why
-- (odp_core::coverage): expected_samples is the target's CPU time in the
-- window times the rate, null when the agent could not tell (the event
-- is not CPU time, the plugin's samples do not follow it, or an older
-- agent). The lost_* columns count samples the target earned that the
-- window does not hold.
alter table snapshots add column expected_samples bigint check (expected_samples >= 0);
alter table snapshots add column lost_overflow bigint not null default 0 check (lost_overflow >= 0);
alter table snapshots add column lost_throttled bigint not null default 0 check (lost_throttled >= 0);
alter table snapshots add column lost_paused bigint not null default 0 check (lost_paused >= 0);
alter table snapshots add column lost_undiscovered bigint not null default 0 check (lost_undiscovered >= 0);
alter table snapshots add column lost_transport bigint not null default 0 check (lost_transport >= 0);
