//! Message sizes (issue 27, finding 2): the agent cuts a window into
//! messages under its limit, and a message over the pipeline's limit is
//! dead-lettered without stalling the partition behind it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use odp_client::types::ProfileStatus;
use odp_core::snapshot::MAX_MESSAGE_BYTES;
use odp_core::Snapshot;
use odp_devstack::ServiceProcess;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Message;
use serde_json::json;
use uuid::Uuid;

use crate::common;

fn build_deep_threads(out_dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e/data/deep_threads.c");
    let binary = out_dir.join("deep_threads");
    let built = Command::new("cc")
        .args(["-O1", "-pthread", "-fno-omit-frame-pointer"])
        .arg("-fno-optimize-sibling-calls")
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .status()
        .expect("run cc");
    assert!(built.success(), "cc {}", source.display());
    binary
}

/// Every message of `topic` from the start, until `quiet` passes with none.
async fn drain(bootstrap: &str, topic: &str, quiet: Duration) -> Vec<(Option<Vec<u8>>, Vec<u8>)> {
    let consumer: StreamConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("sizes-{}", Uuid::new_v4()))
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    consumer.subscribe(&[topic]).unwrap();
    let mut out = Vec::new();
    while let Ok(message) = tokio::time::timeout(quiet, consumer.recv()).await {
        let message = message.unwrap();
        out.push((
            message.key().map(<[u8]>::to_vec),
            message.payload().unwrap_or_default().to_vec(),
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_window_is_sent_in_messages_that_fit_and_all_of_it_is_stored() {
    let h = common::start("sizes", 10).await;
    let admin = h.platform.client();
    let binary = build_deep_threads(h.stack.state_dir());
    let program = ServiceProcess::builder("deep_threads", &binary)
        .args(["4", "100", "90"])
        .log_dir(h.stack.log_dir())
        .spawn()
        .expect("start deep_threads");
    let request = json!({"host": h.platform.host_id, "pid": program.pid(),
        "duration_secs": 30, "frequency_hz": 999, "window_secs": 30});
    let id = admin.start_profile(&request).await.unwrap().id;
    let ended = admin
        .wait_finished(id, Duration::from_secs(150), |_| {})
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    assert_eq!(ended.status, ProfileStatus::Finished, "{ended:?}");

    let key = id.to_string().into_bytes();
    let topics = h.stack.topics().clone();
    let messages: Vec<Vec<u8>> = drain(
        h.stack.kafka_bootstrap(),
        &topics.stacks,
        Duration::from_secs(5),
    )
    .await
    .into_iter()
    .filter(|(k, _)| k.as_deref() == Some(key.as_slice()))
    .map(|(_, payload)| payload)
    .collect();
    let largest = messages.iter().map(Vec::len).max().unwrap_or(0);
    let parts: Vec<Snapshot> = messages
        .iter()
        .map(|m| Snapshot::decode(m).unwrap())
        .collect();
    let sent: u64 = parts.iter().map(Snapshot::total_samples).sum();
    let frames: usize = parts.iter().map(|p| p.frames.len()).max().unwrap_or(0);
    println!(
        "999 Hz, 4 threads 100 frames deep: {} messages, largest {largest} bytes \
         (limit {MAX_MESSAGE_BYTES}), {sent} samples",
        messages.len()
    );
    assert!(largest <= MAX_MESSAGE_BYTES, "{largest} bytes");
    assert!(
        messages.len() > 1,
        "a 30 s window of this program is several messages: {} of up to {largest} bytes, \
         {frames} frames",
        messages.len()
    );

    // All of it stored, once: what the agent sent is what reads answer.
    let pool = h.pool().await;
    h.wait_count(
        &pool,
        "select count(*) from snapshots where profile_id = $1::uuid",
        id,
        messages.len() as i64,
        Duration::from_secs(60),
    )
    .await;
    let stored = odp_store::profile_stacks(&pool, id).await.unwrap();
    assert_eq!(stored.samples, sent);
    // Two cores at 999 Hz for 30 s earn at most ~60,000 samples; a busy
    // machine gives the program less, never nothing.
    assert!((6_000..=61_000).contains(&sent), "{sent} samples");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_the_limit_is_dead_lettered_and_the_partition_moves_on() {
    let h = common::start_without_agent("oversize").await;
    let topics = h.stack.topics().clone();
    let producer: rdkafka::producer::FutureProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", h.stack.kafka_bootstrap())
        .set("partitioner", "murmur2_random")
        .set("message.max.bytes", (4 << 20).to_string())
        .create()
        .unwrap();
    let profile_id = Uuid::new_v4();
    let key = profile_id.to_string();
    let host = "oversize-host";
    common::record_profile(&h, profile_id, host, "oversize").await;
    let agent = common::agent_identity(&h, host);
    let mut oversize = b"ODPS".to_vec();
    oversize.resize(2 << 20, 0x5a);
    common::send_signed(&h, &producer, &agent, &topics.stacks, &key, &oversize).await;
    let window = odp_core::snapshot::SnapshotBuilder::new();
    let mut window = window;
    window.add(&[odp_core::Frame::function("main")], 1, 5);
    let window = window.build(odp_core::snapshot::SnapshotHeader {
        profile_id,
        host: host.into(),
        agent_id: "a".into(),
        sequence: 0,
        window_start_ms: 1_700_000_000_000,
        window_end_ms: 1_700_000_010_000,
        event: odp_core::EventKind::CpuClock,
        period: 10_101_010,
        frequency_hz: 99,
    });
    let window = window.encode();
    common::send_signed(&h, &producer, &agent, &topics.stacks, &key, &window).await;

    let pool = h.pool().await;
    h.wait_count(
        &pool,
        "select count(*) from snapshots where profile_id = $1::uuid",
        profile_id,
        1,
        Duration::from_secs(60),
    )
    .await;
    let letters = common::dead_letters(&h, &key, 1).await;
    assert!(letters[0].payload.is_empty(), "its bytes are not kept");
    let reason = &letters[0].reason;
    assert!(reason.contains("over the 1048576 byte limit"), "{reason}");
}
