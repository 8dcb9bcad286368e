//! The MySQL / MariaDB pool: the same [`PoolConfig`] as Postgres', and a
//! check of released connections. A dropped future can leave a MySQL
//! connection inside a transaction (a `BEGIN` without its `ROLLBACK`),
//! holding named locks (`GET_LOCK` is the session's, not the
//! transaction's), or with an abandoned statement's result still
//! streaming. So a released connection rolls back, releases its named
//! locks, and must answer a probe with a fresh token in time.

use std::sync::atomic::Ordering;

use sqlx::mysql::{MySqlConnection, MySqlPoolOptions};
use sqlx::{Executor as _, MySqlPool, Row as _};

use super::{within, PoolConfig, Probe, Sleep, PROBES, PROBE_TIMEOUT};

/// A pool of connections to `database_url` (`mysql://`) configured by
/// `config`, with one connection opened now.
pub async fn connect_with(database_url: &str, config: &PoolConfig) -> sqlx::Result<MySqlPool> {
    let statement_timeout = config.statement_timeout;
    let sleep = config.sleep;
    MySqlPoolOptions::new()
        .max_connections(config.max_connections)
        .acquire_timeout(config.acquire_timeout)
        .test_before_acquire(true)
        .after_connect(move |conn, _meta| {
            Box::pin(async move { configure_session(conn, statement_timeout).await })
        })
        .after_release(move |conn, _meta| Box::pin(async move { Ok(reusable(conn, sleep).await) }))
        .connect(database_url)
        .await
}

/// Session settings of a new connection: the statement timeout, which
/// MariaDB calls `max_statement_time` (seconds, every statement) and MySQL
/// `max_execution_time` (milliseconds, reads only: MySQL has no bound on
/// writes, see docs/mysql-schema.md).
async fn configure_session(
    conn: &mut MySqlConnection,
    statement_timeout: Option<std::time::Duration>,
) -> sqlx::Result<()> {
    let Some(timeout) = statement_timeout else {
        return Ok(());
    };
    let version: String = conn.fetch_one("select version()").await?.try_get(0)?;
    let setting = if version.contains("MariaDB") {
        format!("set session max_statement_time = {}", timeout.as_secs_f64())
    } else {
        format!("set session max_execution_time = {}", timeout.as_millis())
    };
    conn.execute(sqlx::raw_sql(&setting)).await?;
    Ok(())
}

async fn reusable(conn: &mut MySqlConnection, sleep: Option<Sleep>) -> bool {
    super::log_unusable(within(sleep, PROBE_TIMEOUT, probe(conn)).await)
}

/// Ends whatever the last caller left open (harmless when nothing is),
/// then sends a query with a fresh token over the text protocol and checks
/// the answer.
async fn probe(conn: &mut MySqlConnection) -> sqlx::Result<Probe> {
    let token = format!("odp-probe-{}", PROBES.fetch_add(1, Ordering::Relaxed));
    let sql = format!("rollback; do release_all_locks(); select '{token}'");
    let rows = conn.fetch_all(sqlx::raw_sql(&sql)).await?;
    let [row] = &rows[..] else {
        return Ok(Probe::OutOfStep);
    };
    Ok(match row.try_get::<String, _>(0) {
        Ok(answered) if answered == token => Probe::Clean,
        _ => Probe::OutOfStep,
    })
}

/// Makes the session's next transaction `read committed`, Postgres'
/// default: a locking read then locks only the rows it returns, never the
/// gaps between them as under MySQL's `repeatable read`.
pub(crate) async fn read_committed(conn: &mut MySqlConnection) -> sqlx::Result<()> {
    sqlx::query("set transaction isolation level read committed")
        .execute(conn)
        .await?;
    Ok(())
}
