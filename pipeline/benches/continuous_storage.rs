//! Storage of a service's continuous hour (issue 29's storage target):
//! 100 hosts profiled at 19 Hz, one 10 s window each every 10 s, stacks
//! drawn with a skew from a pool the service shares (as the continuous
//! ingest bench draws them), stored as the pipeline stores them and then
//! kept as its maintenance keeps them: each host's segment compacted into
//! its profile block, the blocks rolled up into the service's hour (which
//! drops them: one copy of the samples), and the settled day built.
//!
//! Storage is measured as a user sees it: the database's growth, every
//! user table with its indexes and TOAST (`pg_total_relation_size`), after
//! `VACUUM FULL`. The baseline, in the same run, is the same windows as
//! gzip pprof files (`odp_core::pprof::encode`): one per host and window,
//! as SDKs and agents push them (target: ≤ 0.3×), and one per host for the
//! whole hour (the smallest a per-host file can be).
//!
//! Run by hand: `cargo bench -p odp-pipeline --bench continuous_storage`
//! (a minute or two; needs Postgres like the tests). `ODP_BENCH_HOSTS`
//! sets the hosts (100). Prints, asserts nothing.

#[path = "common/named.rs"]
mod named;
#[path = "common/stack_pool.rs"]
mod stack_pool;

use std::collections::HashMap;

use chrono::{DateTime, Duration, DurationRound, Utc};
use named::named_stacks;
use odp_core::continuous::DEFAULT_FREQUENCY_HZ;
use odp_core::pprof::{self, PprofMeta};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot, WeightedStack};
use odp_devstack::{Stack, StackOptions};
use odp_store::Database;
use sqlx::PgPool;
use stack_pool::{stacks, Rng};
use uuid::Uuid;

const SERVICE: &str = "checkout";
const WINDOWS_PER_HOUR: i64 = 360;
const WINDOW_MS: i64 = 10_000;
/// The pool the continuous ingest bench draws from.
const POOL_STACKS: usize = 2_000;
const FUNCTIONS: usize = 3_000;
const TID: u32 = 1;

fn samples_per_window() -> u64 {
    u64::from(DEFAULT_FREQUENCY_HZ) * WINDOW_MS as u64 / 1_000
}

/// Host `h`'s window `n` of the hour from `hour_ms`.
fn window(profile_id: Uuid, h: usize, hour_ms: i64, n: i64, pool: &[Vec<Frame>]) -> Snapshot {
    let start_ms = hour_ms + n * WINDOW_MS;
    let mut rng = Rng(((h as u64) << 40 ^ start_ms as u64) | 1);
    let mut counts: HashMap<usize, u64> = HashMap::new();
    for _ in 0..samples_per_window() {
        *counts.entry(rng.skewed(pool.len())).or_default() += 1;
    }
    let mut b = SnapshotBuilder::new();
    for (stack, count) in counts {
        b.add(&pool[stack], TID, count);
    }
    b.name_thread(TID, "worker");
    b.build(SnapshotHeader {
        profile_id,
        host: format!("host-{h}"),
        agent_id: format!("agent-{h}"),
        sequence: n as u64,
        window_start_ms: start_ms,
        window_end_ms: start_ms + WINDOW_MS,
        event: EventKind::CpuClock,
        period: 1_000_000_000 / u64::from(DEFAULT_FREQUENCY_HZ),
        frequency_hz: DEFAULT_FREQUENCY_HZ,
    })
}

/// Every user table's bytes (heap, indexes, TOAST) after `VACUUM FULL`,
/// in all and the largest by table.
async fn database_bytes(pool: &PgPool) -> (i64, Vec<(String, i64)>) {
    sqlx::query("vacuum full analyze")
        .execute(pool)
        .await
        .unwrap();
    let tables: Vec<(String, i64)> = sqlx::query_as(
        "select c.relname::text, pg_total_relation_size(c.oid)
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
         where c.relkind in ('r', 'p') and n.nspname = 'public'
         order by 2 desc",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    (tables.iter().map(|t| t.1).sum(), tables)
}

/// The finished segments of the hosts, one profile row each.
async fn profile_rows(pool: &PgPool, hosts: usize, hour: DateTime<Utc>) -> Vec<Uuid> {
    let ids: Vec<Uuid> = (0..hosts).map(|_| Uuid::new_v4()).collect();
    let ended = hour + Duration::hours(1);
    sqlx::query(
        "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                               requested_by, created_at, updated_at, finished_at)
         select id, 'host-' || (n - 1), $2, '{\"by\": \"pid\", \"value\": 1}', 3600000, $3,
                'finished', 'continuous', $4, $5, $5
         from unnest($1::uuid[]) with ordinality as p(id, n)",
    )
    .bind(&ids)
    .bind(SERVICE)
    .bind(DEFAULT_FREQUENCY_HZ as i32)
    .bind(hour)
    .bind(ended)
    .execute(pool)
    .await
    .unwrap();
    ids
}

fn growth(what: &str, bytes: i64, base: i64, per_window: usize, per_host: usize) {
    let grown = bytes - base;
    println!(
        "{what}: database grew {:.2} MB: {:.3}x the per-window gzip pprof files (target <= 0.3x), \
         {:.3}x one gzip pprof file per host",
        grown as f64 / 1e6,
        grown as f64 / per_window as f64,
        grown as f64 / per_host as f64,
    );
}

fn largest(tables: &[(String, i64)]) -> String {
    tables
        .iter()
        .take(5)
        .map(|(table, bytes)| format!("{table} {:.2} MB", *bytes as f64 / 1e6))
        .collect::<Vec<_>>()
        .join(", ")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let hosts: usize = std::env::var("ODP_BENCH_HOSTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let stack = Stack::start(StackOptions::ephemeral())
        .await
        .expect("start the stack");
    let pool = stack.connect().await.unwrap();
    let db = Database::from(&pool);
    let shared = stacks(&mut Rng(0x9e37_79b9_7f4a_7c15), POOL_STACKS, FUNCTIONS);
    // Three days ago: its UTC day is settled, so its day block is built.
    let hour = (Utc::now() - Duration::days(3))
        .duration_trunc(Duration::hours(1))
        .unwrap();
    let (base, _) = database_bytes(&pool).await;

    let ids = profile_rows(&pool, hosts, hour).await;
    let meta = PprofMeta {
        event: Some(EventKind::CpuClock),
        period_nanos: Some(1_000_000_000 / i64::from(DEFAULT_FREQUENCY_HZ)),
        ..PprofMeta::default()
    };
    let (mut per_window, mut per_host, mut samples) = (0usize, 0usize, 0u64);
    for (h, &id) in ids.iter().enumerate() {
        let windows: Vec<Snapshot> = (0..WINDOWS_PER_HOUR)
            .map(|n| window(id, h, hour.timestamp_millis(), n, &shared))
            .collect();
        let mut hour_stacks: HashMap<Vec<String>, u64> = HashMap::new();
        for w in &windows {
            let stacks = named_stacks(w);
            per_window += pprof::encode(&stacks, &meta).len();
            for s in stacks {
                *hour_stacks.entry(s.frames).or_default() += s.count;
            }
            samples += w.total_samples();
        }
        let merged: Vec<WeightedStack> = hour_stacks
            .into_iter()
            .map(|(frames, count)| WeightedStack { frames, count })
            .collect();
        per_host += pprof::encode(&merged, &meta).len();
        let refs: Vec<&Snapshot> = windows.iter().collect();
        for chunk in refs.chunks(120) {
            odp_store::store_snapshots(&db, chunk).await.unwrap();
        }
    }
    println!(
        "a continuous hour of {SERVICE}: {hosts} hosts x {WINDOWS_PER_HOUR} windows x {} samples \
         ({samples} samples), stacks from a shared pool of {POOL_STACKS}",
        samples_per_window()
    );
    println!(
        "baseline, gzip pprof: one file per host and window {:.2} MB ({:.2} B/sample); one per \
         host for the hour {:.2} MB",
        per_window as f64 / 1e6,
        per_window as f64 / samples as f64,
        per_host as f64 / 1e6,
    );
    let (bytes, tables) = database_bytes(&pool).await;
    growth("as the windows arrive", bytes, base, per_window, per_host);
    println!("  largest: {}", largest(&tables));

    for &id in &ids {
        odp_store::compact_profile(&db, id).await.unwrap();
    }
    let (bytes, tables) = database_bytes(&pool).await;
    growth(
        "compacted (a block per host)",
        bytes,
        base,
        per_window,
        per_host,
    );
    println!("  largest: {}", largest(&tables));

    let rolled = odp_store::roll_up(&db, &ids).await.unwrap();
    let (bytes, tables) = database_bytes(&pool).await;
    growth(
        &format!(
            "rolled up ({} of {hosts} profiles, their blocks dropped)",
            rolled.rolled
        ),
        bytes,
        base,
        per_window,
        per_host,
    );
    println!("  largest: {}", largest(&tables));

    for (service, day) in odp_store::days_to_build(&db, odp_store::DAY_SETTLE, 10)
        .await
        .unwrap()
    {
        odp_store::build_day(&db, &service, day).await.unwrap();
    }
    let (bytes, tables) = database_bytes(&pool).await;
    growth("with the day tier built", bytes, base, per_window, per_host);
    println!("  largest: {}", largest(&tables));

    let read = odp_store::read(
        &db,
        &odp_store::Read {
            scope: odp_store::ReadScope::Service {
                service: SERVICE.into(),
                hosts: Vec::new(),
            },
            ..odp_store::Read::profile(Uuid::nil())
        },
    )
    .await
    .unwrap();
    println!(
        "read back: {} samples of {samples} ({} hosts)",
        read.samples(),
        read.hosts.len()
    );
    pool.close().await;
    stack.stop().unwrap();
}
