//! Agent heartbeats and profile lifecycle events from `odp.events`.

use chrono::{DateTime, Utc};
use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use crate::profiles::{transition_in, ProfileStatus, Transition};
use crate::Result;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct AgentRow {
    pub host: String,
    pub agent_id: String,
    pub version: String,
    pub plugins: Vec<String>,
    pub running_profiles: Vec<Uuid>,
    pub last_seen: DateTime<Utc>,
}

/// Every agent that ever sent a heartbeat, most recently seen first.
pub async fn list_agents(pool: &PgPool) -> Result<Vec<AgentRow>> {
    Ok(sqlx::query_as::<_, AgentRow>(
        "select host, agent_id, version, plugins, running_profiles, last_seen
         from agents order by last_seen desc",
    )
    .fetch_all(pool)
    .await?)
}

/// Whether an agent on `host` sent a heartbeat in the last `within_secs`.
pub async fn host_is_live(pool: &PgPool, host: &str, within_secs: i64) -> Result<bool> {
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

/// Records one event: heartbeats refresh the agent's row; lifecycle events
/// are kept in `profile_events` and move the profile's status. Idempotent:
/// a redelivered lifecycle event finds the profile already moved.
pub async fn record_agent_event(pool: &PgPool, event: &AgentEvent) -> Result<()> {
    let at = DateTime::<Utc>::from_timestamp_millis(event.at_ms).unwrap_or_else(Utc::now);
    let mut tx = pool.begin().await?;
    match &event.kind {
        AgentEventKind::Heartbeat {
            version,
            running_profiles,
            plugins,
            ..
        } => {
            sqlx::query(
                "insert into agents (host, agent_id, version, plugins, running_profiles, last_seen)
                 values ($1, $2, $3, $4, $5, $6)
                 on conflict (host, agent_id) do update set
                     version = excluded.version, plugins = excluded.plugins,
                     running_profiles = excluded.running_profiles,
                     last_seen = greatest(agents.last_seen, excluded.last_seen)",
            )
            .bind(&event.host)
            .bind(&event.agent_id)
            .bind(version)
            .bind(plugins)
            .bind(running_profiles)
            .bind(at)
            .execute(&mut *tx)
            .await?;
        }
        kind => {
            let body = serde_json::to_value(event).expect("agent events serialize");
            let type_name = body
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or("unknown")
                .to_owned();
            sqlx::query(
                "insert into profile_events (profile_id, host, agent_id, kind, at, body)
                 values ($1, $2, $3, $4, $5, $6)",
            )
            .bind(event.profile_id())
            .bind(&event.host)
            .bind(&event.agent_id)
            .bind(&type_name)
            .bind(at)
            .bind(&body)
            .execute(&mut *tx)
            .await?;
            if let Some((profile_id, status, reason, sampled_event)) = lifecycle_change(kind) {
                let moved = Transition {
                    id: profile_id,
                    status,
                    reason: reason.as_deref(),
                    event: sampled_event,
                    agent_id: Some(&event.agent_id),
                };
                transition_in(&mut *tx, &moved).await?;
            }
        }
    }
    tx.commit().await?;
    Ok(())
}

type Change = (Uuid, ProfileStatus, Option<String>, Option<&'static str>);

/// What a lifecycle event does to its profile's status.
fn lifecycle_change(kind: &AgentEventKind) -> Option<Change> {
    match kind {
        AgentEventKind::Heartbeat { .. } => None,
        AgentEventKind::ProfileStarted {
            profile_id, event, ..
        } => Some((
            *profile_id,
            ProfileStatus::Running,
            None,
            Some(event.as_str()),
        )),
        AgentEventKind::ProfileFinished {
            profile_id, reason, ..
        } => {
            let (status, text) = match reason {
                FinishReason::DurationElapsed => (ProfileStatus::Finished, "duration elapsed"),
                FinishReason::Stopped => (ProfileStatus::Stopped, "stopped on request"),
                FinishReason::TargetExited => (ProfileStatus::Finished, "target exited"),
            };
            Some((*profile_id, status, Some(text.to_owned()), None))
        }
        AgentEventKind::ProfileFailed { profile_id, error } => Some((
            *profile_id,
            ProfileStatus::Failed,
            Some(error.clone()),
            None,
        )),
        // A rejected command's claims are unverified (it may be forged), so
        // its profile id must not move a real profile; the event is kept
        // for the record and an unacknowledged request expires instead.
        AgentEventKind::CommandRejected { .. } => None,
        // Kept in `profile_events` as the profile's cost timeline.
        AgentEventKind::Cost(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_maps_finish_reasons() {
        let id = Uuid::new_v4();
        let change = lifecycle_change(&AgentEventKind::ProfileFinished {
            profile_id: id,
            reason: FinishReason::Stopped,
            snapshots: 1,
            samples: 2,
            spooled_snapshots: 0,
            spooled_samples: 0,
        })
        .unwrap();
        assert_eq!((change.0, change.1), (id, ProfileStatus::Stopped));
        let forged = AgentEventKind::CommandRejected {
            command_id: None,
            profile_id: Some(id),
            reason: "bad signature".into(),
        };
        assert!(lifecycle_change(&forged).is_none());
    }
}
