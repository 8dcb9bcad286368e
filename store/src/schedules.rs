//! Profiling schedules and the record of their runs.
//!
//! The api-server validates cron expressions and computes `next_run_at`;
//! this module only stores them. Firing happens inside one transaction
//! (see [`try_scheduler_lock`], [`due`], [`claim_run`]) so that concurrent
//! schedulers never fire one occurrence twice.

use chrono::{DateTime, Utc};
use odp_core::cost::StartOptions;
use odp_core::Target;
use sqlx::types::Json;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::columns::Text;
use crate::profiles::ProfileMode;
use crate::{Result, StoreError};

/// The `pg_try_advisory_xact_lock` key scheduler transactions take: only
/// one api-server replica fires schedules at a time ("ODPSCHED" in ASCII).
pub const SCHEDULER_LOCK_KEY: i64 = 0x4f44_5053_4348_4544;

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

/// Schedules in Postgres.
#[derive(Clone)]
pub struct Schedules {
    pool: PgPool,
}

impl Schedules {
    pub fn new(pool: PgPool) -> Self {
        Schedules { pool }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Stores a new schedule; a taken name is a [`StoreError::Conflict`].
    pub async fn create(&self, s: &NewSchedule) -> Result<ScheduleRow> {
        let row = sqlx::query_as::<_, ScheduleRow>(
            "insert into schedules (id, name, service, host, target, duration_secs, frequency_hz,
                                    window_secs, cron, timezone, enabled, created_by, next_run_at,
                                    mode, options)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
             returning *",
        )
        .bind(s.id)
        .bind(&s.name)
        .bind(&s.service)
        .bind(&s.host)
        .bind(Json(&s.target))
        .bind(s.duration_secs)
        .bind(s.frequency_hz)
        .bind(s.window_secs)
        .bind(&s.cron)
        .bind(&s.timezone)
        .bind(s.enabled)
        .bind(&s.created_by)
        .bind(s.next_run_at)
        .bind(s.mode.as_str())
        .bind(Json(&s.options))
        .fetch_one(&self.pool)
        .await;
        match row {
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Err(
                StoreError::Conflict(format!("a schedule named {:?} already exists", s.name)),
            ),
            other => Ok(other?),
        }
    }

    /// Every schedule, by name.
    pub async fn list(&self) -> Result<Vec<ScheduleRow>> {
        Ok(
            sqlx::query_as::<_, ScheduleRow>("select * from schedules order by name")
                .fetch_all(&self.pool)
                .await?,
        )
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<ScheduleRow>> {
        Ok(
            sqlx::query_as::<_, ScheduleRow>("select * from schedules where id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    /// Applies `patch` and sets `next_run_at`; `None` when there is no such
    /// schedule.
    pub async fn update(
        &self,
        id: Uuid,
        patch: &SchedulePatch,
        next_run_at: Option<DateTime<Utc>>,
    ) -> Result<Option<ScheduleRow>> {
        Ok(sqlx::query_as::<_, ScheduleRow>(
            "update schedules set
                 enabled = coalesce($2, enabled),
                 cron = coalesce($3, cron),
                 timezone = coalesce($4, timezone),
                 duration_secs = coalesce($5, duration_secs),
                 frequency_hz = coalesce($6, frequency_hz),
                 next_run_at = $7,
                 updated_at = now()
             where id = $1
             returning *",
        )
        .bind(id)
        .bind(patch.enabled)
        .bind(&patch.cron)
        .bind(&patch.timezone)
        .bind(patch.duration_secs)
        .bind(patch.frequency_hz)
        .bind(next_run_at)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Deletes a schedule and its runs; whether it existed.
    pub async fn delete(&self, id: Uuid) -> Result<bool> {
        let done = sqlx::query("delete from schedules where id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The schedule's latest `limit` runs, newest occurrence first.
    pub async fn runs(&self, id: Uuid, limit: i64) -> Result<Vec<ScheduleRunRow>> {
        Ok(sqlx::query_as::<_, ScheduleRunRow>(
            "select * from schedule_runs where schedule_id = $1
             order by scheduled_for desc limit $2",
        )
        .bind(id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }
}

/// Takes the scheduler's transaction-scoped advisory lock; `false` when
/// another transaction (another replica) holds it.
pub async fn try_scheduler_lock(tx: &mut PgConnection) -> Result<bool> {
    let (locked,): (bool,) = sqlx::query_as("select pg_try_advisory_xact_lock($1)")
        .bind(SCHEDULER_LOCK_KEY)
        .fetch_one(tx)
        .await?;
    Ok(locked)
}

/// Enabled schedules whose next run is at or before `now`, locked for this
/// transaction; rows another transaction holds are skipped.
pub async fn due(
    tx: &mut PgConnection,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<ScheduleRow>> {
    Ok(sqlx::query_as::<_, ScheduleRow>(
        "select * from schedules
         where enabled and next_run_at <= $1
         order by next_run_at
         limit $2
         for update skip locked",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(tx)
    .await?)
}

/// Records one occurrence's outcome unless it was recorded before; `None`
/// when it was (another scheduler got there first: do not fire), else the
/// run's id.
pub async fn claim_run(
    tx: &mut PgConnection,
    schedule_id: Uuid,
    scheduled_for: DateTime<Utc>,
    outcome: RunOutcome,
    detail: Option<&str>,
) -> Result<Option<i64>> {
    let id: Option<(i64,)> = sqlx::query_as(
        "insert into schedule_runs (schedule_id, scheduled_for, outcome, detail)
         values ($1, $2, $3, $4)
         on conflict (schedule_id, scheduled_for) do nothing
         returning id",
    )
    .bind(schedule_id)
    .bind(scheduled_for)
    .bind(outcome.as_str())
    .bind(detail)
    .fetch_optional(tx)
    .await?;
    Ok(id.map(|(id,)| id))
}

/// Records many missed occurrences at once, skipping recorded ones; how
/// many were new.
pub async fn record_missed(
    tx: &mut PgConnection,
    schedule_id: Uuid,
    occurrences: &[DateTime<Utc>],
    detail: &str,
) -> Result<u64> {
    if occurrences.is_empty() {
        return Ok(0);
    }
    let done = sqlx::query(
        "insert into schedule_runs (schedule_id, scheduled_for, outcome, detail)
         select $1, t, 'missed', $3 from unnest($2::timestamptz[]) as t
         on conflict (schedule_id, scheduled_for) do nothing",
    )
    .bind(schedule_id)
    .bind(occurrences)
    .bind(detail)
    .execute(tx)
    .await?;
    Ok(done.rows_affected())
}

/// Sets the final outcome of a claimed run.
pub async fn finish_run(
    tx: &mut PgConnection,
    run_id: i64,
    outcome: RunOutcome,
    profile_id: Option<Uuid>,
    detail: Option<&str>,
) -> Result<()> {
    sqlx::query(
        "update schedule_runs set outcome = $2, profile_id = $3, detail = $4, fired_at = now()
         where id = $1",
    )
    .bind(run_id)
    .bind(outcome.as_str())
    .bind(profile_id)
    .bind(detail)
    .execute(tx)
    .await?;
    Ok(())
}

/// Moves a schedule on after a tick: its next occurrence, and when it last
/// fired (unchanged when `fired_at` is `None`).
pub async fn advance(
    tx: &mut PgConnection,
    schedule_id: Uuid,
    next_run_at: Option<DateTime<Utc>>,
    fired_at: Option<DateTime<Utc>>,
) -> Result<()> {
    sqlx::query(
        "update schedules set next_run_at = $2, last_run_at = coalesce($3, last_run_at)
         where id = $1",
    )
    .bind(schedule_id)
    .bind(next_run_at)
    .bind(fired_at)
    .execute(tx)
    .await?;
    Ok(())
}
