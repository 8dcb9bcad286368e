//! Continuous profiles: each service's configuration (rate, budget, hosts,
//! on or off), the assignments the api-server syncs to agents, and the
//! hourly segments the pipeline opens as profiles when their first window
//! arrives ([`odp_core::continuous`]).

use chrono::{DateTime, TimeZone, Utc};
use odp_core::continuous::{ContinuousAssignment, SEGMENT_SECS};
use odp_core::cost::StartOptions;
use odp_core::domain::ProfileMode;
use odp_core::EventKind;
use uuid::Uuid;

use crate::columns::{host_list, whole, Text};
use crate::configurations::{Configuration, Configurations};
use crate::database::Database;
use crate::profiles::Labels;
use crate::sql::{Arg, Sql, Table};
use crate::{conflict_if_taken, written, Result, StoreError, Violation};

/// The label every segment's profile carries: its configuration's id, so
/// reads can select a continuous profile's segments.
pub const CONTINUOUS_LABEL: &str = "continuous";

/// The host label naming the release a host runs (`--label version=2.4.1`
/// on its agent, by convention). A segment keeps its host's, so it can be
/// compared with the release before ([`crate::segment_baselines`]).
pub const RELEASE_LABEL: &str = "version";

/// A continuous configuration as the store keeps it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ContinuousRow {
    pub id: Uuid,
    pub service: String,
    #[sqlx(try_from = "Text<EventKind>")]
    pub event: EventKind,
    pub frequency_hz: i32,
    pub cpu_budget_ppm: i32,
    /// The hosts that profile it, sorted; `None`: every host running it.
    #[sqlx(json)]
    pub hosts: Option<Vec<String>>,
    pub enabled: bool,
    pub created_by: String,
    pub updated_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Configuration for ContinuousRow {
    type Assignment = ContinuousAssignment;

    fn assignment(&self) -> ContinuousAssignment {
        ContinuousAssignment {
            id: self.id,
            service: self.service.clone(),
            event: self.event,
            frequency_hz: self.frequency_hz.unsigned_abs(),
            cpu_budget_ppm: self.cpu_budget_ppm.unsigned_abs(),
            hosts: self.hosts.clone(),
        }
    }
}

/// A configuration to create; the API checks the values against the
/// operator's limits before they get here.
#[derive(Debug, Clone)]
pub struct NewContinuous {
    pub service: String,
    pub event: EventKind,
    pub frequency_hz: u32,
    pub cpu_budget_ppm: u32,
    pub hosts: Option<Vec<String>>,
    pub created_by: String,
}

/// A change: what is `Some` is replaced (`hosts: Some(None)` is every
/// host).
#[derive(Debug, Clone, Default)]
pub struct ContinuousPatch {
    pub event: Option<EventKind>,
    pub frequency_hz: Option<u32>,
    pub cpu_budget_ppm: Option<u32>,
    pub hosts: Option<Option<Vec<String>>>,
    pub enabled: Option<bool>,
}

/// A segment the pipeline opens: the configuration's, on `host`, from
/// `segment_start_s`, sent by `agent_id`.
#[derive(Debug, Clone)]
pub struct Segment<'a> {
    pub profile_id: Uuid,
    pub assignment: &'a ContinuousAssignment,
    pub host: &'a str,
    pub segment_start_s: i64,
    pub agent_id: &'a str,
}

const CONTINUOUS: Table = Table {
    name: "continuous_profiles",
    columns: "id, service, event, frequency_hz, cpu_budget_ppm, hosts, enabled, created_by,
              updated_by, created_at, updated_at",
};

/// Continuous configurations, in whichever database the store runs on.
pub type ContinuousProfiles = Configurations<ContinuousRow>;

impl ContinuousProfiles {
    pub fn new(db: impl Into<Database>) -> Self {
        Configurations::over(db, CONTINUOUS)
    }

    /// Creates a configuration; a service that has one already is a
    /// [`StoreError::Conflict`].
    pub async fn create(&self, new: &NewContinuous) -> Result<ContinuousRow> {
        let id = Uuid::new_v4();
        let inserted = Sql::new(
            "insert into continuous_profiles (id, service, event, frequency_hz, cpu_budget_ppm,
                                              hosts, created_by, updated_by)
             values ($1, $2, $3, $4, $5, $6, $7, $7)",
        )
        .bind(id)
        .bind(&new.service)
        .bind(new.event.as_str())
        .bind(whole(new.frequency_hz)?)
        .bind(whole(new.cpu_budget_ppm)?)
        .bind(host_list(&new.hosts)?)
        .bind(&new.created_by)
        .execute(&self.db)
        .await;
        conflict_if_taken(inserted, || {
            format!(
                "service {:?} is already profiled continuously; change that configuration instead",
                new.service
            )
        })?;
        written(self.get(id).await?, || format!("continuous profile {id}"))
    }

    /// Every configuration, by service.
    pub async fn list(&self) -> Result<Vec<ContinuousRow>> {
        CONTINUOUS.list(&self.db, "order by service").await
    }

    /// Applies `patch`, recording who changed it; `None` when no such
    /// configuration.
    pub async fn update(
        &self,
        id: Uuid,
        patch: &ContinuousPatch,
        updated_by: &str,
    ) -> Result<Option<ContinuousRow>> {
        let own = CONTINUOUS
            .patch()
            .keep_unless_given("event", patch.event.map(EventKind::as_str))
            .keep_unless_given("frequency_hz", patch.frequency_hz.map(whole).transpose()?)
            .keep_unless_given(
                "cpu_budget_ppm",
                patch.cpu_budget_ppm.map(whole).transpose()?,
            );
        self.change(id, own, &patch.hosts, patch.enabled, updated_by)
            .await
    }

    /// Opens `segment` as a running profile of the configuration's service
    /// unless it is open already; whether this call opened it. The
    /// profile's target is the service's as defined now; a configuration
    /// or service deleted meanwhile opens nothing.
    pub async fn open_segment(&self, segment: &Segment<'_>) -> Result<bool> {
        let assignment = segment.assignment;
        let mut labels = Labels::new();
        labels.insert(CONTINUOUS_LABEL.to_owned(), assignment.id.to_string());
        if let Some(release) = self.release_of(segment.host, segment.agent_id).await? {
            labels.insert(RELEASE_LABEL.to_owned(), release);
        }
        let start = Utc
            .timestamp_opt(segment.segment_start_s, 0)
            .single()
            .ok_or_else(|| {
                StoreError::Statement(format!(
                    "segment start {} is no time",
                    segment.segment_start_s
                ))
            })?;
        let inserted = Sql::new(
            "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                                   requested_by, labels, mode, options, event, agent_id,
                                   continuous_id, created_at, started_at, updated_at)
             select $1, $2, s.name, s.target, $3, $4, 'running', c.created_by, $5, $6, $7, $8,
                    $9, c.id, $10, {now}, {now}
             from continuous_profiles c join services s on s.name = c.service
             where c.id = $11",
        )
        .bind(segment.profile_id)
        .bind(segment.host)
        .bind(SEGMENT_SECS * 1000)
        .bind(whole(assignment.frequency_hz)?)
        .bind(Arg::json(&labels)?)
        .bind(ProfileMode::of(Some(assignment.event)).as_str())
        .bind(Arg::json::<StartOptions>(&assignment.start_options())?)
        .bind(assignment.event.as_str())
        .bind(segment.agent_id)
        .bind(start)
        .bind(assignment.id)
        .execute(&self.db)
        .await;
        match inserted {
            Ok(rows) => Ok(rows == 1),
            Err(e) if e.violation() == Some(Violation::Unique) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl ContinuousProfiles {
    /// The release the agent's host runs, as its last heartbeat labelled it.
    async fn release_of(&self, host: &str, agent_id: &str) -> Result<Option<String>> {
        let labels: Option<sqlx::types::Json<Labels>> =
            Sql::new("select labels from agents where host = $1 and agent_id = $2")
                .bind(host)
                .bind(agent_id)
                .fetch_value(&self.db)
                .await?;
        Ok(labels.and_then(|sqlx::types::Json(mut l)| l.remove(RELEASE_LABEL)))
    }

    /// Ends the segments still running `grace` after their hour: their
    /// agent went away for good (a host retired, an agent uninstalled)
    /// without saying they ended. Returns how many.
    pub async fn close_overdue_segments(&self, grace: std::time::Duration) -> Result<u64> {
        Sql::new(
            "update profiles set status = 'finished', updated_at = {now}, finished_at = {now},
                 status_reason = 'the segment ended without its agent reporting it'
             where continuous_id is not null and status = 'running'
               and created_at < {now} - $1",
        )
        .bind(std::time::Duration::from_secs(SEGMENT_SECS.unsigned_abs()) + grace)
        .execute(&self.db)
        .await
    }
}
