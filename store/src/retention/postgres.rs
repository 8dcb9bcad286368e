//! Retention in Postgres: data-modifying CTEs, advisory locks and
//! `lock table … in share mode`.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{frame_ids, Collected, Expired, RETENTION_LOCK_KEY};
use crate::blocks::postgres::rewrite_block;
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

pub(super) async fn delete_expired(
    pool: &PgPool,
    cutoff: DateTime<Utc>,
    batch: u32,
) -> Result<Expired> {
    let mut expired = Expired::default();
    loop {
        let mut tx = pool.begin().await?;
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
        .fetch_one(&mut *tx)
        .await?;
        // The windows compacted into their profile's block leave it too.
        let cutoff_ms = cutoff.timestamp_millis();
        for profile_id in compacted {
            rewrite_block(&mut tx, profile_id, |p| {
                p.retain_windows(|w| w.end_ms >= cutoff_ms)
            })
            .await?;
        }
        tx.commit().await?;
        expired.snapshots += snapshots as u64;
        expired.samples += samples.unwrap_or(0) as u64;
        if snapshots < i64::from(batch) {
            break;
        }
    }
    // The same windows leave the services' rollups.
    let mut tx = pool.begin().await?;
    let hours: Vec<DateTime<Utc>> =
        sqlx::query_scalar("select hour from service_rollups where hour < $1")
            .bind(cutoff)
            .fetch_all(&mut *tx)
            .await?;
    let cutoff_ms = cutoff.timestamp_millis();
    crate::rollups::postgres::rewrite(&mut tx, &hours, move |p| {
        p.retain_windows(|w| w.end_ms >= cutoff_ms)
    })
    .await?;
    tx.commit().await?;
    loop {
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
        expired.profiles += profiles as u64;
        if profiles < i64::from(batch) {
            break;
        }
    }
    Ok(expired)
}

pub(super) async fn collect_stacks(
    pool: &PgPool,
    batch: u32,
    collected: &mut Collected,
) -> Result<()> {
    let mut after = Uuid::nil();
    loop {
        let ids: Vec<Uuid> =
            sqlx::query_scalar("select id from stacks where id > $1 order by id limit $2")
                .bind(after)
                .bind(i64::from(batch))
                .fetch_all(pool)
                .await?;
        let Some(&last) = ids.last() else {
            return Ok(());
        };
        after = last;
        let deleted = sqlx::query(
            "delete from stacks s where s.id = any($1)
               and not exists (select 1 from samples x where x.stack_id = s.id)",
        )
        .bind(&ids)
        .execute(pool)
        .await;
        match deleted {
            Ok(done) => collected.stacks += done.rows_affected(),
            Err(sqlx::Error::Database(db)) if db.is_foreign_key_violation() => {
                tracing::debug!(after = %last, "stack referenced by a concurrent ingest, batch skipped");
                collected.stack_batches_skipped += 1;
            }
            Err(e) => return Err(e.into()),
        }
        if ids.len() < batch as usize {
            return Ok(());
        }
    }
}

pub(super) async fn collect_frames(
    pool: &PgPool,
    batch: u32,
    collected: &mut Collected,
) -> Result<()> {
    // The mark starts after every stack written before `marked_at` is
    // committed: taking the share lock waits for the transactions that are
    // writing stacks, and a stack written later gets a later `stored_at`.
    let marked_at: DateTime<Utc> = {
        let mut tx = pool.begin().await?;
        sqlx::query("lock table stacks in share mode")
            .execute(&mut *tx)
            .await?;
        let at = sqlx::query_scalar("select clock_timestamp()")
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        at
    };
    let mut referenced: HashSet<Uuid> = HashSet::new();
    let mut after = Uuid::nil();
    loop {
        let rows: Vec<(Uuid, Vec<u8>)> =
            sqlx::query_as("select id, frame_ids from stacks where id > $1 order by id limit $2")
                .bind(after)
                .bind(i64::from(batch))
                .fetch_all(pool)
                .await?;
        let Some((last, _)) = rows.last() else { break };
        after = *last;
        for (_, bytes) in &rows {
            referenced.extend(frame_ids(bytes)?);
        }
        if rows.len() < batch as usize {
            break;
        }
    }

    let mut after = Uuid::nil();
    loop {
        let ids: Vec<Uuid> =
            sqlx::query_scalar("select id from frames where id > $1 order by id limit $2")
                .bind(after)
                .bind(i64::from(batch))
                .fetch_all(pool)
                .await?;
        let Some(&last) = ids.last() else {
            return Ok(());
        };
        after = last;
        let mut candidates: Vec<Uuid> = ids
            .iter()
            .filter(|id| !referenced.contains(id))
            .copied()
            .collect();
        if !candidates.is_empty() {
            let mut tx = pool.begin().await?;
            sqlx::query("lock table stacks in share mode")
                .execute(&mut *tx)
                .await?;
            let recent: Vec<Vec<u8>> =
                sqlx::query_scalar("select frame_ids from stacks where stored_at >= $1")
                    .bind(marked_at)
                    .fetch_all(&mut *tx)
                    .await?;
            let mut spared = HashSet::new();
            for bytes in &recent {
                spared.extend(frame_ids(bytes)?);
            }
            candidates.retain(|id| !spared.contains(id));
            let deleted = sqlx::query("delete from frames where id = any($1)")
                .bind(&candidates)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            collected.frames += deleted.rows_affected();
        }
        if ids.len() < batch as usize {
            return Ok(());
        }
    }
}
