//! Runs: one on-demand question about a service, answered by one member
//! profile per chosen host (`profiles.run_id`), ended by its members, on
//! request, or by its stop rule.

use chrono::{DateTime, Utc};
use serde::{de::DeserializeOwned, Serialize};
use uuid::Uuid;

use crate::database::repository;
use crate::profiles::ProfileRow;
use crate::sql::{Arg, Sql, Table};
use crate::{written, Result, StoreError};

mod detections;

pub use detections::RunIssue;

/// How a run ended, or that it has not yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    Running,
    /// Every member ended by itself (its duration, or its target exited).
    Finished,
    /// Stopped on request.
    Stopped,
    /// Its stop rule was met: every member was stopped then.
    Precise,
    /// Every member ended, and some chosen hosts have no profile to show:
    /// their member was not started, failed or expired (`run_hosts` and
    /// the members say why). The rest of the run is kept.
    Partial,
}

crate::columns::read_as_text!(RunState);

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Finished => "finished",
            RunState::Stopped => "stopped",
            RunState::Precise => "precise",
            RunState::Partial => "partial",
        }
    }
}

/// A run state no version of ODP wrote.
#[derive(Debug, thiserror::Error)]
#[error("unknown run state {0:?}")]
pub struct UnknownRunState(String);

impl std::str::FromStr for RunState {
    type Err = UnknownRunState;

    fn from_str(text: &str) -> std::result::Result<RunState, UnknownRunState> {
        [
            RunState::Running,
            RunState::Finished,
            RunState::Stopped,
            RunState::Precise,
            RunState::Partial,
        ]
        .into_iter()
        .find(|state| state.as_str() == text)
        .ok_or_else(|| UnknownRunState(text.to_owned()))
    }
}

/// A run to record. `selection`, `chosen` and `stop_rule` are kept as the
/// caller's types serialize them (the request, the selection's outcome).
#[derive(Debug, Clone)]
pub struct NewRun<S, C, R> {
    pub id: Uuid,
    pub service: String,
    pub selection: S,
    pub chosen: C,
    pub stop_rule: Option<R>,
    pub max_duration_ms: i64,
    pub requested_by: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RunRow {
    pub id: Uuid,
    pub service: String,
    pub selection: sqlx::types::Json<serde_json::Value>,
    pub chosen: sqlx::types::Json<serde_json::Value>,
    pub stop_rule: Option<sqlx::types::Json<serde_json::Value>>,
    pub max_duration_ms: i64,
    #[sqlx(try_from = "crate::columns::Text<RunState>")]
    pub status: RunState,
    pub status_reason: Option<String>,
    pub reached_epsilon: Option<f64>,
    pub samples_used: Option<i64>,
    pub requested_by: String,
    pub created_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    /// When the rules judged the ended run ([`Runs::save_detections`]).
    pub detected_at: Option<DateTime<Utc>>,
}

impl RunRow {
    /// `field` (`selection`, `chosen`, `stop_rule`) read back as `T`.
    pub fn decode<T: DeserializeOwned>(value: &serde_json::Value, field: &str) -> Result<T> {
        serde_json::from_value(value.clone())
            .map_err(|e| StoreError::Corrupt(format!("run {field}: {e}")))
    }
}

/// How starting one chosen host's member went: started (its profile), or
/// not, and why (the target already had a live profile: `blocked_by`; the
/// broker refused the command; ...).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RunHost {
    pub host: String,
    /// The member profile, when one was recorded (a start the broker
    /// refused records a failed one).
    pub profile_id: Option<Uuid>,
    pub started: bool,
    pub reason: Option<String>,
    /// The live profile of the same target that kept the member from
    /// starting.
    pub blocked_by: Option<Uuid>,
}

/// A recorded [`RunHost`].
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RunHostRow {
    pub run_id: Uuid,
    #[sqlx(flatten)]
    pub outcome: RunHost,
}

/// How a run ends: its state, why, and what its stop rule reached.
#[derive(Debug, Clone)]
pub struct RunEnd<'a> {
    pub state: RunState,
    pub reason: &'a str,
    pub reached_epsilon: Option<f64>,
    pub samples_used: Option<i64>,
}

pub(crate) const RUNS: Table = Table {
    name: "runs",
    columns: "id, service, selection, chosen, stop_rule, max_duration_ms, status, status_reason, \
              reached_epsilon, samples_used, requested_by, created_at, ended_at, detected_at",
};

repository! {
    /// Runs, in whichever database the store runs on.
    Runs
}

impl Runs {
    /// Records a running run (its members are inserted after it, each
    /// naming it).
    pub async fn create<S: Serialize, C: Serialize, R: Serialize>(
        &self,
        run: &NewRun<S, C, R>,
    ) -> Result<RunRow> {
        let stop_rule = run.stop_rule.as_ref().map(Arg::json).transpose()?;
        Sql::new(
            "insert into runs (id, service, selection, chosen, stop_rule, max_duration_ms,
                               status, requested_by)
             values ($1, $2, $3, $4, $5, $6, 'running', $7)",
        )
        .bind(run.id)
        .bind(&run.service)
        .bind(Arg::json(&run.selection)?)
        .bind(Arg::json(&run.chosen)?)
        .bind(stop_rule.unwrap_or(Arg::Json(None)))
        .bind(run.max_duration_ms)
        .bind(&run.requested_by)
        .execute(&self.db)
        .await?;
        written(self.get(run.id).await?, || format!("run {}", run.id))
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<RunRow>> {
        RUNS.get(&self.db, id).await
    }

    /// The newest runs first, of `service` when given.
    pub async fn list(&self, service: Option<&str>, limit: i64) -> Result<Vec<RunRow>> {
        RUNS.newest(
            &self.db,
            "created_at",
            ("service", service),
            limit.clamp(1, 500),
        )
        .await
    }

    /// The runs still running, oldest first.
    pub async fn running(&self) -> Result<Vec<RunRow>> {
        RUNS.list(&self.db, "where status = 'running' order by created_at, id")
            .await
    }

    /// The run's member profiles, by host.
    pub async fn members(&self, id: Uuid) -> Result<Vec<ProfileRow>> {
        Sql::new("select * from profiles where run_id = $1 order by host, created_at")
            .bind(id)
            .fetch_all(&self.db)
            .await
    }

    /// The member profiles of each of `ids` (a page of runs), by run and
    /// host.
    pub async fn members_of(&self, ids: &[Uuid]) -> Result<Vec<ProfileRow>> {
        Sql::new("select * from profiles where run_id in $1 order by run_id, host, created_at")
            .bind_list(ids.iter().copied())
            .fetch_all(&self.db)
            .await
    }

    /// Records how starting one of the run's chosen hosts went; a host
    /// recorded before keeps its first record.
    pub async fn record_host(&self, run: Uuid, outcome: &RunHost) -> Result<()> {
        let inserted = Sql::new(
            "insert into run_hosts (run_id, host, profile_id, started, reason, blocked_by)
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(run)
        .bind(&outcome.host)
        .bind(outcome.profile_id)
        .bind(outcome.started)
        .bind(outcome.reason.as_deref())
        .bind(outcome.blocked_by)
        .execute(&self.db)
        .await;
        match inserted {
            Err(e) if e.violation() == Some(crate::Violation::Unique) => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// How each chosen host of the runs `ids` started, by run and host.
    pub async fn hosts_of(&self, ids: &[Uuid]) -> Result<Vec<RunHostRow>> {
        Sql::new(
            "select run_id, host, profile_id, started, reason, blocked_by from run_hosts
             where run_id in $1 order by run_id, host",
        )
        .bind_list(ids.iter().copied())
        .fetch_all(&self.db)
        .await
    }

    /// The runs of `requested_by` still running, oldest first: a
    /// schedule's previous run, a user's live runs.
    pub async fn running_for(&self, requested_by: &str) -> Result<Vec<RunRow>> {
        RUNS.select(
            "where status = 'running' and requested_by = $1
             order by created_at, id",
        )
        .bind(requested_by)
        .fetch_all(&self.db)
        .await
    }

    /// How many live (not ended) member profiles the running runs of
    /// `requested_by` have: the hosts they profile now.
    pub async fn live_members_for(&self, requested_by: &str) -> Result<i64> {
        let count: Option<i64> = Sql::new(
            "select count(*) from profiles p join runs r on p.run_id = r.id
             where r.status = 'running' and r.requested_by = $1
               and p.status not in ('finished', 'stopped', 'failed', 'expired')",
        )
        .bind(requested_by)
        .fetch_value(&self.db)
        .await?;
        Ok(count.unwrap_or(0))
    }

    /// Records how a running run ended; `false` if it had ended already
    /// (the first end wins: a stop and the stop rule may race).
    pub async fn end(&self, id: Uuid, end: &RunEnd<'_>) -> Result<bool> {
        let ended = Sql::new(
            "update runs set status = $2, status_reason = $3,
                 reached_epsilon = coalesce($4, reached_epsilon),
                 samples_used = coalesce($5, samples_used), ended_at = {now}
             where id = $1 and status = 'running'",
        )
        .bind(id)
        .bind(end.state.as_str())
        .bind(end.reason)
        .bind(end.reached_epsilon)
        .bind(end.samples_used)
        .execute(&self.db)
        .await?;
        Ok(ended == 1)
    }

    /// Records the precision a running run has reached so far.
    pub async fn progress(
        &self,
        id: Uuid,
        reached_epsilon: Option<f64>,
        samples: i64,
    ) -> Result<()> {
        Sql::new(
            "update runs set reached_epsilon = $2, samples_used = $3
             where id = $1 and status = 'running'",
        )
        .bind(id)
        .bind(reached_epsilon)
        .bind(samples)
        .execute(&self.db)
        .await?;
        Ok(())
    }
}
