-- Hosts' clock offsets (issue 29): how far ahead of the api-server each
-- host's clock runs, in ms (negative: behind), as measured from its
-- agent's heartbeats when they arrive. The pipeline moves the windows and
-- events of a host whose clock is off by a window (10 s) or more by it, so a
-- skewed host's samples land at the time they were taken.
create table host_clocks (
    host        text primary key,
    offset_ms   bigint not null,
    measured_at timestamptz not null
);
