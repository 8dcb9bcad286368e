//! Which database errors the pipeline retries (the batch waits, nothing is
//! dead-lettered): provoked on the real servers.

mod support;

use odp_store::{Database, StoreError};
use sqlx::Connection;
use support::on_both_backends;

/// The error of an update waiting on agent `a1`'s row, which another
/// transaction holds, past the lock timeout `set_timeout` sets (the same
/// steps on either backend's pool type).
macro_rules! wait_on_a_locked_row {
    ($pool:expr, $set_timeout:expr) => {{
        let mut holder = $pool.begin().await.unwrap();
        sqlx::query("select 1 from agents where agent_id = 'a1' for update")
            .execute(&mut *holder)
            .await
            .unwrap();
        let mut waiter = $pool.acquire().await.unwrap();
        sqlx::query($set_timeout)
            .execute(&mut *waiter)
            .await
            .unwrap();
        sqlx::query("update agents set host = 'h2' where agent_id = 'a1'")
            .execute(&mut *waiter)
            .await
            .unwrap_err()
    }};
}

/// A row lock held past the waiter's lock timeout is worth retrying.
async fn a_lock_wait_timeout_is_transient(db: Database) {
    support::execute(
        &db,
        "insert into agents (agent_id, host, version, last_seen)
         values ('a1', 'h1', '1', current_timestamp)",
        &[],
    )
    .await;
    let error = match &db {
        Database::Postgres(pool) => wait_on_a_locked_row!(pool, "set lock_timeout = '200ms'"),
        Database::MySql(pool) => wait_on_a_locked_row!(pool, "set innodb_lock_wait_timeout = 1"),
    };
    let error = StoreError::from(error);
    assert!(error.is_transient(), "{error}");
}

/// A statement the schema refuses is not: retrying it fails the same way.
async fn a_constraint_violation_is_not_transient(db: Database) {
    let bad = "insert into agents (agent_id, host, version, last_seen)
               values (null, 'h1', '1', current_timestamp)";
    let error = match &db {
        Database::Postgres(pool) => sqlx::query(bad).execute(pool).await.unwrap_err(),
        Database::MySql(pool) => sqlx::query(bad).execute(pool).await.unwrap_err(),
    };
    let error = StoreError::from(error);
    assert!(!error.is_transient(), "{error}");
}

/// A connection the server drops mid-session is worth retrying on another.
async fn a_killed_connection_is_transient(db: Database) {
    let error = match &db {
        Database::Postgres(pool) => {
            let mut victim = pool.acquire().await.unwrap();
            let (pid,): (i32,) = sqlx::query_as("select pg_backend_pid()")
                .fetch_one(&mut *victim)
                .await
                .unwrap();
            sqlx::query("select pg_terminate_backend($1)")
                .bind(pid)
                .execute(pool)
                .await
                .unwrap();
            sqlx::query("select 1")
                .execute(&mut *victim)
                .await
                .unwrap_err()
        }
        Database::MySql(pool) => {
            let mut victim = pool.acquire().await.unwrap();
            let (id,): (u64,) = sqlx::query_as("select connection_id()")
                .fetch_one(&mut *victim)
                .await
                .unwrap();
            let mut killer = sqlx::MySqlConnection::connect_with(&pool.connect_options())
                .await
                .unwrap();
            sqlx::query(&format!("kill connection {id}"))
                .execute(&mut killer)
                .await
                .unwrap();
            sqlx::query("select 1")
                .execute(&mut *victim)
                .await
                .unwrap_err()
        }
    };
    let error = StoreError::from(error);
    assert!(error.is_transient(), "{error}");
}

on_both_backends!(
    a_lock_wait_timeout_is_transient,
    a_constraint_violation_is_not_transient,
    a_killed_connection_is_transient,
);
