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

use super::{mysql, postgres, Fired, RunOutcome, ScheduleRow};
use crate::database::Database;
use crate::sql::{On, Sql};
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
        Sql::new(
            "select * from schedules
             where enabled and next_run_at <= $1
             order by next_run_at
             limit $2
             for update skip locked",
        )
        .bind(now)
        .bind(limit)
        .fetch_all(self.on())
        .await
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
        match &mut self.tx {
            TickTx::Postgres(tx) => {
                postgres::claim_run(tx, schedule_id, scheduled_for, outcome, detail).await
            }
            TickTx::MySql(tick) => {
                mysql::claim_run(&mut tick.conn, schedule_id, scheduled_for, outcome, detail).await
            }
        }
    }

    /// Records missed occurrences, skipping recorded ones; how many were
    /// new.
    pub async fn record_missed(
        &mut self,
        schedule_id: Uuid,
        occurrences: &[DateTime<Utc>],
        detail: &str,
    ) -> Result<u64> {
        if occurrences.is_empty() {
            return Ok(0);
        }
        match &mut self.tx {
            TickTx::Postgres(tx) => {
                postgres::record_missed(tx, schedule_id, occurrences, detail).await
            }
            TickTx::MySql(tick) => {
                mysql::record_missed(&mut tick.conn, schedule_id, occurrences, detail).await
            }
        }
    }

    /// Sets the final outcome of a claimed run and what it fired, if
    /// anything.
    pub async fn finish_run(
        &mut self,
        run_id: i64,
        outcome: RunOutcome,
        fired: Fired,
        detail: Option<&str>,
    ) -> Result<()> {
        let (column, started) = match fired {
            Fired::Profile(profile) => ("profile_id", profile),
            Fired::Run(run) => ("run_id", run),
        };
        Sql::new(format!(
            "update schedule_runs set outcome = $2, {column} = $3, detail = $4, fired_at = {{now}}
             where id = $1"
        ))
        .bind(run_id)
        .bind(outcome.as_str())
        .bind(started)
        .bind(detail)
        .execute(self.on())
        .await?;
        Ok(())
    }

    /// Moves a schedule on: its next occurrence, and when it last fired
    /// (unchanged when `fired_at` is `None`).
    pub async fn advance(
        &mut self,
        schedule_id: Uuid,
        next_run_at: Option<DateTime<Utc>>,
        fired_at: Option<DateTime<Utc>>,
    ) -> Result<()> {
        // MySQL assigns `set` clauses left to right: `last_run_at`'s
        // `coalesce` reads only that column, which no clause before it sets.
        Sql::new(
            "update schedules set next_run_at = $2, last_run_at = coalesce($3, last_run_at)
             where id = $1",
        )
        .bind(schedule_id)
        .bind(next_run_at)
        .bind(fired_at)
        .execute(self.on())
        .await?;
        Ok(())
    }

    /// The tick's connection, for the statements both backends share.
    fn on(&mut self) -> On<'_> {
        match &mut self.tx {
            TickTx::Postgres(tx) => On::from(&mut **tx),
            TickTx::MySql(tick) => On::from(&mut *tick.conn),
        }
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
