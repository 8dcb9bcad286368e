//! The ingest bench's statements on MySQL or MariaDB, and its baseline:
//! `LOAD DATA INFILE` of exactly the rows the worker wrote.

use std::time::Instant;

use sqlx::{Connection as _, MySqlPool};
use uuid::Uuid;

/// Empties the table the worker writes, so each run starts as its
/// baseline does. `truncate` is refused on a table that foreign keys
/// reference (the legacy sample rows'), even an empty one.
pub(crate) async fn clear(pool: &MySqlPool) {
    sqlx::query("delete from snapshots")
        .execute(pool)
        .await
        .unwrap();
}

fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// How many of `profiles` have their first window stored, and how many
/// their window `last`.
pub(crate) async fn progress(pool: &MySqlPool, profiles: &[Uuid], last: i64) -> (i64, i64) {
    let sql = format!(
        "select cast(coalesce(sum(n.sequence = 0), 0) as signed),
                cast(coalesce(sum(n.sequence > 0), 0) as signed)
         from snapshots n
         where n.agent_id = 'bench-agent' and n.profile_id in ({})
           and n.sequence in (0, ?)",
        placeholders(profiles.len())
    );
    let mut query = sqlx::query_as(&sql);
    for profile in profiles {
        query = query.bind(profile);
    }
    query.bind(last).fetch_one(pool).await.unwrap()
}

/// Rows stored for `profiles`: one per window.
pub(crate) async fn rows(pool: &MySqlPool, profiles: &[Uuid]) -> i64 {
    let sql = format!(
        "select count(*) from snapshots where profile_id in ({})",
        placeholders(profiles.len())
    );
    let mut query = sqlx::query_scalar(&sql);
    for profile in profiles {
        query = query.bind(profile);
    }
    query.fetch_one(pool).await.unwrap()
}

/// Times `LOAD DATA INFILE` of the rows of `profiles`, in the worker's
/// order (snapshot ids grow), in one transaction, into an empty table of
/// the same shape as the real one (`create table … like` copies its
/// indexes and checks; nothing references it, as nothing references the
/// snapshots the worker writes).
///
/// The rows are dumped by the server with `select … into outfile` and read
/// back from that file by the server itself: MySQL's fastest bulk load,
/// which unlike the `COPY FROM STDIN` of the Postgres baseline does not
/// even carry the bytes over the connection. (sqlx cannot answer the
/// server's request for a client file, so `LOAD DATA LOCAL INFILE`, the
/// form a loader on another host would use, is out of reach.) Neither
/// statement can be prepared, so both go as plain text.
pub(crate) async fn bulk_load_seconds(pool: &MySqlPool, profiles: &[Uuid]) -> f64 {
    let mut conn = pool.acquire().await.unwrap();
    let server_tmp: String = sqlx::query_scalar("select @@tmpdir")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    let dump = std::path::Path::new(&server_tmp).join(format!("odp-bench-{}.tsv", Uuid::new_v4()));
    let dump = dump.to_str().expect("a UTF-8 path");
    let list = profiles
        .iter()
        .map(|p| format!("x'{}'", p.simple()))
        .collect::<Vec<_>>()
        .join(", ");
    let statements = [
        format!("select * from snapshots where profile_id in ({list}) order by id into outfile '{dump}'"),
        "drop table if exists copy_baseline_snapshots".to_owned(),
        "create table copy_baseline_snapshots like snapshots".to_owned(),
    ];
    for statement in statements {
        sqlx::raw_sql(&statement).execute(&mut *conn).await.unwrap();
    }
    let started = Instant::now();
    let mut tx = conn.begin().await.unwrap();
    let loaded = sqlx::raw_sql(&format!(
        "load data infile '{dump}' into table copy_baseline_snapshots"
    ))
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(
        loaded.rows_affected(),
        rows(pool, profiles).await as u64,
        "the baseline loads every row the worker wrote"
    );
    sqlx::raw_sql("drop table copy_baseline_snapshots")
        .execute(&mut *conn)
        .await
        .unwrap();
    std::fs::remove_file(dump)
        .expect("remove the dump (the bench runs as the server's user or root)");
    seconds
}
