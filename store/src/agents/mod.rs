//! Agent heartbeats and profile lifecycle events from `odp.events`.

mod clocks;
mod mysql;
mod postgres;

pub use clocks::{host_clocks, record_host_clocks, HostClock, CLOCK_CORRECTED_FROM_MS};

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use serde::Serialize;
use uuid::Uuid;

use crate::columns::List;
use crate::database::{Backend, Database};
use crate::profiles::{transition_in, ProfileStatus, Transition};
use crate::sql::{Arg, Sql, Tx};
use crate::Result;

/// An agent's latest heartbeat.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct AgentRow {
    pub host: String,
    pub agent_id: String,
    pub version: String,
    #[sqlx(try_from = "List<String>")]
    pub plugins: Vec<String>,
    #[sqlx(try_from = "List<Uuid>")]
    pub running_profiles: Vec<Uuid>,
    pub last_seen: DateTime<Utc>,
    /// Ms its host's clock runs ahead of the api-server's (negative:
    /// behind), when measured ([`HostClock`]).
    pub clock_offset_ms: Option<i64>,
}

/// Every agent that ever sent a heartbeat, most recently seen first.
pub async fn list_agents(db: impl Into<Database>) -> Result<Vec<AgentRow>> {
    Sql::new(
        "select a.host, a.agent_id, a.version, a.plugins, a.running_profiles, a.last_seen,
                c.offset_ms as clock_offset_ms
         from agents a left join host_clocks c on c.host = a.host
         order by a.last_seen desc",
    )
    .fetch_all(&db.into())
    .await
}

/// The hosts whose agent heard from last reported every `key`/`value`
/// pair of `labels` (their zone, their release, …), sorted.
pub async fn hosts_labelled(
    db: impl Into<Database>,
    labels: &[(String, String)],
) -> Result<Vec<String>> {
    let agents: Vec<(String, sqlx::types::Json<BTreeMap<String, String>>)> =
        Sql::new("select host, labels from agents order by host, last_seen desc")
            .fetch_all(&db.into())
            .await?;
    let mut hosts: Vec<String> = Vec::new();
    let mut seen: Option<String> = None;
    for (host, sqlx::types::Json(held)) in agents {
        if seen.as_ref() == Some(&host) {
            continue;
        }
        if labels
            .iter()
            .all(|(key, value)| held.get(key) == Some(value))
        {
            hosts.push(host.clone());
        }
        seen = Some(host);
    }
    Ok(hosts)
}

/// Whether an agent on `host` sent a heartbeat in the last `within_secs`.
pub async fn host_is_live(db: impl Into<Database>, host: &str, within_secs: i64) -> Result<bool> {
    let within = std::time::Duration::from_secs(within_secs.max(0).unsigned_abs());
    let live: Option<String> =
        Sql::new("select host from agents where host = $1 and last_seen > {now} - $2 limit 1")
            .bind(host)
            .bind(within)
            .fetch_value(&db.into())
            .await?;
    Ok(live.is_some())
}

/// Records one event: heartbeats refresh the agent's row; lifecycle events
/// are kept in `profile_events` and move the profile's status. Idempotent:
/// a redelivered lifecycle event finds the profile already moved.
pub async fn record_agent_event(db: impl Into<Database>, event: &AgentEvent) -> Result<()> {
    let db = db.into();
    let at = DateTime::<Utc>::from_timestamp_millis(event.at_ms).unwrap_or_else(Utc::now);
    match &event.kind {
        AgentEventKind::Heartbeat {
            version,
            running_profiles,
            plugins,
            labels,
            services,
            services_digest,
            ..
        } => {
            // The backend's upsert of the agents row, whose lists it
            // reads from JSON arrays.
            let upsert = match db.backend() {
                Backend::Postgres => postgres::RECORD_HEARTBEAT,
                Backend::MySql => mysql::RECORD_HEARTBEAT,
            };
            Sql::new(upsert)
                .bind(&event.host)
                .bind(&event.agent_id)
                .bind(version)
                .bind(Arg::json(plugins)?)
                .bind(Arg::json(running_profiles)?)
                .bind(at)
                .bind(Arg::json(labels)?)
                .bind(Arg::json(services)?)
                .bind(services_digest.as_deref())
                .execute(&db)
                .await?;
            Ok(())
        }
        kind => {
            let body = serde_json::to_value(event).expect("agent events serialize");
            let kind_name = body
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or("unknown")
                .to_owned();
            let change = lifecycle_change(kind);
            let lifecycle = Lifecycle {
                event,
                kind: &kind_name,
                at,
                body: &body,
                moved: change
                    .as_ref()
                    .map(|(id, status, reason, sampled)| Transition {
                        id: *id,
                        status: *status,
                        reason: reason.as_deref(),
                        event: *sampled,
                        agent_id: Some(&event.agent_id),
                    }),
            };
            record_lifecycle(&db, &lifecycle).await
        }
    }
}

/// Keeps the event and moves its profile, in one transaction.
async fn record_lifecycle(db: &Database, lifecycle: &Lifecycle<'_>) -> Result<()> {
    let event = lifecycle.event;
    let mut tx = db.begin().await?;
    Sql::new(
        "insert into profile_events (profile_id, host, agent_id, kind, \"at\", body)
         values ($1, $2, $3, $4, $5, $6)",
    )
    .bind(event.profile_id())
    .bind(&event.host)
    .bind(&event.agent_id)
    .bind(lifecycle.kind)
    .bind(lifecycle.at)
    .bind(Arg::json(lifecycle.body)?)
    .execute(&mut tx)
    .await?;
    if let Some(moved) = &lifecycle.moved {
        let acknowledged = transition_in(&mut tx, moved).await?;
        if let (true, Some(name)) = (acknowledged, process_name(&event.kind)) {
            name_by_process(&mut tx, moved.id, &name).await?;
        }
    }
    tx.commit().await
}

/// The name of the process a started profile samples: its executable's
/// file name, as service names are spelled (`[A-Za-z0-9._-]`).
fn process_name(kind: &AgentEventKind) -> Option<String> {
    let AgentEventKind::ProfileStarted { runtime, .. } = kind else {
        return None;
    };
    let path = &runtime.executable.as_ref()?.path;
    let file = path.rsplit('/').next().unwrap_or(path);
    let name: String = file
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(253)
        .collect();
    (!name.is_empty()).then_some(name)
}

/// A profile of a pid started without a service is of its host's name
/// until its agent says which process that is; then it is of the
/// process's name ("python3.11 on web-7", not "web-7 on web-7").
async fn name_by_process(tx: &mut Tx, profile_id: Uuid, name: &str) -> Result<()> {
    let row: Option<(sqlx::types::Json<odp_core::Target>, String, String)> =
        Sql::by_id("target, service, host", "profiles", profile_id)
            .fetch_optional(&mut *tx)
            .await?;
    if let Some((sqlx::types::Json(odp_core::Target::Pid(_)), service, host)) = row {
        if service == host {
            Sql::new("update profiles set service = $2 where id = $1")
                .bind(profile_id)
                .bind(name)
                .execute(&mut *tx)
                .await?;
        }
    }
    Ok(())
}

/// A lifecycle event, kept in `profile_events`, and the move of its
/// profile, made in the same transaction.
struct Lifecycle<'a> {
    event: &'a AgentEvent,
    /// The event's `type`.
    kind: &'a str,
    at: DateTime<Utc>,
    body: &'a serde_json::Value,
    moved: Option<Transition<'a>>,
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
        // Kept as the record of what the agent saw; the api-server acts
        // on it (it follows the events topic itself).
        AgentEventKind::TriggerFired { .. } => None,
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
