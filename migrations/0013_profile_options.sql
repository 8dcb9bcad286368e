-- What a start asked the agent for beyond target, duration and frequency:
-- the plugin, the event (which also decides the profile's `mode`, so a CPU
-- and an allocation profile of one target can run side by side) and the
-- cost control (FSP share, FDA, duty cycle, overhead budget), as the
-- signed start command carries them. Schedules keep theirs for each run.

alter table profiles add column options jsonb not null default '{}';
alter table schedules add column options jsonb not null default '{}';
