//! Agents in MySQL and MariaDB: the agents row's lists are JSON arrays
//! (uuids hyphenated), `excluded` is `values()`.

/// Records a heartbeat, binding as Postgres' statement does. Assignments
/// run left to right and see earlier ones, so `last_seen` must not be read
/// after it is set: it is set last. A heartbeat older than the row's
/// (redelivered late) keeps the row's labels and services.
pub(super) const RECORD_HEARTBEAT: &str =
    "insert into agents (host, agent_id, version, plugins, running_profiles, last_seen,
                         labels, services, services_digest)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     on duplicate key update
         version = values(version), plugins = values(plugins),
         running_profiles = values(running_profiles),
         labels = if(values(last_seen) >= last_seen, values(labels), labels),
         services = if(values(last_seen) >= last_seen, values(services), services),
         services_digest = if(values(last_seen) >= last_seen,
                              values(services_digest), services_digest),
         last_seen = greatest(last_seen, values(last_seen))";

/// Records a host's clock offset, binding as Postgres' statement does.
pub(super) const RECORD_CLOCK: &str = "insert into host_clocks (host, offset_ms, measured_at)
     values ($1, $2, {now})
     on duplicate key update
         offset_ms = values(offset_ms), measured_at = values(measured_at)";
