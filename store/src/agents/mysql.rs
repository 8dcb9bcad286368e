//! Agents in MySQL and MariaDB: the agents row's
//! lists are JSON arrays (uuids hyphenated), `excluded` is `values()`.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::MySqlPool;
use uuid::Uuid;

use super::{AgentRow, Heartbeat};
use crate::Result;

pub(super) async fn list_agents(pool: &MySqlPool) -> Result<Vec<AgentRow>> {
    let rows = sqlx::query_as::<_, MySqlAgentRow>(
        "select host, agent_id, version, plugins, running_profiles, last_seen
         from agents order by last_seen desc",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(AgentRow::from).collect())
}

/// An agents row as MySQL returns it: the lists as JSON.
#[derive(sqlx::FromRow)]
struct MySqlAgentRow {
    host: String,
    agent_id: String,
    version: String,
    plugins: Json<Vec<String>>,
    running_profiles: Json<Vec<Uuid>>,
    last_seen: DateTime<Utc>,
}

impl From<MySqlAgentRow> for AgentRow {
    fn from(row: MySqlAgentRow) -> Self {
        AgentRow {
            host: row.host,
            agent_id: row.agent_id,
            version: row.version,
            plugins: row.plugins.0,
            running_profiles: row.running_profiles.0,
            last_seen: row.last_seen,
        }
    }
}

pub(super) async fn record_heartbeat(pool: &MySqlPool, beat: &Heartbeat<'_>) -> Result<()> {
    // Assignments run left to right and see earlier ones, so `last_seen`
    // must not be read after it is set: it is set last. A heartbeat older
    // than the row's (redelivered late) keeps the row's labels and services.
    sqlx::query(
        "insert into agents (host, agent_id, version, plugins, running_profiles, last_seen,
                             labels, services, services_digest)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?)
         on duplicate key update
             version = values(version), plugins = values(plugins),
             running_profiles = values(running_profiles),
             labels = if(values(last_seen) >= last_seen, values(labels), labels),
             services = if(values(last_seen) >= last_seen, values(services), services),
             services_digest = if(values(last_seen) >= last_seen,
                                  values(services_digest), services_digest),
             last_seen = greatest(last_seen, values(last_seen))",
    )
    .bind(beat.host)
    .bind(beat.agent_id)
    .bind(beat.version)
    .bind(Json(beat.plugins))
    .bind(Json(beat.running_profiles))
    .bind(beat.at)
    .bind(Json(beat.labels))
    .bind(Json(beat.services))
    .bind(beat.services_digest)
    .execute(pool)
    .await?;
    Ok(())
}
