//! Retention and downsampling against a real Postgres: old 10 s windows
//! (compacted into their profile's block) merge into 10-minute buckets
//! with every total unchanged, and then into hours, expired windows leave both their rows and
//! their profile's block, a second pass changes nothing, and a pass never
//! runs while another process holds the lock.

use chrono::{DateTime, Duration, DurationRound, Utc};
use odp_core::filter::ThreadFilter;
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Snapshot, WeightedStack};
use odp_devstack::fixtures::frames;
use odp_devstack::{Stack, StackOptions};
use odp_pipeline::retention::{run_once, RetentionOptions, TierAge};
use odp_store::retention::RetentionLock;
use odp_store::{Database, Read};
use sqlx::PgPool;
use uuid::Uuid;

const HOT: &[&str] = &["main", "work", "hot"];
const IDLE: &[&str] = &["main", "idle"];
const ANCIENT: &[&str] = &["main", "ancient_only", "relic_only"];

/// Window `sequence` of a profile, 10 s long from `start`, with counts
/// that vary by window; thread 2 is renamed halfway through.
fn window(profile_id: Uuid, start: DateTime<Utc>, sequence: u64, only: &[&str]) -> Snapshot {
    let mut b = SnapshotBuilder::new();
    b.add(&frames(only), 1, sequence % 7 + 1);
    b.add(&frames(IDLE), 2, sequence % 3 + 2);
    b.name_thread(1, "main");
    b.name_thread(2, if sequence < 75 { "pool-a" } else { "pool-b" });
    let window_start_ms = start.timestamp_millis() + sequence as i64 * 10_000;
    b.build(SnapshotHeader {
        profile_id,
        host: "h-1".into(),
        agent_id: "agent".into(),
        sequence,
        window_start_ms,
        window_end_ms: window_start_ms + 10_000,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    })
}

async fn insert_profile(pool: &PgPool, id: Uuid, finished_at: DateTime<Utc>) {
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by,
                               service, created_at, updated_at, finished_at)
         values ($1, 'h-1', '{\"by\": \"pid\", \"value\": 7}', 3600000, 99, 'finished', 'test',
                 'svc', $2, $2, $2)",
    )
    .bind(id)
    .bind(finished_at)
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "insert into profile_events (profile_id, host, agent_id, kind, at, body)
         values ($1, 'h-1', 'agent', 'finished', $2, '{}')",
    )
    .bind(id)
    .bind(finished_at)
    .execute(pool)
    .await
    .unwrap();
}

/// Stores the windows and, as the pipeline does once a profile ended,
/// compacts them into the profile's block.
async fn store(pool: &PgPool, id: Uuid, start: DateTime<Utc>, windows: u64, only: &[&str]) {
    let snapshots: Vec<Snapshot> = (0..windows).map(|s| window(id, start, s, only)).collect();
    let refs: Vec<&Snapshot> = snapshots.iter().collect();
    odp_store::store_snapshots(pool, &refs).await.unwrap();
    let compacted = odp_store::compact_profile(pool, id).await.unwrap();
    assert_eq!(compacted.windows, windows);
}

async fn count(pool: &PgPool, sql: &str, id: Uuid) -> i64 {
    sqlx::query_scalar(sql)
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Everything the read side answers about a profile, order-independent.
#[derive(Debug, PartialEq)]
struct Totals {
    samples: u64,
    stacks: Vec<WeightedStack>,
    thread_slice: Vec<WeightedStack>,
    timeline_samples: i64,
}

fn sorted(mut stacks: Vec<WeightedStack>) -> Vec<WeightedStack> {
    stacks.sort_by(|a, b| a.frames.cmp(&b.frames));
    stacks
}

async fn totals(pool: &PgPool, id: Uuid) -> Totals {
    let profile = odp_store::profile_stacks(pool, id).await.unwrap();
    let slice = odp_store::read(
        pool,
        &Read {
            thread: Some(ThreadFilter::new("pool-.*").unwrap()),
            ..Read::profile(id)
        },
    )
    .await
    .unwrap();
    let timeline = odp_store::profile_timeline(pool, id).await.unwrap();
    Totals {
        samples: profile.samples,
        stacks: sorted(profile.stacks),
        thread_slice: sorted(slice.stacks()),
        timeline_samples: timeline.iter().map(|w| w.samples).sum(),
    }
}

/// The windows of a profile's block.
async fn block_windows(pool: &PgPool, id: Uuid) -> usize {
    odp_store::load_profile(pool, id)
        .await
        .unwrap()
        .windows
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_windows_merge_exactly_and_expired_windows_leave_their_blocks() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = Database::from(&pool);
    let now = Utc::now();
    let bucket = Duration::minutes(10);

    // A month-old profile: 150 windows of 10 s from a bucket boundary, so
    // 25 minutes in three buckets (60, 60 and 30 windows).
    let old = Uuid::new_v4();
    let old_start = (now - Duration::days(30)).duration_trunc(bucket).unwrap();
    insert_profile(&pool, old, old_start + Duration::minutes(25)).await;
    store(&pool, old, old_start, 150, HOT).await;
    // A profile from before the retention period, sharing `main` and the
    // idle stack with the others but alone in using `ANCIENT`'s frames.
    let ancient = Uuid::new_v4();
    let ancient_start = now - Duration::days(400);
    insert_profile(&pool, ancient, ancient_start + Duration::minutes(1)).await;
    store(&pool, ancient, ancient_start, 6, ANCIENT).await;
    // A recent one, left alone.
    let recent = Uuid::new_v4();
    insert_profile(&pool, recent, now).await;
    store(&pool, recent, now - Duration::hours(1), 30, HOT).await;

    let old_before = totals(&pool, old).await;
    let recent_before = totals(&pool, recent).await;
    assert_eq!(
        old_before.samples,
        (0..150u64).map(|s| s % 7 + 1 + s % 3 + 2).sum::<u64>()
    );
    assert_eq!(old_before.timeline_samples as u64, old_before.samples);
    assert_eq!(block_windows(&pool, ancient).await, 6);

    let options = RetentionOptions {
        retention_days: 365,
        downsample_after_days: 7,
        downsample_bucket_secs: 600,
        interval_secs: 3600,
        // Small batches, so the test goes through many transactions.
        batch: 2,
        ..RetentionOptions::default()
    };
    let pass = run_once(&db, &options, now)
        .await
        .unwrap()
        .expect("lock free");
    assert_eq!(pass.downsampled.buckets, 3);
    assert_eq!(pass.downsampled.snapshots_merged, 147);
    assert_eq!(pass.expired.snapshots, 6);
    assert_eq!(pass.expired.profiles, 1);
    assert_eq!(
        pass.collected.stacks + pass.collected.frames,
        0,
        "no global frame or stack tables to collect from any more"
    );

    // Downsampled: three rows holding all 150 windows, every total equal.
    let merged: Vec<(DateTime<Utc>, DateTime<Utc>, i32)> = sqlx::query_as(
        "select window_start, window_end, merged_windows from snapshots
         where profile_id = $1 order by window_start",
    )
    .bind(old)
    .fetch_all(&pool)
    .await
    .unwrap();
    let spans: Vec<(i64, i64, i32)> = merged
        .iter()
        .map(|(s, e, n)| {
            (
                (*s - old_start).num_seconds(),
                (*e - old_start).num_seconds(),
                *n,
            )
        })
        .collect();
    assert_eq!(spans, [(0, 600, 60), (600, 1200, 60), (1200, 1500, 30)]);
    assert_eq!(totals(&pool, old).await, old_before);
    let block = odp_store::load_profile(&pool, old).await.unwrap();
    assert_eq!(
        block.windows.len(),
        3,
        "the block's windows merged as the rows"
    );
    let threads: Vec<String> = block
        .threads
        .iter()
        .filter(|t| t.tid == 2)
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(
        threads,
        ["pool-a", "pool-b", "pool-b"],
        "the latest name per bucket"
    );
    assert_eq!(totals(&pool, recent).await, recent_before);
    assert_eq!(
        count(
            &pool,
            "select count(*) from snapshots where profile_id = $1",
            recent
        )
        .await,
        30
    );

    // Expired: the profile, its windows, its block and events.
    for sql in [
        "select count(*) from profiles where id = $1",
        "select count(*) from snapshots where profile_id = $1",
        "select count(*) from profile_events where profile_id = $1",
        "select count(*) from profile_blocks where profile_id = $1",
    ] {
        assert_eq!(count(&pool, sql, ancient).await, 0, "{sql}");
    }

    // A second pass finds nothing left to do and changes no total.
    let again = run_once(&db, &options, now).await.unwrap().unwrap();
    assert_eq!(again.downsampled.buckets, 0);
    assert_eq!(again.expired.snapshots, 0);
    assert_eq!(again.collected.stacks + again.collected.frames, 0);
    assert_eq!(totals(&pool, old).await, old_before);

    // While another process holds the lock, a pass does not run.
    let holder = RetentionLock::try_acquire(&db)
        .await
        .unwrap()
        .expect("no pass holds the lock");
    assert_eq!(run_once(&db, &options, now).await.unwrap(), None);
    holder.release().await.unwrap();
    assert!(run_once(&db, &options, now).await.unwrap().is_some());

    // A coarser tier for what is older than 20 days: the old profile's
    // 10-minute rows become one row per hour they start in.
    let hours: std::collections::BTreeSet<i64> = (0..3)
        .map(|k| (old_start + bucket * k).timestamp().div_euclid(3600))
        .collect();
    let tiered = RetentionOptions {
        downsample_tiers: vec![TierAge {
            after_days: 20,
            bucket_secs: 3600,
        }],
        ..options.clone()
    };
    let pass = run_once(&db, &tiered, now).await.unwrap().unwrap();
    assert_eq!(pass.downsampled.snapshots_merged, 3 - hours.len() as u64);
    let rows: Vec<(i64, i32)> = sqlx::query_as(
        "select count(*), sum(merged_windows)::int from snapshots where profile_id = $1",
    )
    .bind(old)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(rows, [(hours.len() as i64, 150)]);
    assert_eq!(totals(&pool, old).await, old_before);
    assert_eq!(block_windows(&pool, old).await, hours.len());
    assert_eq!(totals(&pool, recent).await, recent_before);
    let again = run_once(&db, &tiered, now).await.unwrap().unwrap();
    assert_eq!(again.downsampled, Default::default());

    pool.close().await;
    stack.stop().unwrap();
}
