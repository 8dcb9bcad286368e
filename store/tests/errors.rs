//! How database errors are told apart, provoked on the real servers:
//! which the pipeline retries (the batch waits, nothing is dead-lettered)
//! and which are input the schema refused (the API answers 409 or 422).

mod support;

use odp_store::{Database, StoreError, Violation};
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

/// A rule row, with `threshold` and `source` as given.
fn rule_insert(id: &str, threshold: &str, source: &str) -> String {
    format!(
        "insert into rules (id, title, explanation, fix, link, kind, spec, threshold_pct, source)
         values ('{id}', 't', 'e', 'f', 'l', 'stack_share', '{{}}', {threshold}, '{source}')"
    )
}

async fn run(db: &Database, sql: &str) -> Result<(), StoreError> {
    match db {
        Database::Postgres(pool) => sqlx::query(sql).execute(pool).await.map(drop),
        Database::MySql(pool) => sqlx::query(sql).execute(pool).await.map(drop),
    }
    .map_err(StoreError::from)
}

/// Duplicates, failed checks and missing references are named, so the API
/// answers 409 or 422 however the backend words them.
async fn refused_input_is_named_by_its_constraint(db: Database) {
    run(&db, &rule_insert("r1", "5", "user")).await.unwrap();
    let duplicate = run(&db, &rule_insert("r1", "5", "user")).await.unwrap_err();
    assert_eq!(
        duplicate.violation(),
        Some(Violation::Unique),
        "{duplicate}"
    );
    assert!(!duplicate.is_transient());
    let out_of_range = run(&db, &rule_insert("r2", "101", "user"))
        .await
        .unwrap_err();
    assert_eq!(
        out_of_range.violation(),
        Some(Violation::Invalid),
        "{out_of_range}"
    );
    let bad_source = run(&db, &rule_insert("r3", "5", "admin"))
        .await
        .unwrap_err();
    assert_eq!(
        bad_source.violation(),
        Some(Violation::Invalid),
        "{bad_source}"
    );
    let orphan = run(
        &db,
        "insert into snapshot_threads (snapshot_id, tid, name) values (424242, 1, 'main')",
    )
    .await
    .unwrap_err();
    assert_eq!(orphan.violation(), Some(Violation::ForeignKey), "{orphan}");
}

/// MySQL only: Postgres' `text` has no length to exceed.
#[tokio::test]
async fn a_value_longer_than_its_mysql_column_is_invalid_input() {
    let (_server, db) = support::mysql().await;
    let long_id = "r".repeat(300);
    let too_long = run(&db, &rule_insert(&long_id, "5", "user"))
        .await
        .unwrap_err();
    assert_eq!(too_long.violation(), Some(Violation::Invalid), "{too_long}");
}

on_both_backends!(
    refused_input_is_named_by_its_constraint,
    a_lock_wait_timeout_is_transient,
    a_constraint_violation_is_not_transient,
    a_killed_connection_is_transient,
);
