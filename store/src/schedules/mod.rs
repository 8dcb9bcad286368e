//! Profiling schedules and the record of their runs.
//!
//! The api-server validates cron expressions and computes `next_run_at`;
//! this module only stores them. Firing happens inside one transaction, a
//! [`SchedulerTick`], so that concurrent schedulers never fire one
//! occurrence twice, on Postgres and on MySQL alike.

use chrono::{DateTime, Utc};
use odp_core::cost::StartOptions;
use odp_core::Target;
use uuid::Uuid;

use crate::columns::Text;
use crate::database::{on_backend, Database};
use crate::profiles::ProfileMode;
use crate::{Result, StoreError};

mod mysql;
mod postgres;
mod tick;

pub use postgres::claim_run;
pub use tick::SchedulerTick;

/// The `pg_try_advisory_xact_lock` key scheduler transactions take: only
/// one api-server replica fires schedules at a time ("ODPSCHED" in ASCII).
/// MySQL's named lock is `<database>.odp-scheduler`.
pub const SCHEDULER_LOCK_KEY: i64 = 0x4f44_5053_4348_4544;

/// A schedule to store, its `next_run_at` already computed.
#[derive(Debug, Clone)]
pub struct NewSchedule {
    pub id: Uuid,
    pub name: String,
    pub service: String,
    pub host: String,
    pub target: Target,
    pub duration_secs: i32,
    pub frequency_hz: i32,
    pub window_secs: Option<i32>,
    pub cron: String,
    pub timezone: String,
    pub enabled: bool,
    pub created_by: String,
    pub next_run_at: Option<DateTime<Utc>>,
    pub mode: ProfileMode,
    pub options: StartOptions,
}

/// A stored schedule.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ScheduleRow {
    pub id: Uuid,
    pub name: String,
    pub service: String,
    pub host: String,
    #[sqlx(json)]
    pub target: Target,
    #[sqlx(try_from = "Text<ProfileMode>")]
    pub mode: ProfileMode,
    pub duration_secs: i32,
    pub frequency_hz: i32,
    pub window_secs: Option<i32>,
    pub cron: String,
    pub timezone: String,
    pub enabled: bool,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub next_run_at: Option<DateTime<Utc>>,
    pub last_run_at: Option<DateTime<Utc>>,
    /// The plugin, event and cost control of every run.
    #[sqlx(json)]
    pub options: StartOptions,
}

/// A change to a schedule; `None` fields stay as they are. The caller
/// recomputes `next_run_at` from the resulting cron, zone and state.
#[derive(Debug, Clone, Default)]
pub struct SchedulePatch {
    pub enabled: Option<bool>,
    pub cron: Option<String>,
    pub timezone: Option<String>,
    pub duration_secs: Option<i32>,
    pub frequency_hz: Option<i32>,
}

pub use odp_api_types::RunOutcome;

/// One recorded occurrence of a schedule.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ScheduleRunRow {
    pub id: i64,
    pub schedule_id: Uuid,
    pub scheduled_for: DateTime<Utc>,
    pub fired_at: DateTime<Utc>,
    #[sqlx(try_from = "Text<RunOutcome>")]
    pub outcome: RunOutcome,
    pub profile_id: Option<Uuid>,
    pub detail: Option<String>,
}

impl From<ScheduleRow> for odp_api_types::Schedule {
    fn from(row: ScheduleRow) -> Self {
        odp_api_types::Schedule {
            id: row.id,
            name: row.name,
            service: row.service,
            host: row.host,
            target: row.target,
            mode: row.mode,
            duration_secs: row.duration_secs,
            frequency_hz: row.frequency_hz,
            window_secs: row.window_secs,
            cron: row.cron,
            timezone: row.timezone,
            enabled: row.enabled,
            created_by: row.created_by,
            created_at: row.created_at,
            updated_at: row.updated_at,
            next_run_at: row.next_run_at,
            last_run_at: row.last_run_at,
            options: row.options,
        }
    }
}

impl From<ScheduleRunRow> for odp_api_types::RunView {
    fn from(run: ScheduleRunRow) -> Self {
        odp_api_types::RunView {
            scheduled_for: run.scheduled_for,
            fired_at: run.fired_at,
            outcome: run.outcome,
            profile_id: run.profile_id,
            detail: run.detail,
        }
    }
}

/// Schedules, in whichever database the store runs on.
#[derive(Clone)]
pub struct Schedules {
    db: Database,
}

impl Schedules {
    pub fn new(db: impl Into<Database>) -> Self {
        Schedules { db: db.into() }
    }

    /// The database the schedules are in.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Stores a new schedule; a taken name is a [`StoreError::Conflict`].
    pub async fn create(&self, s: &NewSchedule) -> Result<ScheduleRow> {
        on_backend!(self.db, create(s))
    }

    /// Every schedule, by name.
    pub async fn list(&self) -> Result<Vec<ScheduleRow>> {
        on_backend!(self.db, list())
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<ScheduleRow>> {
        on_backend!(self.db, get(id))
    }

    /// Applies `patch` and sets `next_run_at`; `None` when there is no such
    /// schedule.
    pub async fn update(
        &self,
        id: Uuid,
        patch: &SchedulePatch,
        next_run_at: Option<DateTime<Utc>>,
    ) -> Result<Option<ScheduleRow>> {
        on_backend!(self.db, update(id, patch, next_run_at))
    }

    /// Deletes a schedule and its runs; whether it existed.
    pub async fn delete(&self, id: Uuid) -> Result<bool> {
        on_backend!(self.db, delete(id))
    }

    /// The schedule's latest `limit` runs, newest occurrence first.
    pub async fn runs(&self, id: Uuid, limit: i64) -> Result<Vec<ScheduleRunRow>> {
        on_backend!(self.db, runs(id, limit))
    }
}

/// The error for a schedule whose name is taken.
fn name_taken(s: &NewSchedule) -> StoreError {
    StoreError::Conflict(format!("a schedule named {:?} already exists", s.name))
}
