//! Heartbeats and lifecycle events in Postgres.

use sqlx::PgPool;

use super::{AgentRow, Heartbeat, Lifecycle};
use crate::profiles::transition_in;
use crate::Result;

pub(super) async fn list_agents(pool: &PgPool) -> Result<Vec<AgentRow>> {
    Ok(sqlx::query_as::<_, AgentRow>(
        "select host, agent_id, version, plugins, running_profiles, last_seen
         from agents order by last_seen desc",
    )
    .fetch_all(pool)
    .await?)
}

pub(super) async fn host_is_live(pool: &PgPool, host: &str, within_secs: i64) -> Result<bool> {
    let (live,): (bool,) = sqlx::query_as(
        "select exists (select 1 from agents
                        where host = $1 and last_seen > now() - make_interval(secs => $2))",
    )
    .bind(host)
    .bind(within_secs as f64)
    .fetch_one(pool)
    .await?;
    Ok(live)
}

pub(super) async fn record_heartbeat(pool: &PgPool, beat: &Heartbeat<'_>) -> Result<()> {
    sqlx::query(
        "insert into agents (host, agent_id, version, plugins, running_profiles, last_seen)
         values ($1, $2, $3, $4, $5, $6)
         on conflict (host, agent_id) do update set
             version = excluded.version, plugins = excluded.plugins,
             running_profiles = excluded.running_profiles,
             last_seen = greatest(agents.last_seen, excluded.last_seen)",
    )
    .bind(beat.host)
    .bind(beat.agent_id)
    .bind(beat.version)
    .bind(beat.plugins)
    .bind(beat.running_profiles)
    .bind(beat.at)
    .execute(pool)
    .await?;
    Ok(())
}

pub(super) async fn record_lifecycle(pool: &PgPool, lifecycle: &Lifecycle<'_>) -> Result<()> {
    let event = lifecycle.event;
    let mut tx = pool.begin().await?;
    sqlx::query(
        "insert into profile_events (profile_id, host, agent_id, kind, at, body)
         values ($1, $2, $3, $4, $5, $6)",
    )
    .bind(event.profile_id())
    .bind(&event.host)
    .bind(&event.agent_id)
    .bind(lifecycle.kind)
    .bind(lifecycle.at)
    .bind(lifecycle.body)
    .execute(&mut *tx)
    .await?;
    if let Some(moved) = &lifecycle.moved {
        transition_in(&mut *tx, moved).await?;
    }
    tx.commit().await?;
    Ok(())
}
