//! Retention: expired windows and profiles deleted, then the frames and
//! stacks nothing references any more.
//!
//! Everything runs in short transactions of at most `batch` rows, so no
//! lock is held for long while ingest goes on. Only one process should run
//! it at a time: callers hold the [`RetentionLock`].
//!
//! Stacks are protected by the `samples → stacks` foreign key: a stack is
//! deleted only when no sample references it, and should an ingest insert
//! a sample of it concurrently, one of the two statements fails on the
//! foreign key (ingest then stores the batch again with its cache of
//! stored ids cleared; collection skips that batch until its next run).
//! Frames have no such key (a stack holds its frame ids as bytes), so they
//! are collected mark and sweep: the mark reads every stack's frames, and
//! each sweep batch, holding a `share` lock on `stacks` for a moment, also
//! spares the frames of stacks written since the mark started.
//!
//! `postgres.rs` and `mysql.rs` hold what differs: the lock (MySQL's is
//! `GET_LOCK` on one held connection, see [`RetentionLock`]), the deletes
//! Postgres writes as data-modifying CTEs, and the share lock on stacks.

mod mysql;
mod postgres;

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use sqlx::pool::PoolConnection;
use sqlx::{MySql, Postgres};
use uuid::Uuid;

use crate::blocks::{frame_ids, rewrite_block};
use crate::database::{on_backend, Database};
use crate::sql::mysql_lists::execute_any;
use crate::sql::{Sql, Tx};
use crate::{rollups, Result, StoreError};

/// Advisory lock key held by whoever runs retention and downsampling.
pub const RETENTION_LOCK_KEY: i64 = 0x4f44_5052_4554_4e54;

/// The retention lock, held on a connection of its own until
/// [`RetentionLock::release`]: Postgres' session advisory lock, or on
/// MySQL `GET_LOCK` (named per database, since lock names are
/// server-wide). Dropped unreleased, its connection is closed rather than
/// returned to the pool, so the server frees the lock with the session.
pub struct RetentionLock {
    conn: Option<LockConnection>,
}

enum LockConnection {
    Postgres(PoolConnection<Postgres>),
    MySql(PoolConnection<MySql>),
}

impl RetentionLock {
    /// Takes the lock when no one holds it; `None` when someone does.
    pub async fn try_acquire(db: impl Into<Database>) -> Result<Option<RetentionLock>> {
        let conn = match db.into() {
            Database::Postgres(pool) => {
                let mut conn = pool.acquire().await?;
                if !postgres::try_lock(&mut conn).await? {
                    return Ok(None);
                }
                LockConnection::Postgres(conn)
            }
            Database::MySql(pool) => {
                let mut conn = pool.acquire().await?;
                if !mysql::try_lock(&mut conn).await? {
                    return Ok(None);
                }
                LockConnection::MySql(conn)
            }
        };
        Ok(Some(RetentionLock { conn: Some(conn) }))
    }

    /// Releases the lock; should that fail, the connection is closed,
    /// which releases it too.
    pub async fn release(mut self) -> Result<()> {
        let released = match self.conn.as_mut() {
            Some(LockConnection::Postgres(conn)) => postgres::unlock(conn).await,
            Some(LockConnection::MySql(conn)) => mysql::unlock(conn).await,
            None => Ok(()),
        };
        if released.is_ok() {
            // Back to the pool, lock released.
            self.conn = None;
        }
        released
    }
}

impl Drop for RetentionLock {
    fn drop(&mut self) {
        match self.conn.take() {
            Some(LockConnection::Postgres(mut conn)) => conn.close_on_drop(),
            Some(LockConnection::MySql(mut conn)) => conn.close_on_drop(),
            None => {}
        }
    }
}

/// What [`delete_expired`] removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Expired {
    pub snapshots: u64,
    pub samples: u64,
    pub profiles: u64,
}

/// Deletes every window that ended before `cutoff` (its samples and
/// thread names with it), then the profiles that ended before `cutoff`
/// and have no window left, with their detections, alert deliveries and
/// events.
pub async fn delete_expired(
    db: impl Into<Database>,
    cutoff: DateTime<Utc>,
    batch: u32,
) -> Result<Expired> {
    let db: Database = db.into();
    let mut expired = Expired::default();
    let cutoff_ms = cutoff.timestamp_millis();
    loop {
        let mut tx = db.begin().await?;
        let gone = match &mut tx {
            Tx::Postgres(tx) => postgres::delete_windows(tx, cutoff, batch).await?,
            Tx::MySql(tx) => mysql::delete_windows(tx, cutoff, batch).await?,
        };
        // The windows compacted into their profile's block leave it too.
        for &profile_id in &gone.compacted {
            rewrite_block(&mut tx, profile_id, |p| {
                p.retain_windows(|w| w.end_ms >= cutoff_ms)
            })
            .await?;
        }
        tx.commit().await?;
        expired.snapshots += gone.snapshots;
        expired.samples += gone.samples;
        if gone.snapshots < u64::from(batch) {
            break;
        }
    }
    // The same windows leave the services' rollups.
    let mut tx = rollups::begin_rewrite(&db).await?;
    let hours: Vec<DateTime<Utc>> = Sql::new("select hour from service_rollups where hour < $1")
        .bind(cutoff)
        .fetch_column(&mut tx)
        .await?;
    rollups::rewrite(&mut tx, &hours, move |p| {
        p.retain_windows(|w| w.end_ms >= cutoff_ms)
    })
    .await?;
    tx.commit().await?;
    loop {
        let profiles = on_backend!(db, delete_profiles(cutoff, batch))?;
        expired.profiles += profiles;
        if profiles < u64::from(batch) {
            break;
        }
    }
    Ok(expired)
}

/// One batch of expired windows, deleted.
struct WindowsGone {
    snapshots: u64,
    samples: u64,
    /// The profiles whose blocks held some of them, in order.
    compacted: Vec<Uuid>,
}

/// What [`collect_garbage`] removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Collected {
    pub stacks: u64,
    pub frames: u64,
    /// Stack batches skipped because an ingest referenced one of their
    /// stacks meanwhile; they are looked at again next run.
    pub stack_batches_skipped: u64,
}

/// Deletes the stacks no sample references, then the frames no stack
/// references, `batch` rows at a time.
pub async fn collect_garbage(db: impl Into<Database>, batch: u32) -> Result<Collected> {
    let db: Database = db.into();
    let mut collected = Collected::default();
    collect_stacks(&db, batch, &mut collected).await?;
    collect_frames(&db, batch, &mut collected).await?;
    Ok(collected)
}

async fn collect_stacks(db: &Database, batch: u32, collected: &mut Collected) -> Result<()> {
    let mut pages = IdPages::new("stacks", batch);
    while let Some(ids) = pages.next(db).await? {
        let deleted = execute_any(
            db,
            "delete from stacks where stacks.id = any($1)
               and not exists (select 1 from samples x where x.stack_id = stacks.id)",
            &ids,
        )
        .await;
        match deleted {
            Ok(deleted) => collected.stacks += deleted,
            Err(StoreError::Database(sqlx::Error::Database(e))) if e.is_foreign_key_violation() => {
                let after = ids.last().copied().unwrap_or_default();
                tracing::debug!(%after, "stack referenced by a concurrent ingest, batch skipped");
                collected.stack_batches_skipped += 1;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn collect_frames(db: &Database, batch: u32, collected: &mut Collected) -> Result<()> {
    // The mark starts after every stack written before `marked_at` is
    // committed: taking the share lock waits for the transactions that are
    // writing stacks, and a stack written later gets a later `stored_at`.
    let marked_at: DateTime<Utc> = {
        let mut tx = db.begin().await?;
        lock_stacks(&mut tx).await?;
        let clock = match &tx {
            Tx::Postgres(_) => postgres::CLOCK,
            Tx::MySql(_) => mysql::CLOCK,
        };
        let (at,): (DateTime<Utc>,) = Sql::new(clock).fetch_one(&mut tx).await?;
        tx.commit().await?;
        at
    };
    let mut referenced: HashSet<Uuid> = HashSet::new();
    let mut after = Uuid::nil();
    loop {
        let rows: Vec<(Uuid, Vec<u8>)> =
            Sql::new("select id, frame_ids from stacks where id > $1 order by id limit $2")
                .bind(after)
                .bind(i64::from(batch))
                .fetch_all(db)
                .await?;
        let Some((last, _)) = rows.last() else { break };
        after = *last;
        for (id, bytes) in &rows {
            referenced.extend(frame_ids(*id, bytes)?);
        }
        if rows.len() < batch as usize {
            break;
        }
    }

    let mut pages = IdPages::new("frames", batch);
    while let Some(ids) = pages.next(db).await? {
        let mut candidates: Vec<Uuid> = ids
            .iter()
            .filter(|id| !referenced.contains(id))
            .copied()
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let mut tx = db.begin().await?;
        lock_stacks(&mut tx).await?;
        let recent: Vec<(Uuid, Vec<u8>)> =
            Sql::new("select id, frame_ids from stacks where stored_at >= $1")
                .bind(marked_at)
                .fetch_all(&mut tx)
                .await?;
        let mut spared = HashSet::new();
        for (id, bytes) in &recent {
            spared.extend(frame_ids(*id, bytes)?);
        }
        candidates.retain(|id| !spared.contains(id));
        let deleted = execute_any(
            &mut tx,
            "delete from frames where id = any($1)",
            &candidates,
        )
        .await?;
        tx.commit().await?;
        collected.frames += deleted;
    }
    Ok(())
}

/// A table's ids in order, `batch` at a time.
struct IdPages {
    table: &'static str,
    batch: u32,
    /// The last id read, `None` once the last page is read.
    after: Option<Uuid>,
}

impl IdPages {
    fn new(table: &'static str, batch: u32) -> IdPages {
        IdPages {
            table,
            batch,
            after: Some(Uuid::nil()),
        }
    }

    /// The next page of ids; `None` when there is none.
    async fn next(&mut self, db: &Database) -> Result<Option<Vec<Uuid>>> {
        let Some(after) = self.after else {
            return Ok(None);
        };
        let ids: Vec<Uuid> = Sql::new(format!(
            "select id from {} where id > $1 order by id limit $2",
            self.table
        ))
        .bind(after)
        .bind(i64::from(self.batch))
        .fetch_column(db)
        .await?;
        // A page shorter than `batch` is the last.
        self.after = ids
            .last()
            .copied()
            .filter(|_| ids.len() == self.batch as usize);
        Ok((!ids.is_empty()).then_some(ids))
    }
}

/// Waits for the transactions writing stacks and keeps new ones out until
/// `tx` ends (see the module documentation).
async fn lock_stacks(tx: &mut Tx) -> Result<()> {
    let lock = match tx {
        Tx::Postgres(_) => postgres::LOCK_STACKS,
        Tx::MySql(_) => mysql::LOCK_STACKS,
    };
    Sql::new(lock).execute(tx).await?;
    Ok(())
}
