//! Retention in MySQL and MariaDB. Postgres' data-modifying CTEs become
//! statements in one transaction (lock the batch `for update skip
//! locked`, read what Postgres' `returning` gave, delete); the advisory
//! lock is `GET_LOCK`, session-scoped, so it is released explicitly on
//! the same connection; `lock table stacks in share mode` is a locking
//! read of every stack (`lock in share mode`: MariaDB has no `for share`),
//! which under REPEATABLE READ also locks the gaps, so it waits for
//! writing transactions and blocks new stacks until commit, as the
//! Postgres share lock does.

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{Connection, MySqlConnection, MySqlPool};
use uuid::Uuid;

use super::{frame_ids, Collected, Expired};
use crate::blocks::mysql::{execute_in, rewrite_block};
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

pub(super) async fn delete_expired(
    pool: &MySqlPool,
    cutoff: DateTime<Utc>,
    batch: u32,
) -> Result<Expired> {
    let mut expired = Expired::default();
    loop {
        let mut tx = pool.begin().await?;
        let doomed: Vec<(i64, i64, Uuid, bool)> = sqlx::query_as(
            "select id, samples, profile_id, compacted from snapshots
             where window_end < ? order by id limit ? for update skip locked",
        )
        .bind(cutoff)
        .bind(i64::from(batch))
        .fetch_all(&mut *tx)
        .await?;
        let ids: Vec<i64> = doomed.iter().map(|d| d.0).collect();
        // Samples and thread names go with their window (on delete cascade).
        execute_in(&mut tx, "delete from snapshots where id in ", &ids, "").await?;
        let compacted: BTreeSet<Uuid> = doomed.iter().filter(|d| d.3).map(|d| d.2).collect();
        // The windows compacted into their profile's block leave it too.
        let cutoff_ms = cutoff.timestamp_millis();
        for profile_id in compacted {
            rewrite_block(&mut tx, profile_id, |p| {
                p.retain_windows(|w| w.end_ms >= cutoff_ms)
            })
            .await?;
        }
        tx.commit().await?;
        expired.snapshots += ids.len() as u64;
        expired.samples += doomed.iter().map(|d| d.1 as u64).sum::<u64>();
        if ids.len() < batch as usize {
            break;
        }
    }
    // The same windows leave the services' rollups.
    let mut conn = pool.acquire().await?;
    crate::pool::mysql::read_committed(&mut conn).await?;
    let mut tx = conn.begin().await?;
    let hours: Vec<DateTime<Utc>> =
        sqlx::query_scalar("select `hour` from service_rollups where `hour` < ?")
            .bind(cutoff)
            .fetch_all(&mut *tx)
            .await?;
    let cutoff_ms = cutoff.timestamp_millis();
    crate::rollups::mysql::rewrite(&mut tx, &hours, move |p| {
        p.retain_windows(|w| w.end_ms >= cutoff_ms)
    })
    .await?;
    tx.commit().await?;
    loop {
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
        let profiles =
            execute_in(&mut tx, "delete from profiles where id in ", &doomed, "").await?;
        tx.commit().await?;
        expired.profiles += profiles;
        if doomed.len() < batch as usize {
            break;
        }
    }
    Ok(expired)
}

pub(super) async fn collect_stacks(
    pool: &MySqlPool,
    batch: u32,
    collected: &mut Collected,
) -> Result<()> {
    let mut after = Uuid::nil();
    loop {
        let ids: Vec<Uuid> =
            sqlx::query_scalar("select id from stacks where id > ? order by id limit ?")
                .bind(after)
                .bind(i64::from(batch))
                .fetch_all(pool)
                .await?;
        let Some(&last) = ids.last() else {
            return Ok(());
        };
        after = last;
        let mut conn = pool.acquire().await?;
        let deleted = execute_in(
            &mut conn,
            "delete from stacks where not exists
                 (select 1 from samples x where x.stack_id = stacks.id) and id in ",
            &ids,
            "",
        )
        .await;
        match deleted {
            Ok(done) => collected.stacks += done,
            Err(crate::StoreError::Database(sqlx::Error::Database(db)))
                if db.is_foreign_key_violation() =>
            {
                tracing::debug!(after = %last, "stack referenced by a concurrent ingest, batch skipped");
                collected.stack_batches_skipped += 1;
            }
            Err(e) => return Err(e),
        }
        if ids.len() < batch as usize {
            return Ok(());
        }
    }
}

/// Waits for the transactions writing stacks and keeps new ones out until
/// `tx` ends (see the module documentation).
async fn lock_stacks(tx: &mut MySqlConnection) -> Result<()> {
    sqlx::query("select count(*) from stacks lock in share mode")
        .execute(tx)
        .await?;
    Ok(())
}

pub(super) async fn collect_frames(
    pool: &MySqlPool,
    batch: u32,
    collected: &mut Collected,
) -> Result<()> {
    // The mark starts after every stack written before `marked_at` is
    // committed; a stack written later gets a later `stored_at`.
    let marked_at: DateTime<Utc> = {
        let mut tx = pool.begin().await?;
        lock_stacks(&mut tx).await?;
        let at = sqlx::query_scalar("select now(6)")
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        at
    };
    let mut referenced: HashSet<Uuid> = HashSet::new();
    let mut after = Uuid::nil();
    loop {
        let rows: Vec<(Uuid, Vec<u8>)> =
            sqlx::query_as("select id, frame_ids from stacks where id > ? order by id limit ?")
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
            sqlx::query_scalar("select id from frames where id > ? order by id limit ?")
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
            lock_stacks(&mut tx).await?;
            let recent: Vec<Vec<u8>> =
                sqlx::query_scalar("select frame_ids from stacks where stored_at >= ?")
                    .bind(marked_at)
                    .fetch_all(&mut *tx)
                    .await?;
            let mut spared = HashSet::new();
            for bytes in &recent {
                spared.extend(frame_ids(bytes)?);
            }
            candidates.retain(|id| !spared.contains(id));
            let deleted =
                execute_in(&mut tx, "delete from frames where id in ", &candidates, "").await?;
            tx.commit().await?;
            collected.frames += deleted;
        }
        if ids.len() < batch as usize {
            return Ok(());
        }
    }
}
