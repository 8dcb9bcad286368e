//! Profiling schedules and the record of their runs.
//!
//! The api-server validates cron expressions and computes `next_run_at`;
//! this module only stores them. Firing happens inside one transaction, a
//! [`SchedulerTick`], so that concurrent schedulers never fire one
//! occurrence twice, on Postgres and on MySQL alike.

use chrono::{DateTime, Utc};
use odp_core::cost::StartOptions;
pub use odp_core::domain::RunOutcome;
use odp_core::run::ScheduleRun;
use odp_core::Target;
use uuid::Uuid;

use crate::columns::Text;
use crate::database::{repository, Database};
use crate::profiles::ProfileMode;
use crate::sql::{Arg, Sql, Table};
use crate::{conflict_if_taken, written, Result};

mod mysql;
mod postgres;
mod tick;

pub use postgres::claim_run;
pub use tick::SchedulerTick;

/// The `pg_try_advisory_xact_lock` key scheduler transactions take: only
/// one api-server replica fires schedules at a time ("ODPSCHED" in ASCII).
/// MySQL's named lock is `<database>.odp-scheduler`.
pub const SCHEDULER_LOCK_KEY: i64 = 0x4f44_5053_4348_4544;

const SCHEDULES: Table = Table {
    name: "schedules",
    columns: "*",
};

/// Records one occurrence of a schedule; `then` is what to do when it
/// was recorded before (nothing: fail).
fn insert_run(
    schedule_id: Uuid,
    scheduled_for: DateTime<Utc>,
    outcome: RunOutcome,
    detail: Option<&str>,
    then: &str,
) -> Sql {
    Sql::new(format!(
        "insert into schedule_runs (schedule_id, scheduled_for, outcome, detail)
         values ($1, $2, $3, $4) {then}"
    ))
    .bind(schedule_id)
    .bind(scheduled_for)
    .bind(outcome.as_str())
    .bind(detail)
}

/// A schedule to store, its `next_run_at` already computed.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct NewSchedule {
    pub id: Uuid,
    pub name: String,
    pub service: String,
    pub host: String,
    #[sqlx(json)]
    pub target: Target,
    pub duration_secs: i32,
    pub frequency_hz: i32,
    pub window_secs: Option<i32>,
    pub cron: String,
    pub timezone: String,
    pub enabled: bool,
    pub created_by: String,
    pub next_run_at: Option<DateTime<Utc>>,
    #[sqlx(try_from = "Text<ProfileMode>")]
    pub mode: ProfileMode,
    /// The plugin, event and cost control of every run.
    #[sqlx(json)]
    pub options: StartOptions,
    /// A run schedule's run (`host` is then `*`): each firing starts a run
    /// of `service`.
    #[sqlx(json(nullable))]
    pub run_spec: Option<ScheduleRun>,
}

/// A stored schedule: as created (its `next_run_at` kept up to date), and
/// when it last changed and ran.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ScheduleRow {
    #[sqlx(flatten)]
    pub schedule: NewSchedule,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub last_run_at: Option<DateTime<Utc>>,
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

/// What a claimed occurrence of a schedule started: a profile schedule's
/// profile, a run schedule's run; `None` when it started nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fired {
    Profile(Option<Uuid>),
    Run(Option<Uuid>),
}

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
    /// The run a run schedule's occurrence started.
    pub run_id: Option<Uuid>,
    pub detail: Option<String>,
}

repository! {
    /// Schedules, in whichever database the store runs on.
    Schedules
}

impl Schedules {
    /// The database the schedules are in.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Stores a new schedule; a taken name is a [`crate::StoreError::Conflict`].
    pub async fn create(&self, s: &NewSchedule) -> Result<ScheduleRow> {
        let inserted = Sql::new(
            "insert into schedules (id, name, service, host, target, duration_secs, frequency_hz,
                                    window_secs, cron, timezone, enabled, created_by, next_run_at,
                                    mode, options, run_spec)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        )
        .bind(s.id)
        .bind(&s.name)
        .bind(&s.service)
        .bind(&s.host)
        .bind(Arg::json(&s.target)?)
        .bind(s.duration_secs)
        .bind(s.frequency_hz)
        .bind(s.window_secs)
        .bind(&s.cron)
        .bind(&s.timezone)
        .bind(s.enabled)
        .bind(&s.created_by)
        .bind(s.next_run_at)
        .bind(s.mode.as_str())
        .bind(Arg::json(&s.options)?)
        .bind(
            s.run_spec
                .as_ref()
                .map(Arg::json)
                .transpose()?
                .unwrap_or(Arg::Json(None)),
        )
        .execute(&self.db)
        .await;
        conflict_if_taken(inserted, || {
            format!("a schedule named {:?} already exists", s.name)
        })?;
        written(self.get(s.id).await?, || format!("schedule {}", s.id))
    }

    /// Every schedule, by name.
    pub async fn list(&self) -> Result<Vec<ScheduleRow>> {
        SCHEDULES.list(&self.db, "order by name").await
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<ScheduleRow>> {
        SCHEDULES.get(&self.db, id).await
    }

    /// Applies `patch` and sets `next_run_at`; `None` when there is no such
    /// schedule. The update and the read of its result share a
    /// transaction, so the row returned is the one this update wrote.
    pub async fn update(
        &self,
        id: Uuid,
        patch: &SchedulePatch,
        next_run_at: Option<DateTime<Utc>>,
    ) -> Result<Option<ScheduleRow>> {
        let change = SCHEDULES
            .patch()
            .keep_unless_given("enabled", patch.enabled)
            .keep_unless_given("cron", &patch.cron)
            .keep_unless_given("timezone", &patch.timezone)
            .keep_unless_given("duration_secs", patch.duration_secs)
            .keep_unless_given("frequency_hz", patch.frequency_hz)
            .set("next_run_at", next_run_at);
        SCHEDULES.apply(&self.db, change, id).await
    }

    /// Deletes a schedule and its runs; whether it existed.
    pub async fn delete(&self, id: Uuid) -> Result<bool> {
        SCHEDULES.delete(&self.db, id).await
    }

    /// The schedule's latest `limit` runs, newest occurrence first.
    pub async fn runs(&self, id: Uuid, limit: i64) -> Result<Vec<ScheduleRunRow>> {
        Sql::new(
            "select * from schedule_runs where schedule_id = $1
             order by scheduled_for desc limit $2",
        )
        .bind(id)
        .bind(limit)
        .fetch_all(&self.db)
        .await
    }
}
