//! The connection pool, and what keeps its connections trustworthy.
//!
//! sqlx 0.8 returns a connection to its pool whatever its caller did with
//! it, after a `Sync` round trip that drains the `ReadyForQuery` messages
//! the connection counts on. Two cancellations leave it counting wrong:
//!
//! - a COPY whose future is dropped once `CopyDone` is sent, while
//!   Postgres checks the rows (long for a large import, or behind a
//!   lock): COPY's `ReadyForQuery` is not counted, so every drain stops
//!   one message early and each later query on that connection reads a
//!   reply meant for an earlier one (no rows, another query's rows,
//!   `BEGIN` seeing an idle session);
//! - a `BEGIN` whose future is dropped before its answer: nothing rolls
//!   it back, and later callers run inside that transaction.
//!
//! So a connection handed back is checked before anyone else gets it
//! (`reusable`): after sqlx's drain it must answer a probe carrying a
//! fresh token, outside a transaction, within [`PROBE_TIMEOUT`], or it is
//! closed. A connection whose interrupted statement still runs or streams
//! cannot answer in time, so it is closed too; Postgres then ends that
//! statement within [`CONNECTION_CHECK_INTERVAL`] of the close (or at the
//! pool's `statement_timeout`). A connection whose server went away fails
//! the probe, or the ping sqlx sends before handing out an idle one.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

pub mod mysql;

use sqlx::pool::{Pool, PoolOptions};
use sqlx::{Executor as _, PgConnection, PgPool, Postgres, Row as _};

/// How long a released connection may take to answer the probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// How often Postgres checks, while running a statement, that the client
/// is still connected (`client_connection_check_interval`, Postgres 14+).
pub const CONNECTION_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// A timer of the caller's async runtime (this crate has none of its
/// own): a future that completes after the given time.
pub type Sleep = fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// How a service's pool behaves.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    pub max_connections: u32,
    /// How long a caller waits for a connection (an idle one, or a new
    /// one while Postgres refuses) before `PoolTimedOut`.
    pub acquire_timeout: Duration,
    /// The server cancels any statement running longer (Postgres'
    /// `statement_timeout`, MariaDB's `max_statement_time`, MySQL's
    /// `max_execution_time` for reads); none when `None`.
    pub statement_timeout: Option<Duration>,
    /// Bounds the check of released connections by [`PROBE_TIMEOUT`];
    /// without it the check waits for the answer however long it takes.
    pub sleep: Option<Sleep>,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(10),
            statement_timeout: None,
            sleep: None,
        }
    }
}

/// A pool of connections to `database_url` configured by `config`, with
/// one connection opened now.
pub async fn connect_with(database_url: &str, config: &PoolConfig) -> sqlx::Result<PgPool> {
    open(database_url, config).await
}

/// Work on one connection of a pool, as sqlx's pool hooks take it.
pub(crate) type OnConnection<'c, T> = Pin<Box<dyn Future<Output = sqlx::Result<T>> + Send + 'c>>;

/// What a backend does to its pool's connections: sets a new one's
/// session up, and probes one just released.
pub(crate) trait Checked: sqlx::Database {
    fn configure(
        conn: &mut Self::Connection,
        statement_timeout: Option<Duration>,
    ) -> OnConnection<'_, ()>;

    fn probe(conn: &mut Self::Connection) -> OnConnection<'_, Probe>;
}

/// A pool of `DB` connections to `database_url` configured by `config`,
/// whose released connections serve another caller only once they pass
/// the backend's probe (within [`PROBE_TIMEOUT`] when `config` has a
/// timer).
pub(crate) async fn open<DB: Checked>(
    database_url: &str,
    config: &PoolConfig,
) -> sqlx::Result<Pool<DB>> {
    let statement_timeout = config.statement_timeout;
    let sleep = config.sleep;
    PoolOptions::<DB>::new()
        .max_connections(config.max_connections)
        .acquire_timeout(config.acquire_timeout)
        .test_before_acquire(true)
        .after_connect(move |conn, _meta| DB::configure(conn, statement_timeout))
        .after_release(move |conn, _meta| {
            Box::pin(async move {
                let outcome = within(sleep, PROBE_TIMEOUT, DB::probe(conn)).await;
                Ok(log_unusable(outcome))
            })
        })
        .connect(database_url)
        .await
}

impl Checked for Postgres {
    /// Session settings of a new connection.
    fn configure(
        conn: &mut PgConnection,
        statement_timeout: Option<Duration>,
    ) -> OnConnection<'_, ()> {
        Box::pin(async move {
            let mut settings = Vec::new();
            if let Some(timeout) = statement_timeout {
                settings.push(format!("set statement_timeout = {}", timeout.as_millis()));
            }
            if conn.server_version_num().is_some_and(|v| v >= 140_000) {
                settings.push(format!(
                    "set client_connection_check_interval = {}",
                    CONNECTION_CHECK_INTERVAL.as_millis()
                ));
            }
            if !settings.is_empty() {
                conn.execute(sqlx::raw_sql(&settings.join("; "))).await?;
            }
            Ok(())
        })
    }

    /// Sends a query with a fresh token over the simple protocol (no
    /// prepared statement to cache) and checks the answer. `now()` is the
    /// transaction's start and `statement_timestamp()` this statement's: in a
    /// simple query outside a transaction block they are the same instant.
    fn probe(conn: &mut PgConnection) -> OnConnection<'_, Probe> {
        Box::pin(async move {
            let (token, row) = ask::<Self>(conn, |token| {
                format!("select '{token}'::text, now() = statement_timestamp()")
            })
            .await?;
            let Some(row) = row else {
                return Ok(Probe::OutOfStep);
            };
            let (Ok(answered), Ok(autocommit)) =
                (row.try_get::<String, _>(0), row.try_get::<bool, _>(1))
            else {
                return Ok(Probe::OutOfStep);
            };
            Ok(if answered != token {
                Probe::OutOfStep
            } else if !autocommit {
                Probe::InTransaction
            } else {
                Probe::Clean
            })
        })
    }
}

/// Tokens of the probes, unique within the process.
static PROBES: AtomicU64 = AtomicU64::new(0);

/// Sends `statement` of a fresh token over the simple (text) protocol, so
/// no prepared statement is cached: the token, and the only row answered
/// (`None` when the answer has another number of rows).
async fn ask<'c, DB>(
    conn: &'c mut DB::Connection,
    statement: impl FnOnce(&str) -> String,
) -> sqlx::Result<(String, Option<DB::Row>)>
where
    DB: sqlx::Database,
    &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    let token = format!("odp-probe-{}", PROBES.fetch_add(1, Ordering::Relaxed));
    let sql = statement(&token);
    let mut rows = conn.fetch_all(sqlx::raw_sql(&sql)).await?;
    let row = (rows.len() == 1).then(|| rows.remove(0));
    Ok((token, row))
}

/// Whether a probe's outcome (`None`: unanswered in time) leaves the
/// connection usable; logs why not.
fn log_unusable(outcome: Option<sqlx::Result<Probe>>) -> bool {
    match outcome {
        Some(Ok(Probe::Clean)) => true,
        Some(Ok(problem)) => {
            tracing::warn!(?problem, "closing a database connection in a bad state");
            false
        }
        Some(Err(error)) => {
            tracing::warn!(%error, "closing a database connection that failed its check");
            false
        }
        None => {
            tracing::warn!(
                timeout = ?PROBE_TIMEOUT,
                "closing a database connection still busy with an abandoned statement"
            );
            false
        }
    }
}

/// `work`'s output, or `None` when `sleep(timeout)` completes first.
async fn within<T>(
    sleep: Option<Sleep>,
    timeout: Duration,
    work: impl Future<Output = T>,
) -> Option<T> {
    let mut work = pin!(work);
    let Some(sleep) = sleep else {
        return Some(work.await);
    };
    let mut timer = sleep(timeout);
    poll_fn(|cx| match work.as_mut().poll(cx) {
        Poll::Ready(output) => Poll::Ready(Some(output)),
        Poll::Pending => timer.as_mut().poll(cx).map(|()| None),
    })
    .await
}

/// What a connection answered to [`Checked::probe`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The token it was sent, outside a transaction.
    Clean,
    /// Not one row with the token: it answers with an earlier reply.
    OutOfStep,
    /// Its session is inside a transaction no caller owns.
    InTransaction,
}
