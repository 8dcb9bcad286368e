//! Retention in MySQL and MariaDB. Postgres' data-modifying CTEs become
//! statements in one transaction (lock the batch `for update skip
//! locked`, read what Postgres' `returning` gave, delete); the advisory
//! lock is `GET_LOCK`, session-scoped, so it is released explicitly on
//! the same connection; `lock table stacks in share mode` is a locking
//! read of every stack (`lock in share mode`: MariaDB has no `for share`),
//! which under REPEATABLE READ also locks the gaps, so it waits for
//! writing transactions and blocks new stacks until commit, as the
//! Postgres share lock does.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use sqlx::{MySqlConnection, MySqlPool};
use uuid::Uuid;

use super::WindowsGone;
use crate::sql::mysql_lists::execute_in;
use crate::Result;

/// The lock's name: per database, at most 64 characters.
const LOCK_NAME: &str = "concat(left(database(), 50), '.odp-retention')";

/// `GET_LOCK` with no wait: 1 taken, 0 held elsewhere.
pub(super) async fn try_lock(conn: &mut MySqlConnection) -> Result<bool> {
    let taken: Option<i64> = sqlx::query_scalar(&format!("select get_lock({LOCK_NAME}, 0)"))
        .fetch_one(conn)
        .await?;
    Ok(taken == Some(1))
}

pub(super) async fn unlock(conn: &mut MySqlConnection) -> Result<()> {
    sqlx::query(&format!("select release_lock({LOCK_NAME})"))
        .execute(conn)
        .await?;
    Ok(())
}

/// Deletes at most `batch` windows that ended before `cutoff` (their
/// samples and thread names with them, on delete cascade).
pub(super) async fn delete_windows(
    tx: &mut MySqlConnection,
    cutoff: DateTime<Utc>,
    batch: u32,
) -> Result<WindowsGone> {
    let doomed: Vec<(i64, i64, Uuid, bool)> = sqlx::query_as(
        "select id, samples, profile_id, compacted from snapshots
         where window_end < ? order by id limit ? for update skip locked",
    )
    .bind(cutoff)
    .bind(i64::from(batch))
    .fetch_all(&mut *tx)
    .await?;
    let ids: Vec<i64> = doomed.iter().map(|d| d.0).collect();
    execute_in(tx, "delete from snapshots where id in ", &ids, "").await?;
    let compacted: BTreeSet<Uuid> = doomed.iter().filter(|d| d.3).map(|d| d.2).collect();
    Ok(WindowsGone {
        snapshots: ids.len() as u64,
        samples: doomed.iter().map(|d| d.1 as u64).sum(),
        compacted: compacted.into_iter().collect(),
    })
}

/// Deletes at most `batch` profiles that ended before `cutoff` and have
/// no window left, with their detections, alert deliveries, events and
/// blocks; how many.
pub(super) async fn delete_profiles(
    pool: &MySqlPool,
    cutoff: DateTime<Utc>,
    batch: u32,
) -> Result<u64> {
    let mut tx = pool.begin().await?;
    let doomed: Vec<Uuid> = sqlx::query_scalar(
        "select p.id from profiles p
         where p.status in ('finished', 'stopped', 'failed', 'expired')
           and coalesce(p.finished_at, p.updated_at) < ?
           and not exists (select 1 from snapshots n where n.profile_id = p.id)
         limit ?
         for update skip locked",
    )
    .bind(cutoff)
    .bind(i64::from(batch))
    .fetch_all(&mut *tx)
    .await?;
    for table in [
        "detections",
        "alert_deliveries",
        "profile_events",
        "profile_blocks",
    ] {
        execute_in(
            &mut tx,
            &format!("delete from {table} where profile_id in "),
            &doomed,
            "",
        )
        .await?;
    }
    let profiles = execute_in(&mut tx, "delete from profiles where id in ", &doomed, "").await?;
    tx.commit().await?;
    Ok(profiles)
}

/// Waits for the transactions writing stacks, and keeps new ones out
/// until the transaction ends.
pub(super) const LOCK_STACKS: &str = "select count(*) from stacks lock in share mode";

/// The time now.
pub(super) const CLOCK: &str = "select now(6)";
