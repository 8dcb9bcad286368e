//! The MySQL / MariaDB pool: the same [`super::PoolConfig`] as Postgres',
//! and a check of released connections. A dropped future can leave a
//! MySQL connection inside a transaction (a `BEGIN` without its `ROLLBACK`),
//! holding named locks (`GET_LOCK` is the session's, not the
//! transaction's), or with an abandoned statement's result still
//! streaming. So a released connection rolls back, releases its named
//! locks, and must answer a probe with a fresh token in time.

use std::time::Duration;

use sqlx::mysql::MySqlConnection;
use sqlx::{Executor as _, MySql, Row as _};

use super::{ask, Checked, OnConnection, Probe};

impl Checked for MySql {
    /// Session settings of a new connection: the statement timeout, which
    /// MariaDB calls `max_statement_time` (seconds, every statement) and MySQL
    /// `max_execution_time` (milliseconds, reads only: MySQL has no bound on
    /// writes, see docs/mysql-schema.md).
    fn configure(
        conn: &mut MySqlConnection,
        statement_timeout: Option<Duration>,
    ) -> OnConnection<'_, ()> {
        Box::pin(async move {
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
        })
    }

    /// Ends whatever the last caller left open (harmless when nothing is),
    /// then sends a query with a fresh token over the text protocol and checks
    /// the answer.
    fn probe(conn: &mut MySqlConnection) -> OnConnection<'_, Probe> {
        Box::pin(async move {
            let (token, row) = ask::<Self>(conn, |token| {
                format!("rollback; do release_all_locks(); select '{token}'")
            })
            .await?;
            Ok(match row.map(|row| row.try_get::<String, _>(0)) {
                Some(Ok(answered)) if answered == token => Probe::Clean,
                _ => Probe::OutOfStep,
            })
        })
    }
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
