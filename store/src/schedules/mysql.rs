//! Schedules in MySQL and MariaDB: a read after each write instead of
//! `returning`, a plain insert whose duplicate-key error (1062) means "already
//! recorded" instead of `on conflict do nothing`, the run's id from
//! `last_insert_id()`, and a named session lock (`GET_LOCK`) for Postgres'
//! transaction-scoped advisory lock, which [`super::SchedulerTick`] releases.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{MySql, MySqlConnection, MySqlPool, QueryBuilder};
use uuid::Uuid;

use super::{name_taken, NewSchedule, RunOutcome, SchedulePatch, ScheduleRow, ScheduleRunRow};
use crate::database::push_in_list;
use crate::{Result, StoreError};

/// The scheduler's lock: lock names are server-wide, so the database's name
/// prefixes it (cut so the whole stays within MySQL's 64 characters).
const LOCK_NAME: &str = "concat(left(database(), 50), '.odp-scheduler')";

pub(super) async fn create(pool: &MySqlPool, s: &NewSchedule) -> Result<ScheduleRow> {
    let inserted = sqlx::query(
        "insert into schedules (id, name, service, host, target, duration_secs, frequency_hz,
                                window_secs, cron, timezone, enabled, created_by, next_run_at,
                                mode, options)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
    .execute(pool)
    .await;
    match inserted {
        Err(sqlx::Error::Database(db)) if db.is_unique_violation() => return Err(name_taken(s)),
        other => other?,
    };
    get(pool, s.id).await?.ok_or_else(|| vanished(s.id))
}

fn vanished(id: Uuid) -> StoreError {
    StoreError::Corrupt(format!("schedule {id} vanished"))
}

pub(super) async fn list(pool: &MySqlPool) -> Result<Vec<ScheduleRow>> {
    Ok(
        sqlx::query_as::<_, ScheduleRow>("select * from schedules order by name")
            .fetch_all(pool)
            .await?,
    )
}

pub(super) async fn get(pool: &MySqlPool, id: Uuid) -> Result<Option<ScheduleRow>> {
    Ok(
        sqlx::query_as::<_, ScheduleRow>("select * from schedules where id = ?")
            .bind(id)
            .fetch_optional(pool)
            .await?,
    )
}

/// The update and the read of its result in one transaction, so the row
/// returned is the one this update wrote.
pub(super) async fn update(
    pool: &MySqlPool,
    id: Uuid,
    patch: &SchedulePatch,
    next_run_at: Option<DateTime<Utc>>,
) -> Result<Option<ScheduleRow>> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "update schedules set
             enabled = coalesce(?, enabled),
             cron = coalesce(?, cron),
             timezone = coalesce(?, timezone),
             duration_secs = coalesce(?, duration_secs),
             frequency_hz = coalesce(?, frequency_hz),
             next_run_at = ?,
             updated_at = now(6)
         where id = ?",
    )
    .bind(patch.enabled)
    .bind(&patch.cron)
    .bind(&patch.timezone)
    .bind(patch.duration_secs)
    .bind(patch.frequency_hz)
    .bind(next_run_at)
    .bind(id)
    .execute(&mut *tx)
    .await?;
    let row = sqlx::query_as::<_, ScheduleRow>("select * from schedules where id = ?")
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(row)
}

pub(super) async fn delete(pool: &MySqlPool, id: Uuid) -> Result<bool> {
    let done = sqlx::query("delete from schedules where id = ?")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

pub(super) async fn runs(pool: &MySqlPool, id: Uuid, limit: i64) -> Result<Vec<ScheduleRunRow>> {
    Ok(sqlx::query_as::<_, ScheduleRunRow>(
        "select * from schedule_runs where schedule_id = ?
         order by scheduled_for desc limit ?",
    )
    .bind(id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// Takes the scheduler's lock for this session without waiting: `true`
/// when taken (1), `false` when another session holds it (0).
pub(super) async fn get_scheduler_lock(conn: &mut MySqlConnection) -> Result<bool> {
    let (taken,): (Option<i64>,) = sqlx::query_as(&format!("select get_lock({LOCK_NAME}, 0)"))
        .fetch_one(conn)
        .await?;
    Ok(taken == Some(1))
}

/// Releases the lock [`get_scheduler_lock`] took on this session; `false`
/// when this session did not hold it.
pub(super) async fn release_scheduler_lock(conn: &mut MySqlConnection) -> Result<bool> {
    let (released,): (Option<i64>,) = sqlx::query_as(&format!("select release_lock({LOCK_NAME})"))
        .fetch_one(conn)
        .await?;
    Ok(released == Some(1))
}

pub(super) async fn due(
    tx: &mut MySqlConnection,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<ScheduleRow>> {
    Ok(sqlx::query_as::<_, ScheduleRow>(
        "select * from schedules
         where enabled and next_run_at <= ?
         order by next_run_at
         limit ?
         for update skip locked",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(tx)
    .await?)
}

/// A duplicate `(schedule_id, scheduled_for)` fails only this statement,
/// not the transaction, and waits for an uncommitted claim of the same
/// occurrence as Postgres' `on conflict` does.
pub(super) async fn claim_run(
    tx: &mut MySqlConnection,
    schedule_id: Uuid,
    scheduled_for: DateTime<Utc>,
    outcome: RunOutcome,
    detail: Option<&str>,
) -> Result<Option<i64>> {
    let inserted = sqlx::query(
        "insert into schedule_runs (schedule_id, scheduled_for, outcome, detail)
         values (?, ?, ?, ?)",
    )
    .bind(schedule_id)
    .bind(scheduled_for)
    .bind(outcome.as_str())
    .bind(detail)
    .execute(tx)
    .await;
    match inserted {
        Ok(done) => Ok(Some(done.last_insert_id() as i64)),
        Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Ok(None),
        Err(other) => Err(other.into()),
    }
}

/// The occurrences not yet recorded, in one multi-row insert. A
/// concurrent claim of one of them fails that insert whole (1062, this
/// statement only), and then each is inserted on its own; `on duplicate
/// key update` would not do, as it counts a kept row like a new one (sqlx
/// connects with CLIENT_FOUND_ROWS).
pub(super) async fn record_missed(
    tx: &mut MySqlConnection,
    schedule_id: Uuid,
    occurrences: &[DateTime<Utc>],
    detail: &str,
) -> Result<u64> {
    if occurrences.is_empty() {
        return Ok(0);
    }
    let mut known =
        QueryBuilder::<MySql>::new("select scheduled_for from schedule_runs where schedule_id = ");
    known.push_bind(schedule_id);
    known.push(" and scheduled_for in ");
    push_in_list(&mut known, occurrences);
    // MariaDB has no `for share`; MySQL 8 still takes this older spelling.
    known.push(" lock in share mode");
    let known: Vec<(DateTime<Utc>,)> = known.build_query_as().fetch_all(&mut *tx).await?;
    let known: HashSet<DateTime<Utc>> = known.into_iter().map(|(at,)| at).collect();
    let mut new: Vec<DateTime<Utc>> = occurrences
        .iter()
        .filter(|at| !known.contains(at))
        .copied()
        .collect();
    new.sort();
    new.dedup();
    if new.is_empty() {
        return Ok(0);
    }
    let mut insert = QueryBuilder::<MySql>::new(
        "insert into schedule_runs (schedule_id, scheduled_for, outcome, detail) ",
    );
    insert.push_values(&new, |mut row, &at| {
        row.push_bind(schedule_id)
            .push_bind(at)
            .push_bind(RunOutcome::Missed.as_str())
            .push_bind(detail);
    });
    match insert.build().execute(&mut *tx).await {
        Ok(done) => Ok(done.rows_affected()),
        Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
            let mut recorded = 0;
            for at in new {
                let missed = RunOutcome::Missed;
                if claim_run(&mut *tx, schedule_id, at, missed, Some(detail))
                    .await?
                    .is_some()
                {
                    recorded += 1;
                }
            }
            Ok(recorded)
        }
        Err(other) => Err(other.into()),
    }
}

pub(super) async fn finish_run(
    tx: &mut MySqlConnection,
    run_id: i64,
    outcome: RunOutcome,
    profile_id: Option<Uuid>,
    detail: Option<&str>,
) -> Result<()> {
    sqlx::query(
        "update schedule_runs set outcome = ?, profile_id = ?, detail = ?, fired_at = now(6)
         where id = ?",
    )
    .bind(outcome.as_str())
    .bind(profile_id)
    .bind(detail)
    .bind(run_id)
    .execute(tx)
    .await?;
    Ok(())
}

/// `last_run_at`'s `coalesce` reads only that column, which no clause
/// before it sets (MySQL assigns `set` clauses left to right).
pub(super) async fn advance(
    tx: &mut MySqlConnection,
    schedule_id: Uuid,
    next_run_at: Option<DateTime<Utc>>,
    fired_at: Option<DateTime<Utc>>,
) -> Result<()> {
    sqlx::query(
        "update schedules set next_run_at = ?, last_run_at = coalesce(?, last_run_at)
         where id = ?",
    )
    .bind(next_run_at)
    .bind(fired_at)
    .bind(schedule_id)
    .execute(tx)
    .await?;
    Ok(())
}
