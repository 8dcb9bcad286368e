//! Storage compactness: bytes on disk per sample and per distinct stack for
//! one profile stored in Postgres, against the same profile as gzip pprof:
//! as its windows arrive (each the agent's block), once compacted into one
//! profile block, and after downsampling.
//!
//! A synthetic hour-long profile (10 s windows from a month ago, stacks
//! drawn with a skewed distribution from a fixed set, several threads) is
//! stored with `odp_store::store_snapshots` into a fresh database, so every
//! row of the data tables is this profile's. Sizes are
//! `pg_total_relation_size` (heap, indexes and TOAST) after `VACUUM FULL`.
//! The gzip pprof side is `odp_core::pprof::encode` of the merged profile
//! (no time or thread dimension) and of each window on its own (what
//! keeping every window as a pprof file would cost).
//!
//! Run by hand: `cargo bench -p odp-pipeline --bench storage` (or `cargo
//! test -p odp-pipeline --bench storage` to skip the release build; sizes
//! do not depend on it). Needs Postgres like the tests. Prints, asserts
//! nothing.

#[path = "common/named.rs"]
mod named;
#[path = "common/stack_pool.rs"]
mod stack_pool;

use std::time::Duration;

use chrono::Utc;
use named::named_stacks;
use odp_core::pprof::{self, PprofMeta};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot};
use odp_devstack::{Stack, StackOptions};
use odp_pipeline::retention::{run_once, RetentionOptions};
use sqlx::PgPool;
use stack_pool::{stacks, Rng};
use uuid::Uuid;

const WINDOWS: u64 = 360;
const SAMPLES_PER_WINDOW: u64 = 990;
const DISTINCT_STACKS: usize = 2_000;
const FRAME_VOCABULARY: usize = 3_000;
const THREADS: u32 = 8;
/// Every table that holds samples: the windows and profile blocks, and the
/// rows of data stored before blocks (empty here).
const TABLES: [&str; 6] = [
    "snapshots",
    "profile_blocks",
    "frames",
    "stacks",
    "samples",
    "snapshot_threads",
];

fn window(
    profile_id: Uuid,
    start_ms: i64,
    sequence: u64,
    all: &[Vec<Frame>],
    rng: &mut Rng,
) -> Snapshot {
    let mut b = SnapshotBuilder::new();
    for _ in 0..SAMPLES_PER_WINDOW {
        let tid = 100 + rng.below(THREADS as usize) as u32;
        b.add(&all[rng.skewed(all.len())], tid, 1);
    }
    for t in 0..THREADS {
        b.name_thread(100 + t, format!("worker-{t}"));
    }
    let window_start_ms = start_ms + sequence as i64 * 10_000;
    b.build(SnapshotHeader {
        profile_id,
        host: "bench-host".into(),
        agent_id: "bench-agent".into(),
        sequence,
        window_start_ms,
        window_end_ms: window_start_ms + 10_000,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    })
}

/// Bytes of each data table after compaction, and their sum.
async fn table_bytes(pool: &PgPool) -> (Vec<(&'static str, i64)>, i64) {
    let mut sizes = Vec::new();
    for table in TABLES {
        sqlx::query(&format!("vacuum full analyze {table}"))
            .execute(pool)
            .await
            .unwrap();
        let bytes: i64 = sqlx::query_scalar("select pg_total_relation_size($1::regclass)")
            .bind(table)
            .fetch_one(pool)
            .await
            .unwrap();
        sizes.push((table, bytes));
    }
    let total = sizes.iter().map(|(_, b)| b).sum();
    (sizes, total)
}

async fn count(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let stack = Stack::start(StackOptions::ephemeral())
        .await
        .expect("start the stack");
    let pool = stack.connect().await.unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let all = stacks(&mut rng, DISTINCT_STACKS, FRAME_VOCABULARY);
    let profile_id = Uuid::new_v4();
    let start_ms = (Utc::now() - chrono::Duration::days(30)).timestamp_millis() / 600_000 * 600_000;
    let windows: Vec<Snapshot> = (0..WINDOWS)
        .map(|s| window(profile_id, start_ms, s, &all, &mut rng))
        .collect();
    for chunk in windows.chunks(50) {
        let refs: Vec<&Snapshot> = chunk.iter().collect();
        odp_store::store_snapshots(&pool, &refs).await.unwrap();
    }

    let samples = WINDOWS * SAMPLES_PER_WINDOW;
    let merged = odp_store::profile_stacks(&pool, profile_id).await.unwrap();
    assert_eq!(merged.samples, samples);
    let distinct = merged.stacks.len() as i64;
    let meta = PprofMeta {
        event: Some(odp_core::EventKind::CpuClock),
        ..PprofMeta::default()
    };
    let pprof_merged = pprof::encode(&merged.stacks, &meta).len();
    let pprof_windows: usize = windows
        .iter()
        .map(|w| pprof::encode(&named_stacks(w), &meta).len())
        .sum();

    println!(
        "profile: {WINDOWS} windows of 10 s, {samples} samples, {distinct} distinct stacks \
         (by name, threads merged)"
    );
    let (sizes, total_windows) = table_bytes(&pool).await;
    report(
        "windows as they arrive (one block each)",
        &sizes,
        total_windows,
        samples,
        distinct,
    );
    odp_store::compact_profile(&pool, profile_id).await.unwrap();
    assert_eq!(
        odp_store::profile_stacks(&pool, profile_id)
            .await
            .unwrap()
            .samples,
        samples
    );
    let (sizes, total) = table_bytes(&pool).await;
    report(
        "compacted into one profile block",
        &sizes,
        total,
        samples,
        distinct,
    );

    let options = RetentionOptions {
        downsample_after_days: 7,
        ..RetentionOptions::default()
    };
    run_once(&odp_store::Database::from(&pool), &options, Utc::now())
        .await
        .unwrap();
    let windows_after = count(&pool, "select count(*) from snapshots").await;
    let (sizes, total_after) = table_bytes(&pool).await;
    report(
        &format!("downsampled to 10 min ({windows_after} windows)"),
        &sizes,
        total_after,
        samples,
        distinct,
    );
    println!(
        "gzip pprof, merged profile: {pprof_merged} B ({:.3} B/sample, {:.1} B/stack); \
         postgres is {:.1}x it (downsampled {:.1}x)",
        pprof_merged as f64 / samples as f64,
        pprof_merged as f64 / distinct as f64,
        total as f64 / pprof_merged as f64,
        total_after as f64 / pprof_merged as f64,
    );
    println!(
        "gzip pprof, one file per window: {pprof_windows} B ({:.3} B/sample); \
         postgres is {:.2}x it (downsampled {:.2}x)",
        pprof_windows as f64 / samples as f64,
        total as f64 / pprof_windows as f64,
        total_after as f64 / pprof_windows as f64,
    );
    pool.close().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    stack.stop().unwrap();
}

/// Bytes per sample count the window side (snapshots, samples, thread
/// names); bytes per distinct stack the dictionary (stacks and frames).
fn report(what: &str, sizes: &[(&str, i64)], total: i64, samples: u64, distinct: i64) {
    let of = |tables: &[&str]| -> i64 {
        sizes
            .iter()
            .filter(|(t, _)| tables.contains(t))
            .map(|(_, b)| b)
            .sum()
    };
    let windows = of(&["snapshots", "samples", "snapshot_threads"]);
    let blocks = of(&["profile_blocks"]);
    let parts: Vec<String> = sizes
        .iter()
        .filter(|(_, bytes)| *bytes > 0)
        .map(|(table, bytes)| format!("{table} {} KiB", bytes / 1024))
        .collect();
    println!(
        "{what}: {} KiB on disk ({}); windows {:.2} B/sample, profile blocks {:.2} B/sample \
         ({:.0} B/distinct stack), all {:.2} B/sample",
        total / 1024,
        parts.join(", "),
        windows as f64 / samples as f64,
        blocks as f64 / samples as f64,
        blocks as f64 / distinct as f64,
        total as f64 / samples as f64,
    );
}
