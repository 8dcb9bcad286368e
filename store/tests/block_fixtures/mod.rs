//! Profiles and windows written straight into either backend, for the
//! block, rollup and retention suites (ingest has its own suite): a
//! service's fleet whose windows share their code, as real fleets do.

#![allow(dead_code)] // each suite uses some

use chrono::{DateTime, Utc};
use odp_core::{Snapshot, WeightedStack};
use odp_store::Database;
use uuid::Uuid;

/// Window `sequence` of a host's profile (shared with the pipeline's
/// rollup tests).
pub(crate) use odp_devstack::fixtures::fleet_window as window;

/// A profile row of service `fleet` on host `h-{host}` with `status`,
/// finished (when it is an end state) at `at`.
pub(crate) async fn insert_profile(
    db: &Database,
    id: Uuid,
    host: usize,
    status: &str,
    at: DateTime<Utc>,
) {
    let finished = matches!(status, "finished" | "stopped" | "failed" | "expired").then_some(at);
    let host = format!("h-{host}");
    match db {
        Database::Postgres(pool) => sqlx::query(
            "insert into profiles (id, host, target, duration_ms, frequency_hz, status,
                                   requested_by, service, created_at, updated_at, finished_at)
             values ($1, $2, '{\"by\": \"pid\", \"value\": 7}', 60000, 99, $3, 'test',
                     'fleet', $4, $4, $5)",
        )
        .bind(id)
        .bind(host)
        .bind(status)
        .bind(at)
        .bind(finished)
        .execute(pool)
        .await
        .map(drop),
        Database::MySql(pool) => sqlx::query(
            "insert into profiles (id, host, target, duration_ms, frequency_hz, status,
                                   requested_by, service, created_at, updated_at, finished_at)
             values (?, ?, '{\"by\": \"pid\", \"value\": 7}', 60000, 99, ?, 'test',
                     'fleet', ?, ?, ?)",
        )
        .bind(id)
        .bind(host)
        .bind(status)
        .bind(at)
        .bind(at)
        .bind(finished)
        .execute(pool)
        .await
        .map(drop),
    }
    .unwrap();
}

/// Stores `snapshot` as ingest does: a `snapshots` row holding its block.
pub(crate) async fn store_window(db: &Database, s: &Snapshot) {
    let start = DateTime::<Utc>::from_timestamp_millis(s.window_start_ms).unwrap();
    let end = DateTime::<Utc>::from_timestamp_millis(s.window_end_ms).unwrap();
    let sql = "insert into snapshots (profile_id, agent_id, `sequence`, host, window_start,
                   window_end, event, period, frequency_hz, samples, block)
               values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    macro_rules! bound {
        ($query:expr) => {
            $query
                .bind(s.profile_id)
                .bind(&s.agent_id)
                .bind(s.sequence as i64)
                .bind(&s.host)
                .bind(start)
                .bind(end)
                .bind(s.event.as_str())
                .bind(s.period as i64)
                .bind(s.frequency_hz as i32)
                .bind(s.total_samples() as i64)
                .bind(s.encode())
        };
    }
    match db {
        Database::Postgres(pool) => {
            let mut numbered = String::new();
            for (n, part) in sql.replace('`', "\"").split('?').enumerate() {
                if n > 0 {
                    numbered.push_str(&format!("${n}"));
                }
                numbered.push_str(part);
            }
            bound!(sqlx::query(&numbered)).execute(pool).await.map(drop)
        }
        Database::MySql(pool) => bound!(sqlx::query(sql)).execute(pool).await.map(drop),
    }
    .unwrap();
}

/// A count from `sql` (no parameters), as i64 on either backend.
pub(crate) async fn count(db: &Database, sql: &str) -> i64 {
    match db {
        Database::Postgres(pool) => {
            sqlx::query_scalar::<_, i64>(&format!("select ({sql})::bigint"))
                .fetch_one(pool)
                .await
                .unwrap()
        }
        Database::MySql(pool) => {
            sqlx::query_scalar::<_, i64>(&format!("select cast(({sql}) as signed)"))
                .fetch_one(pool)
                .await
                .unwrap()
        }
    }
}

/// Leaf function → samples, sorted.
pub(crate) fn leaves(stacks: &[WeightedStack]) -> Vec<(String, u64)> {
    let mut leaves: std::collections::BTreeMap<String, u64> = Default::default();
    for s in stacks {
        *leaves.entry(s.frames.last().unwrap().clone()).or_default() += s.count;
    }
    leaves.into_iter().collect()
}

/// The same from snapshots.
pub(crate) fn snapshot_leaves(snapshots: &[Snapshot]) -> Vec<(String, u64)> {
    let mut leaves: std::collections::BTreeMap<String, u64> = Default::default();
    for s in snapshots {
        for stack in &s.stacks {
            let leaf = *stack.frames.last().unwrap();
            *leaves
                .entry(s.frames[leaf as usize].function.clone())
                .or_default() += stack.count;
        }
    }
    leaves.into_iter().collect()
}

/// A value bound for [`exec`].
pub(crate) enum Arg {
    Id(Uuid),
    Bytes(Vec<u8>),
    Int(i64),
    Text(String),
    Time(DateTime<Utc>),
}

/// Runs `sql` (`?` placeholders) with `args` on either backend.
pub(crate) async fn exec(db: &Database, sql: &str, args: Vec<Arg>) {
    macro_rules! bound {
        ($query:expr) => {{
            let mut query = $query;
            for arg in args {
                query = match arg {
                    Arg::Id(v) => query.bind(v),
                    Arg::Bytes(v) => query.bind(v),
                    Arg::Int(v) => query.bind(v),
                    Arg::Text(v) => query.bind(v),
                    Arg::Time(v) => query.bind(v),
                };
            }
            query
        }};
    }
    match db {
        Database::Postgres(pool) => {
            let mut numbered = String::new();
            for (n, part) in sql.replace('`', "\"").split('?').enumerate() {
                if n > 0 {
                    numbered.push_str(&format!("${n}"));
                }
                numbered.push_str(part);
            }
            bound!(sqlx::query(&numbered)).execute(pool).await.map(drop)
        }
        Database::MySql(pool) => bound!(sqlx::query(sql)).execute(pool).await.map(drop),
    }
    .unwrap();
}
