//! Counting what a test's stack stored, on whichever database it runs:
//! one query text (`?` placeholders) for Postgres and MySQL.

use chrono::{DateTime, Utc};
use odp_store::Database;
use serde_json::Value;
use sqlx::types::Json;
use uuid::Uuid;

/// A parameter of a query.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Param<'a> {
    Uuid(Uuid),
    Text(&'a str),
    Time(DateTime<Utc>),
}

/// Binds `params` to a query of either backend.
macro_rules! bind_all {
    ($query:expr, $params:expr) => {{
        let mut query = $query;
        for param in $params {
            query = match *param {
                Param::Uuid(id) => query.bind(id),
                Param::Text(text) => query.bind(text),
                Param::Time(time) => query.bind(time),
            };
        }
        query
    }};
}

/// The one BIGINT column of `sql`'s rows (`?` placeholders) on `db`.
pub(crate) async fn column(db: &Database, sql: &str, params: &[Param<'_>]) -> Vec<i64> {
    try_column(db, sql, params)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// [`column`], or the error (the database may be down on purpose).
pub(crate) async fn try_column(
    db: &Database,
    sql: &str,
    params: &[Param<'_>],
) -> sqlx::Result<Vec<i64>> {
    match db {
        Database::Postgres(pool) => {
            let numbered = numbered_placeholders(sql);
            bind_all!(sqlx::query_scalar::<_, i64>(&numbered), params)
                .fetch_all(pool)
                .await
        }
        Database::MySql(pool) => {
            bind_all!(sqlx::query_scalar::<_, i64>(sql), params)
                .fetch_all(pool)
                .await
        }
    }
}

/// Runs `sql` (`?` placeholders) on `db`: setup no API offers.
pub(crate) async fn execute(db: &Database, sql: &str, params: &[Param<'_>]) {
    match db {
        Database::Postgres(pool) => {
            let numbered = numbered_placeholders(sql);
            bind_all!(sqlx::query(&numbered), params)
                .execute(pool)
                .await
                .map(drop)
        }
        Database::MySql(pool) => bind_all!(sqlx::query(sql), params)
            .execute(pool)
            .await
            .map(drop),
    }
    .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A schedule's runs as (scheduled_for, outcome, profile_id), oldest first.
pub(crate) async fn schedule_runs(
    db: &Database,
    schedule: Uuid,
) -> Vec<(DateTime<Utc>, String, Option<Uuid>)> {
    let sql = "select scheduled_for, outcome, profile_id from schedule_runs
               where schedule_id = ? order by scheduled_for";
    let params = [Param::Uuid(schedule)];
    match db {
        Database::Postgres(pool) => {
            let numbered = numbered_placeholders(sql);
            bind_all!(sqlx::query_as(&numbered), &params)
                .fetch_all(pool)
                .await
        }
        Database::MySql(pool) => {
            bind_all!(sqlx::query_as(sql), &params)
                .fetch_all(pool)
                .await
        }
    }
    .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// `sql`, a `select count(*) …`, on `db`.
pub(crate) async fn count(db: &Database, sql: &str, params: &[Param<'_>]) -> i64 {
    let counts = column(db, sql, params).await;
    assert_eq!(counts.len(), 1, "{sql} gives one count");
    counts[0]
}

/// (agent, body) of the profile's events of `kind`, oldest first.
pub(crate) async fn profile_events(
    db: &Database,
    profile: Uuid,
    kind: &str,
) -> Vec<(String, Value)> {
    let sql =
        "select agent_id, body from profile_events where profile_id = ? and kind = ? order by id";
    let params = [Param::Uuid(profile), Param::Text(kind)];
    let rows: Vec<(String, Json<Value>)> = match db {
        Database::Postgres(pool) => {
            let numbered = numbered_placeholders(sql);
            bind_all!(sqlx::query_as(&numbered), &params)
                .fetch_all(pool)
                .await
        }
        Database::MySql(pool) => {
            bind_all!(sqlx::query_as(sql), &params)
                .fetch_all(pool)
                .await
        }
    }
    .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.into_iter()
        .map(|(agent, body)| (agent, body.0))
        .collect()
}

/// `?` placeholders as Postgres' `$1`, `$2`, ….
fn numbered_placeholders(sql: &str) -> String {
    let mut numbered = String::with_capacity(sql.len());
    for (n, part) in sql.split('?').enumerate() {
        if n > 0 {
            numbered.push_str(&format!("${n}"));
        }
        numbered.push_str(part);
    }
    numbered
}

#[test]
fn placeholders_are_numbered_for_postgres() {
    assert_eq!(
        numbered_placeholders("select count(*) from t where a = ? and b = ?"),
        "select count(*) from t where a = $1 and b = $2"
    );
}
