//! Undecodable messages go to the dead-letter topic with a reason, and the
//! pipeline carries on: a valid snapshot after the garbage is stored once,
//! however often it is delivered.

use std::time::Duration;

use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame};
use uuid::Uuid;

use crate::common;

/// The host the crafted windows come from.
const HOST: &str = "deadletter-host";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_goes_to_dead_letter_and_valid_snapshots_are_stored_once() {
    let h = common::start("deadletter", 10).await;
    let topics = h.stack.topics().clone();
    let producer = common::producer(h.stack.kafka_bootstrap());
    let profile_id = Uuid::new_v4();
    let key = profile_id.to_string();
    common::record_profile(&h, profile_id, HOST, "deadletter").await;
    // Signed by a real identity of the host, so what is refused is refused
    // for its bytes.
    let agent = common::agent_identity(&h, HOST);
    let send = |payload: Vec<u8>| {
        let (h, producer, agent, topic, key) = (&h, &producer, &agent, &topics.stacks, &key);
        async move { common::send_signed(h, producer, agent, topic, key, &payload).await }
    };

    send(b"\x00garbage that is no snapshot".to_vec()).await;
    let first = window(profile_id, 0, 40).encode();
    send(first.clone()).await;
    // A redelivery of the same window, as after a producer retry, then the
    // next window: same key, same partition, so once the next window is
    // stored the redelivery has been through the pipeline too.
    send(first).await;
    send(window(profile_id, 1, 7).encode()).await;

    let letters = common::dead_letters(&h, &key, 1).await;
    assert_eq!(letters[0].payload, b"\x00garbage that is no snapshot");
    let reason = &letters[0].reason;
    assert!(reason.contains("bad magic"), "{reason}");

    let pool = h.pool().await;
    h.wait_count(
        &pool,
        "select count(*) from snapshots where profile_id = $1::uuid",
        &key,
        2,
        Duration::from_secs(60),
    )
    .await;
    let (snapshots, samples): (i64, i64) = sqlx::query_as(
        "select count(*), coalesce(sum(n.samples), 0)::bigint
         from snapshots n where n.profile_id = $1",
    )
    .bind(profile_id)
    .fetch_one(&pool)
    .await
    .unwrap();
    // The windows' blocks hold exactly those samples.
    let stored = odp_store::profile_stacks(&pool, profile_id).await.unwrap();
    assert_eq!(stored.samples as i64, samples);
    assert_eq!(
        (snapshots, samples),
        (2, 42 + 9),
        "each window stored exactly once"
    );
}

fn window(profile_id: Uuid, sequence: u64, work: u64) -> odp_core::Snapshot {
    let mut builder = SnapshotBuilder::new();
    builder.add(&[Frame::function("main"), Frame::function("work")], 1, work);
    builder.add(&[Frame::function("main")], 1, 2);
    let start = 1_700_000_000_000 + sequence as i64 * 10_000;
    builder.build(SnapshotHeader {
        profile_id,
        host: HOST.into(),
        agent_id: "test-agent".into(),
        sequence,
        window_start_ms: start,
        window_end_ms: start + 10_000,
        event: EventKind::CpuClock,
        period: 10_101_010,
        frequency_hz: 99,
    })
}
