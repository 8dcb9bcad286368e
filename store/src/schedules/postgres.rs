//! What the scheduler tick does differently in Postgres: a
//! transaction-scoped advisory lock, and runs recorded with `on conflict
//! do nothing` (a duplicate would abort the tick's transaction). The
//! functions take the connection of the tick's transaction; `claim_run`
//! stays public (re-exported by the crate) for callers that hold their own
//! Postgres transaction.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{insert_run, RunOutcome, SCHEDULER_LOCK_KEY};
use crate::sql::Sql;
use crate::Result;

/// Takes the scheduler's transaction-scoped advisory lock; `false` when
/// another transaction (another replica) holds it.
pub(super) async fn try_scheduler_lock(tx: &mut PgConnection) -> Result<bool> {
    let locked = Sql::new("select pg_try_advisory_xact_lock($1)")
        .bind(SCHEDULER_LOCK_KEY)
        .fetch_value(tx)
        .await?;
    Ok(locked == Some(true))
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
    insert_run(
        schedule_id,
        scheduled_for,
        outcome,
        detail,
        "on conflict (schedule_id, scheduled_for) do nothing returning id",
    )
    .fetch_value(tx)
    .await
}

/// Records many missed occurrences at once, skipping recorded ones; how
/// many were new.
pub(super) async fn record_missed(
    tx: &mut PgConnection,
    schedule_id: Uuid,
    occurrences: &[DateTime<Utc>],
    detail: &str,
) -> Result<u64> {
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
