//! Windows sampled at different rates merge by time, not by raw count,
//! against a real Postgres: a profile whose frequency FDA moved between
//! windows, and a service aggregate over hosts sampled at different rates.

use chrono::{DateTime, Duration, Utc};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot, WeightedStack};
use odp_devstack::{Stack, StackOptions};
use odp_store::{Read, ReadScope};
use sqlx::PgPool;
use uuid::Uuid;

const NANOS: u64 = 1_000_000_000;

/// One second of samples at `hz`, split `counts` between leaf functions.
fn window(
    profile_id: Uuid,
    host: &str,
    sequence: u64,
    start: DateTime<Utc>,
    hz: u32,
    counts: &[(&str, u64)],
) -> Snapshot {
    let mut b = SnapshotBuilder::new();
    for &(leaf, count) in counts {
        b.add(&[Frame::function("main"), Frame::function(leaf)], 1, count);
    }
    b.name_thread(1, "main");
    let window_start_ms = start.timestamp_millis() + sequence as i64 * 1000;
    b.build(SnapshotHeader {
        profile_id,
        host: host.into(),
        agent_id: format!("agent-{host}"),
        sequence,
        window_start_ms,
        window_end_ms: window_start_ms + 1000,
        event: EventKind::CpuClock,
        period: NANOS / u64::from(hz),
        frequency_hz: hz,
    })
}

async fn insert_profile(pool: &PgPool, id: Uuid, host: &str, at: DateTime<Utc>) {
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by,
                               service, created_at, updated_at, finished_at)
         values ($1, $2, '{\"by\": \"pid\", \"value\": 7}', 2000, 999, 'finished', 'test',
                 'mixed', $3, $3, $3)",
    )
    .bind(id)
    .bind(host)
    .bind(at)
    .execute(pool)
    .await
    .unwrap();
}

async fn store(pool: &PgPool, snapshots: &[Snapshot]) {
    let refs: Vec<&Snapshot> = snapshots.iter().collect();
    odp_store::store_snapshots(pool, &refs).await.unwrap();
}

fn leaf_counts(stacks: &[WeightedStack]) -> Vec<(String, u64)> {
    let mut leaves: Vec<(String, u64)> = stacks
        .iter()
        .map(|s| (s.frames.last().unwrap().clone(), s.count))
        .collect();
    leaves.sort();
    leaves
}

fn owned(pairs: &[(&str, u64)]) -> Vec<(String, u64)> {
    pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_at_different_rates_merge_by_time() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let start = Utc::now() - Duration::minutes(5);

    // FDA ran phase A at 1000 Hz and, once it held still, phase B at 100
    // Hz: one second each, so each phase is half the time although phase
    // A has ten times the samples.
    let fda = Uuid::new_v4();
    insert_profile(&pool, fda, "h-1", start).await;
    store(
        &pool,
        &[
            window(fda, "h-1", 0, start, 1000, &[("phase_a", 1000)]),
            window(fda, "h-1", 1, start, 100, &[("phase_b", 90), ("rare", 10)]),
        ],
    )
    .await;
    let profile = odp_store::profile_stacks(&pool, fda).await.unwrap();
    // The 1,100 samples taken, shared by time: 1 s, 0.9 s and 0.1 s of 2 s.
    assert_eq!(profile.samples, 1100);
    let by_time = owned(&[("phase_a", 550), ("phase_b", 495), ("rare", 55)]);
    assert_eq!(leaf_counts(&profile.stacks), by_time);
    let frames = odp_store::profile_frames(&pool, fda).await.unwrap();
    assert_eq!(frames.samples, 1100);

    let slice = odp_store::read(&pool, &Read::profile(fda)).await.unwrap();
    let host_stacks = odp_profile::stacks::weighted_stacks(&slice.hosts[0].view());
    assert_eq!(leaf_counts(&host_stacks), by_time);

    // Two hosts of one service at different rates, same work: equal shares.
    let (fast, slow) = (Uuid::new_v4(), Uuid::new_v4());
    insert_profile(&pool, fast, "h-fast", start).await;
    insert_profile(&pool, slow, "h-slow", start).await;
    store(
        &pool,
        &[
            window(fast, "h-fast", 0, start, 999, &[("handler", 999)]),
            window(slow, "h-slow", 0, start, 99, &[("handler", 49), ("gc", 50)]),
        ],
    )
    .await;
    let aggregate = odp_store::read(
        &pool,
        &Read {
            scope: ReadScope::Service {
                service: "mixed".into(),
                hosts: vec!["h-fast".into(), "h-slow".into()],
            },
            from: Some(start - Duration::minutes(1)),
            to: Some(Utc::now()),
            ..Read::profile(Uuid::nil())
        },
    )
    .await
    .unwrap();
    let all: Vec<WeightedStack> = aggregate
        .hosts
        .iter()
        .flat_map(|h| odp_profile::stacks::weighted_stacks(&h.view()))
        .collect();
    let mut merged: Vec<(String, u64)> = Vec::new();
    for (leaf, count) in leaf_counts(&all) {
        match merged.last_mut() {
            Some(last) if last.0 == leaf => last.1 += count,
            _ => merged.push((leaf, count)),
        }
    }
    // 1,098 samples over 2 s: h-fast's second of `handler`, h-slow's half
    // second each of `handler` and `gc`.
    assert_eq!(merged, owned(&[("gc", 277), ("handler", 821)]));

    // Windows at one rate are left as they are.
    let steady = Uuid::new_v4();
    insert_profile(&pool, steady, "h-2", start).await;
    store(
        &pool,
        &[
            window(steady, "h-2", 0, start, 99, &[("a", 7), ("b", 3)]),
            window(steady, "h-2", 1, start, 99, &[("a", 1)]),
        ],
    )
    .await;
    let profile = odp_store::profile_stacks(&pool, steady).await.unwrap();
    assert_eq!(leaf_counts(&profile.stacks), owned(&[("a", 8), ("b", 3)]));
}
