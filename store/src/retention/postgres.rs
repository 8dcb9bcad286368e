//! Retention in Postgres: advisory locks, data-modifying CTEs and
//! `lock table … in share mode`.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{WindowsGone, RETENTION_LOCK_KEY};
use crate::Result;

/// Takes the session advisory lock on `conn` when no one holds it; it is
/// held until [`unlock`] or the connection closes.
pub(super) async fn try_lock(conn: &mut PgConnection) -> Result<bool> {
    let (locked,): (bool,) = sqlx::query_as("select pg_try_advisory_lock($1)")
        .bind(RETENTION_LOCK_KEY)
        .fetch_one(conn)
        .await?;
    Ok(locked)
}

pub(super) async fn unlock(conn: &mut PgConnection) -> Result<()> {
    sqlx::query("select pg_advisory_unlock($1)")
        .bind(RETENTION_LOCK_KEY)
        .execute(conn)
        .await?;
    Ok(())
}

/// Deletes at most `batch` windows that ended before `cutoff` (their
/// samples and thread names with them, on delete cascade).
pub(super) async fn delete_windows(
    tx: &mut PgConnection,
    cutoff: DateTime<Utc>,
    batch: u32,
) -> Result<WindowsGone> {
    let (snapshots, samples, compacted): (i64, Option<i64>, Vec<Uuid>) = sqlx::query_as(
        "with doomed as (
             select id from snapshots where window_end < $1 order by id limit $2
             for update skip locked
         ), gone as (
             delete from snapshots n using doomed where n.id = doomed.id
             returning n.samples, n.profile_id, n.compacted
         )
         select count(*), sum(samples)::bigint,
                coalesce(array_agg(distinct profile_id) filter (where compacted), '{}')
         from gone",
    )
    .bind(cutoff)
    .bind(i64::from(batch))
    .fetch_one(tx)
    .await?;
    Ok(WindowsGone {
        snapshots: snapshots as u64,
        samples: samples.unwrap_or(0) as u64,
        compacted,
    })
}

/// Deletes at most `batch` profiles that ended before `cutoff` and have
/// no window left, with their detections, alert deliveries, events and
/// blocks; how many.
pub(super) async fn delete_profiles(
    pool: &PgPool,
    cutoff: DateTime<Utc>,
    batch: u32,
) -> Result<u64> {
    let profiles: i64 = sqlx::query_scalar(
        "with doomed as (
             select p.id from profiles p
             where p.status in ('finished', 'stopped', 'failed', 'expired')
               and coalesce(p.finished_at, p.updated_at) < $1
               and not exists (select 1 from snapshots n where n.profile_id = p.id)
             limit $2
             for update skip locked
         ), gone as (
             delete from profiles p using doomed where p.id = doomed.id returning p.id
         ), detections_gone as (
             delete from detections d using gone where d.profile_id = gone.id
         ), deliveries_gone as (
             delete from alert_deliveries a using gone where a.profile_id = gone.id
         ), events_gone as (
             delete from profile_events e using gone where e.profile_id = gone.id
         ), blocks_gone as (
             delete from profile_blocks b using gone where b.profile_id = gone.id
         )
         select count(*) from gone",
    )
    .bind(cutoff)
    .bind(i64::from(batch))
    .fetch_one(pool)
    .await?;
    Ok(profiles as u64)
}

/// Waits for the transactions writing stacks, and keeps new ones out
/// until the transaction ends.
pub(super) const LOCK_STACKS: &str = "lock table stacks in share mode";

/// The time now, not at the transaction's start (`now()`), which came
/// before the lock was taken.
pub(super) const CLOCK: &str = "select clock_timestamp()";
