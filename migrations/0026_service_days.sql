-- Service days (issue 29): a service's hour rollups of one UTC day in one
-- block, each host's windows of the day merged into one (per event and
-- period), so that a read of weeks decodes a few windows per host and day
-- instead of one per hour. Built from the hours once a day has settled,
-- and read only while it still matches them: `hours`, `samples` and
-- `built_at` are compared with the day's hour rollups (count, sum, and
-- latest write), so a late window, a retention pass or a downsampling
-- that changes an hour makes the day stale until it is rebuilt.
create table service_days (
    service  text not null,
    day      timestamptz not null,
    hours    integer not null check (hours > 0),
    windows  integer not null check (windows >= 0),
    samples  bigint not null check (samples >= 0),
    block    bytea not null,
    built_at timestamptz not null,
    primary key (service, day)
);
