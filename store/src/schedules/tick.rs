//! One scheduler tick's transaction on either backend.
//!
//! Postgres holds its scheduler lock with `pg_try_advisory_xact_lock`,
//! which ends with the transaction however the transaction ends. MySQL's
//! `GET_LOCK` belongs to the session instead and outlives the transaction:
//! a connection returned to the pool would keep holding it, and no replica
//! would fire again. So on MySQL the tick holds a pooled connection of its
//! own, releases the lock after `commit` or `rollback`, and when it is
//! dropped without either (an error passed up with `?`, a cancelled task)
//! closes that connection rather than returning it: the server ends the
//! session, which rolls the transaction back and frees the lock.

use chrono::{DateTime, Utc};
use sqlx::mysql::MySqlTransactionManager;
use sqlx::pool::PoolConnection;
use sqlx::{MySql, Postgres, Transaction, TransactionManager};
use uuid::Uuid;

use super::{mysql, postgres, RunOutcome, ScheduleRow};
use crate::database::Database;
use crate::Result;

/// The transaction one scheduler tick runs in: take the lock
/// ([`SchedulerTick::try_lock`]), select the [`due`](SchedulerTick::due)
/// schedules, claim, record and finish their runs, advance them, then
/// [`commit`](SchedulerTick::commit). Only one tick across all replicas
/// holds the lock at a time, and each occurrence is claimed at most once
/// even without it (the run's unique `(schedule_id, scheduled_for)`).
pub struct SchedulerTick {
    tx: TickTx,
}

enum TickTx {
    Postgres(Transaction<'static, Postgres>),
    MySql(MySqlTick),
}

/// Runs `$f` of the backend's module on the tick's connection.
macro_rules! on_tick {
    ($tick:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match &mut $tick.tx {
            TickTx::Postgres(tx) => postgres::$f(&mut **tx, $($arg),*).await,
            TickTx::MySql(tick) => mysql::$f(&mut *tick.conn, $($arg),*).await,
        }
    };
}

impl SchedulerTick {
    /// Opens the tick's transaction, without the lock yet.
    pub async fn begin(db: impl Into<Database>) -> Result<SchedulerTick> {
        let tx = match db.into() {
            Database::Postgres(pool) => TickTx::Postgres(pool.begin().await?),
            Database::MySql(pool) => TickTx::MySql(MySqlTick::begin(pool.acquire().await?).await?),
        };
        Ok(SchedulerTick { tx })
    }

    /// Takes the scheduler lock until the tick ends; `false` when another
    /// tick (another replica) holds it. Taking it again is a no-op.
    pub async fn try_lock(&mut self) -> Result<bool> {
        match &mut self.tx {
            TickTx::Postgres(tx) => postgres::try_scheduler_lock(tx).await,
            TickTx::MySql(tick) => tick.try_lock().await,
        }
    }

    /// Enabled schedules whose next run is at or before `now`, oldest
    /// first, locked until the tick ends; rows another tick holds are
    /// skipped.
    pub async fn due(&mut self, now: DateTime<Utc>, limit: i64) -> Result<Vec<ScheduleRow>> {
        on_tick!(self, due(now, limit))
    }

    /// Records one occurrence's outcome unless it was recorded before;
    /// `None` when it was (another scheduler got there first: do not
    /// fire), else the run's id. A concurrent uncommitted claim of the same
    /// occurrence makes this wait for that tick's end.
    pub async fn claim_run(
        &mut self,
        schedule_id: Uuid,
        scheduled_for: DateTime<Utc>,
        outcome: RunOutcome,
        detail: Option<&str>,
    ) -> Result<Option<i64>> {
        on_tick!(self, claim_run(schedule_id, scheduled_for, outcome, detail))
    }

    /// Records missed occurrences, skipping recorded ones; how many were
    /// new.
    pub async fn record_missed(
        &mut self,
        schedule_id: Uuid,
        occurrences: &[DateTime<Utc>],
        detail: &str,
    ) -> Result<u64> {
        on_tick!(self, record_missed(schedule_id, occurrences, detail))
    }

    /// Sets the final outcome of a claimed run.
    pub async fn finish_run(
        &mut self,
        run_id: i64,
        outcome: RunOutcome,
        profile_id: Option<Uuid>,
        detail: Option<&str>,
    ) -> Result<()> {
        on_tick!(self, finish_run(run_id, outcome, profile_id, detail))
    }

    /// Moves a schedule on: its next occurrence, and when it last fired
    /// (unchanged when `fired_at` is `None`).
    pub async fn advance(
        &mut self,
        schedule_id: Uuid,
        next_run_at: Option<DateTime<Utc>>,
        fired_at: Option<DateTime<Utc>>,
    ) -> Result<()> {
        on_tick!(self, advance(schedule_id, next_run_at, fired_at))
    }

    /// Commits the tick's work and releases the lock.
    pub async fn commit(self) -> Result<()> {
        match self.tx {
            TickTx::Postgres(tx) => Ok(tx.commit().await?),
            TickTx::MySql(tick) => tick.end(Commit::Yes).await,
        }
    }

    /// Undoes the tick's work and releases the lock: what a caller does
    /// when an operation failed. (Dropping the tick also does, but on
    /// MySQL only once its connection has closed.)
    pub async fn rollback(self) -> Result<()> {
        match self.tx {
            TickTx::Postgres(tx) => Ok(tx.rollback().await?),
            TickTx::MySql(tick) => tick.end(Commit::No).await,
        }
    }
}

#[derive(PartialEq)]
enum Commit {
    Yes,
    No,
}

/// A MySQL connection in a transaction, maybe holding the scheduler lock.
struct MySqlTick {
    conn: PoolConnection<MySql>,
    /// Whether the transaction is open.
    open: bool,
    /// Whether this session may hold the scheduler lock: also set while
    /// asking for it, so a request whose answer was lost still gets
    /// released (releasing a lock not held is harmless).
    locked: bool,
}

impl MySqlTick {
    /// Starts a `read committed` transaction, as Postgres' default: under
    /// MySQL's `repeatable read`, `due`'s range read would also lock the
    /// gaps between schedules, blocking their creation for the whole tick.
    async fn begin(mut conn: PoolConnection<MySql>) -> Result<MySqlTick> {
        crate::pool::mysql::read_committed(&mut conn).await?;
        let mut tick = MySqlTick {
            conn,
            open: true,
            locked: false,
        };
        MySqlTransactionManager::begin(&mut tick.conn, None).await?;
        Ok(tick)
    }

    async fn try_lock(&mut self) -> Result<bool> {
        if !self.locked {
            self.locked = true;
            self.locked = mysql::get_scheduler_lock(&mut self.conn).await?;
        }
        Ok(self.locked)
    }

    /// Ends the transaction, then releases the lock. On any error `self`
    /// drops with its flags still set and closes the session.
    async fn end(mut self, commit: Commit) -> Result<()> {
        if commit == Commit::Yes {
            MySqlTransactionManager::commit(&mut self.conn).await?;
        } else {
            MySqlTransactionManager::rollback(&mut self.conn).await?;
        }
        self.open = false;
        if self.locked {
            mysql::release_scheduler_lock(&mut self.conn).await?;
            self.locked = false;
        }
        Ok(())
    }
}

impl Drop for MySqlTick {
    fn drop(&mut self) {
        if self.open || self.locked {
            self.conn.close_on_drop();
        }
    }
}
