//! What the scheduler tick does differently in MySQL and MariaDB: a named
//! session lock (`GET_LOCK`) for Postgres' transaction-scoped advisory
//! lock, which [`super::SchedulerTick`] releases; a plain insert whose
//! duplicate-key error (1062) means "already recorded" instead of `on
//! conflict do nothing`, and the run's id from `last_insert_id()` instead
//! of `returning`.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use sqlx::{MySql, MySqlConnection, QueryBuilder};
use uuid::Uuid;

use super::{insert_run, RunOutcome};
use crate::sql::Sql;
use crate::{Result, Violation};

/// The scheduler's lock: lock names are server-wide, so the database's name
/// prefixes it (cut so the whole stays within MySQL's 64 characters).
const LOCK_NAME: &str = "concat(left(database(), 50), '.odp-scheduler')";

/// Takes the scheduler's lock for this session without waiting: `true`
/// when taken (1), `false` when another session holds it (0).
pub(super) async fn get_scheduler_lock(conn: &mut MySqlConnection) -> Result<bool> {
    let taken: Option<Option<i64>> = Sql::new(format!("select get_lock({LOCK_NAME}, 0)"))
        .fetch_value(conn)
        .await?;
    Ok(taken.flatten() == Some(1))
}

/// Releases the lock [`get_scheduler_lock`] took on this session; `false`
/// when this session did not hold it.
pub(super) async fn release_scheduler_lock(conn: &mut MySqlConnection) -> Result<bool> {
    let released: Option<Option<i64>> = Sql::new(format!("select release_lock({LOCK_NAME})"))
        .fetch_value(conn)
        .await?;
    Ok(released.flatten() == Some(1))
}

/// A duplicate `(schedule_id, scheduled_for)` fails only this statement,
/// not the transaction, and waits for an uncommitted claim of the same
/// occurrence as Postgres' `on conflict` does. The run's id is the
/// session's last insert id.
pub(super) async fn claim_run(
    tx: &mut MySqlConnection,
    schedule_id: Uuid,
    scheduled_for: DateTime<Utc>,
    outcome: RunOutcome,
    detail: Option<&str>,
) -> Result<Option<i64>> {
    let inserted = insert_run(schedule_id, scheduled_for, outcome, detail, "")
        .execute(&mut *tx)
        .await;
    match inserted {
        Err(e) if e.violation() == Some(Violation::Unique) => return Ok(None),
        other => other?,
    };
    Sql::new("select cast(last_insert_id() as signed)")
        .fetch_value(tx)
        .await
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
    // MariaDB has no `for share`; MySQL 8 still takes this older spelling.
    let known: HashSet<DateTime<Utc>> = Sql::new(
        "select scheduled_for from schedule_runs
         where schedule_id = $1 and scheduled_for in $2
         lock in share mode",
    )
    .bind(schedule_id)
    .bind_list(occurrences.iter().copied())
    .fetch_column(&mut *tx)
    .await?
    .into_iter()
    .collect();
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
