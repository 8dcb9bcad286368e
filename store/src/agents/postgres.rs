//! Agents in Postgres: text and uuid arrays, `on conflict`.

use sqlx::types::Json;
use sqlx::PgPool;

use super::{AgentRow, Heartbeat};
use crate::Result;

pub(super) async fn list_agents(pool: &PgPool) -> Result<Vec<AgentRow>> {
    Ok(sqlx::query_as::<_, AgentRow>(
        "select host, agent_id, version, plugins, running_profiles, last_seen
         from agents order by last_seen desc",
    )
    .fetch_all(pool)
    .await?)
}

pub(super) async fn record_heartbeat(pool: &PgPool, beat: &Heartbeat<'_>) -> Result<()> {
    sqlx::query(
        "insert into agents (host, agent_id, version, plugins, running_profiles, last_seen,
                             labels, services, services_digest)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         on conflict (host, agent_id) do update set
             version = excluded.version, plugins = excluded.plugins,
             running_profiles = excluded.running_profiles,
             labels = case when excluded.last_seen >= agents.last_seen
                           then excluded.labels else agents.labels end,
             services = case when excluded.last_seen >= agents.last_seen
                             then excluded.services else agents.services end,
             services_digest = case when excluded.last_seen >= agents.last_seen
                                    then excluded.services_digest else agents.services_digest end,
             last_seen = greatest(agents.last_seen, excluded.last_seen)",
    )
    .bind(beat.host)
    .bind(beat.agent_id)
    .bind(beat.version)
    .bind(beat.plugins)
    .bind(beat.running_profiles)
    .bind(beat.at)
    .bind(Json(beat.labels))
    .bind(Json(beat.services))
    .bind(beat.services_digest)
    .execute(pool)
    .await?;
    Ok(())
}
