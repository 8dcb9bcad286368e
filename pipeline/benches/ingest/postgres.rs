//! The ingest bench's statements on Postgres, and its baseline: a raw
//! `COPY` of exactly the rows the worker wrote.

use std::time::Instant;

use futures::StreamExt as _;
use sqlx::{Connection as _, PgPool};
use uuid::Uuid;

/// Empties the table the worker writes, so each run starts as its
/// baseline does.
pub(crate) async fn clear(pool: &PgPool) {
    sqlx::query("truncate snapshots")
        .execute(pool)
        .await
        .unwrap();
}

/// How many of `profiles` have their first window stored, and how many
/// their window `last`.
pub(crate) async fn progress(pool: &PgPool, profiles: &[Uuid], last: i64) -> (i64, i64) {
    sqlx::query_as(
        "select count(*) filter (where sequence = 0), count(*) filter (where sequence > 0)
         from snapshots
         where agent_id = 'bench-agent' and profile_id = any($1) and sequence in (0, $2)",
    )
    .bind(profiles)
    .bind(last)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Rows stored for `profiles`: one per window.
pub(crate) async fn rows(pool: &PgPool, profiles: &[Uuid]) -> i64 {
    sqlx::query_scalar("select count(*) from snapshots where profile_id = any($1)")
        .bind(profiles)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Times `COPY … FROM STDIN (format binary)` of the rows of `profiles`, in
/// the worker's order (snapshot ids grow), in one transaction, into an
/// empty table of the same shape as the real one: logged, with the same
/// indexes, check constraints and triggers. It lives in a schema of its
/// own, first on the search path, where the triggers' functions find it.
///
/// The baseline used to copy into temporary tables with the indexes only:
/// no WAL, buffers local to the backend, no checks and no reference
/// triggers. No write to the real tables can be that cheap (its `samples`
/// COPY took about half the time of the same COPY into a logged table with
/// the same indexes), so the ratio measured the schema as much as the
/// worker.
pub(crate) async fn bulk_load_seconds(pool: &PgPool, profiles: &[Uuid]) -> f64 {
    let mut conn = pool.acquire().await.unwrap();
    let list = profiles
        .iter()
        .map(|p| format!("'{p}'"))
        .collect::<Vec<_>>()
        .join(",");
    let query = format!(
        "select * from snapshots where profile_id = any(array[{list}]::uuid[]) order by id"
    );
    let mut out = conn
        .copy_out_raw(&format!("copy ({query}) to stdout (format binary)"))
        .await
        .unwrap();
    let mut dump = Vec::new();
    while let Some(chunk) = out.next().await {
        dump.extend_from_slice(&chunk.unwrap());
    }
    drop(out);
    for statement in [
        "create schema copy_baseline",
        "create table copy_baseline.snapshots (like public.snapshots including all)",
    ] {
        sqlx::query(statement).execute(&mut *conn).await.unwrap();
    }
    let triggers: Vec<String> = sqlx::query_scalar(
        "select pg_get_triggerdef(oid) from pg_trigger
         where tgrelid = 'public.snapshots'::regclass and not tgisinternal",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    for trigger in triggers {
        let on = " ON public.snapshots ";
        assert!(trigger.contains(on), "{trigger}");
        sqlx::query(&trigger.replace(on, " ON copy_baseline.snapshots "))
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    sqlx::query("set search_path = copy_baseline, public")
        .execute(&mut *conn)
        .await
        .unwrap();
    let started = Instant::now();
    let mut tx = conn.begin().await.unwrap();
    let mut copy = tx
        .copy_in_raw("copy snapshots from stdin (format binary)")
        .await
        .unwrap();
    copy.send(dump.as_slice()).await.unwrap();
    copy.finish().await.unwrap();
    tx.commit().await.unwrap();
    let seconds = started.elapsed().as_secs_f64();
    for statement in ["reset search_path", "drop schema copy_baseline cascade"] {
        sqlx::query(statement).execute(&mut *conn).await.unwrap();
    }
    seconds
}
