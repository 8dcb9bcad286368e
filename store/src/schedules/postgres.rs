//! Schedules in Postgres. The tick's functions take the connection of a
//! transaction the caller opened; they stay public (re-exported by the
//! crate) for callers that hold their own Postgres transaction. On either
//! backend, [`super::SchedulerTick`] runs them.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{
    name_taken, NewSchedule, RunOutcome, SchedulePatch, ScheduleRow, ScheduleRunRow,
    SCHEDULER_LOCK_KEY,
};
use crate::Result;

pub(super) async fn create(pool: &PgPool, s: &NewSchedule) -> Result<ScheduleRow> {
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
    .fetch_one(pool)
    .await;
    match row {
        Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Err(name_taken(s)),
        other => Ok(other?),
    }
}

pub(super) async fn list(pool: &PgPool) -> Result<Vec<ScheduleRow>> {
    Ok(
        sqlx::query_as::<_, ScheduleRow>("select * from schedules order by name")
            .fetch_all(pool)
            .await?,
    )
}

pub(super) async fn get(pool: &PgPool, id: Uuid) -> Result<Option<ScheduleRow>> {
    Ok(
        sqlx::query_as::<_, ScheduleRow>("select * from schedules where id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?,
    )
}

pub(super) async fn update(
    pool: &PgPool,
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
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn delete(pool: &PgPool, id: Uuid) -> Result<bool> {
    let done = sqlx::query("delete from schedules where id = $1")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

pub(super) async fn runs(pool: &PgPool, id: Uuid, limit: i64) -> Result<Vec<ScheduleRunRow>> {
    Ok(sqlx::query_as::<_, ScheduleRunRow>(
        "select * from schedule_runs where schedule_id = $1
         order by scheduled_for desc limit $2",
    )
    .bind(id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// Takes the scheduler's transaction-scoped advisory lock; `false` when
/// another transaction (another replica) holds it.
pub(super) async fn try_scheduler_lock(tx: &mut PgConnection) -> Result<bool> {
    let (locked,): (bool,) = sqlx::query_as("select pg_try_advisory_xact_lock($1)")
        .bind(SCHEDULER_LOCK_KEY)
        .fetch_one(tx)
        .await?;
    Ok(locked)
}

/// Enabled schedules whose next run is at or before `now`, locked for this
/// transaction; rows another transaction holds are skipped.
pub(super) async fn due(
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
pub(super) async fn record_missed(
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
pub(super) async fn finish_run(
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
pub(super) async fn advance(
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
