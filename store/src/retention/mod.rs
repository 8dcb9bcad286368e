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
//! `postgres.rs` and `mysql.rs` hold each backend's statements; MySQL's
//! lock is `GET_LOCK` on one held connection (see [`RetentionLock`]).

mod mysql;
mod postgres;

use chrono::{DateTime, Utc};
use sqlx::pool::PoolConnection;
use sqlx::{MySql, Postgres};
use uuid::Uuid;

use crate::database::{on_backend, Database};
use crate::{Result, StoreError};

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
    let db = db.into();
    on_backend!(db, delete_expired(cutoff, batch))
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
    let db = db.into();
    let mut collected = Collected::default();
    on_backend!(db, collect_stacks(batch, &mut collected))?;
    on_backend!(db, collect_frames(batch, &mut collected))?;
    Ok(collected)
}

fn frame_ids(bytes: &[u8]) -> Result<impl Iterator<Item = Uuid> + '_> {
    if !bytes.len().is_multiple_of(16) {
        return Err(StoreError::Corrupt(format!(
            "stack frame list of {} bytes",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(16)
        .map(|c| Uuid::from_slice(c).expect("chunks are 16 bytes")))
}
