//! Agents in Postgres: the lists are `text[]` and `uuid[]` arrays, read
//! from the JSON arrays bound; the upsert is `on conflict`.

/// Records a heartbeat: binds host, agent id, version, plugins and running
/// profiles (JSON arrays), when, labels and services (JSON), and the
/// services' digest. A heartbeat older than the row's (redelivered late)
/// keeps the row's labels and services.
pub(super) const RECORD_HEARTBEAT: &str =
    "insert into agents (host, agent_id, version, plugins, running_profiles, last_seen,
                         labels, services, services_digest)
     values ($1, $2, $3,
             array(select p from jsonb_array_elements_text($4) with ordinality as t(p, n)
                   order by n),
             array(select r::uuid from jsonb_array_elements_text($5) with ordinality as t(r, n)
                   order by n),
             $6, $7, $8, $9)
     on conflict (host, agent_id) do update set
         version = excluded.version, plugins = excluded.plugins,
         running_profiles = excluded.running_profiles,
         labels = case when excluded.last_seen >= agents.last_seen
                       then excluded.labels else agents.labels end,
         services = case when excluded.last_seen >= agents.last_seen
                         then excluded.services else agents.services end,
         services_digest = case when excluded.last_seen >= agents.last_seen
                                then excluded.services_digest else agents.services_digest end,
         last_seen = greatest(agents.last_seen, excluded.last_seen)";

/// Records a host's clock offset: binds host and offset (ms).
pub(super) const RECORD_CLOCK: &str = "insert into host_clocks (host, offset_ms, measured_at)
     values ($1, $2, {now})
     on conflict (host) do update set
         offset_ms = excluded.offset_ms, measured_at = excluded.measured_at";
