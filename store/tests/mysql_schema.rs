//! The MySQL schema (`migrations/mysql`) against a real MariaDB: it
//! applies, a second run changes nothing, it has every table and column
//! the Postgres schema has, and the constraints Postgres expresses with
//! features MySQL lacks (partial unique indexes, reference triggers) hold
//! the same way.

use std::collections::{BTreeMap, BTreeSet};

use odp_devstack::{EphemeralMariaDb, Stack, StackOptions};
use sqlx::{MySqlPool, PgPool};
use uuid::Uuid;

type Columns = BTreeMap<String, BTreeSet<String>>;

async fn postgres_columns(pool: &PgPool) -> Columns {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "select table_name::text, column_name::text from information_schema.columns
         where table_schema = 'public' and table_name <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    group(rows)
}

async fn mysql_columns(pool: &MySqlPool) -> Columns {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "select cast(table_name as char), cast(column_name as char)
         from information_schema.columns
         where table_schema = database() and table_name <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    group(rows)
}

fn group(rows: Vec<(String, String)>) -> Columns {
    let mut tables = Columns::new();
    for (table, column) in rows {
        tables.entry(table).or_default().insert(column);
    }
    tables
}

/// Columns MySQL adds to stand in for a Postgres feature it lacks.
const MYSQL_ONLY: &[(&str, &str)] = &[
    ("profiles", "live_target_key"),
    ("control_requests", "open_deploy_host"),
];

#[tokio::test]
async fn the_mysql_schema_has_every_table_and_column_of_the_postgres_one() {
    let (stack, mariadb) = tokio::join!(
        Stack::start(StackOptions::ephemeral()),
        EphemeralMariaDb::start()
    );
    let (stack, mariadb) = (stack.unwrap(), mariadb.unwrap());
    let mysql = MySqlPool::connect(&mariadb.database_url()).await.unwrap();
    odp_store::Database::from(&mysql).migrate().await.unwrap();
    let applied: i64 = sqlx::query_scalar("select count(*) from _sqlx_migrations")
        .fetch_one(&mysql)
        .await
        .unwrap();
    odp_store::Database::from(&mysql).migrate().await.unwrap();
    let again: i64 = sqlx::query_scalar("select count(*) from _sqlx_migrations")
        .fetch_one(&mysql)
        .await
        .unwrap();
    assert_eq!(applied, again, "a second run applies nothing");

    let postgres = postgres_columns(&stack.connect().await.unwrap()).await;
    let mut mysql_tables = mysql_columns(&mysql).await;
    for (table, column) in MYSQL_ONLY {
        let removed = mysql_tables
            .get_mut(*table)
            .is_some_and(|c| c.remove(*column));
        assert!(removed, "{table}.{column} is gone: update MYSQL_ONLY");
    }
    assert_eq!(
        postgres.keys().collect::<Vec<_>>(),
        mysql_tables.keys().collect::<Vec<_>>()
    );
    for (table, columns) in &postgres {
        assert_eq!(columns, &mysql_tables[table], "columns of {table}");
    }
}

#[tokio::test]
async fn one_live_profile_per_target_and_mode_as_in_postgres() {
    let mariadb = EphemeralMariaDb::start().await.unwrap();
    let pool = MySqlPool::connect(&mariadb.database_url()).await.unwrap();
    odp_store::Database::from(&pool).migrate().await.unwrap();
    let insert = |host: &'static str, mode: &'static str, target: &'static str| {
        let pool = pool.clone();
        async move {
            let id = Uuid::new_v4();
            sqlx::query(
                "insert into profiles (id, host, service, target, mode, duration_ms,
                     frequency_hz, status, requested_by)
                 values (?, ?, 'svc', ?, ?, 1000, 99, 'requested', 'ci')",
            )
            .bind(id)
            .bind(host)
            .bind(target)
            .bind(mode)
            .execute(&pool)
            .await
            .map(|_| id)
        }
    };
    let java = r#"{"process_name": "java"}"#;
    let first = insert("h1", "cpu", java).await.unwrap();
    let duplicate = insert("h1", "cpu", java).await.unwrap_err();
    assert!(
        duplicate
            .as_database_error()
            .is_some_and(|e| e.is_unique_violation()),
        "{duplicate}"
    );
    // Another mode, another host or another target may run meanwhile.
    insert("h1", "alloc", java).await.unwrap();
    insert("h2", "cpu", java).await.unwrap();
    insert("h1", "cpu", r#"{"pid": 42}"#).await.unwrap();
    // Once the first has ended, the target may be profiled again.
    sqlx::query("update profiles set status = 'finished' where id = ?")
        .bind(first)
        .execute(&pool)
        .await
        .unwrap();
    insert("h1", "cpu", java).await.unwrap();

    // Text columns read as strings: sqlx takes columns of a `_bin`
    // collation for bytes, so the schema leaves collation to the database.
    let (host, status): (String, String) =
        sqlx::query_as("select host, status from profiles where id = ?")
            .bind(first)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((host.as_str(), status.as_str()), ("h1", "finished"));

    let bad_status = sqlx::query("update profiles set status = 'paused' where id = ?")
        .bind(first)
        .execute(&pool)
        .await;
    assert!(bad_status.is_err(), "the status check holds");
}

/// Names compare case-sensitively in Postgres; a database whose collation
/// does not is refused before any table exists.
#[tokio::test]
async fn a_case_insensitive_database_is_refused() {
    let mariadb = EphemeralMariaDb::start().await.unwrap();
    let admin = MySqlPool::connect(&mariadb.database_url()).await.unwrap();
    sqlx::query("create database folded character set utf8mb4 collate utf8mb4_general_ci")
        .execute(&admin)
        .await
        .unwrap();
    let folded = MySqlPool::connect(&mariadb.server().database_url("folded"))
        .await
        .unwrap();
    let refused = odp_store::Database::from(&folded)
        .migrate()
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("database_collation_must_be_case_sensitive"),
        "{refused}"
    );
    let tables: i64 = sqlx::query_scalar(
        "select count(*) from information_schema.tables
         where table_schema = 'folded' and table_name <> '_sqlx_migrations'",
    )
    .fetch_one(&folded)
    .await
    .unwrap();
    assert_eq!(tables, 0);
}
