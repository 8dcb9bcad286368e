//! The worker evaluates the profiles a batch touched: a snapshot sent to
//! Kafka ends up as a detection, a `profile_finished` event re-runs the
//! evaluation, and the runtime a `profile_started` event reports is what
//! library-version rules read.

use std::time::Duration;

mod support;

use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use odp_core::runtime::LibraryKind;
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Language};
use odp_devstack::{Stack, StackOptions};
use odp_pipeline::Config;
use odp_plumbing::Topics;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use sqlx::PgPool;
use uuid::Uuid;

async fn send(producer: &FutureProducer, topic: &str, key: &str, payload: &[u8]) {
    producer
        .send(
            FutureRecord::to(topic).key(key).payload(payload),
            Duration::from_secs(30),
        )
        .await
        .map_err(|(e, _)| e)
        .unwrap();
}

/// Polls until `condition` holds; the deadline only bounds a hung test.
async fn eventually(pool: &PgPool, sql: &str, id: Uuid) -> i64 {
    for _ in 0..600 {
        let n: i64 = sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap();
        if n > 0 {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never true: {sql}");
}

/// A stack, a pipeline worker on its broker and database, and a producer.
struct Harness {
    stack: Stack,
    pool: PgPool,
    topics: Topics,
    producer: FutureProducer,
    stop: tokio::sync::oneshot::Sender<()>,
    worker: tokio::task::JoinHandle<Result<(), odp_pipeline::PipelineError>>,
}

impl Harness {
    async fn start(topic_prefix: &str, detect_interval_secs: u64) -> Harness {
        let topics = Topics::with_prefix(&format!("{topic_prefix}{}-", std::process::id()));
        let stack = Stack::start(StackOptions::ephemeral().topics(topics.clone()))
            .await
            .unwrap();
        let pool = stack.connect().await.unwrap();
        let config = Config {
            kafka: odp_plumbing::KafkaArgs {
                bootstrap: stack.kafka_bootstrap().to_owned(),
                options: Vec::new(),
            },
            database_url: stack.database_url().to_owned(),
            group_id: "odp-pipeline-test".into(),
            session_timeout_ms: 10_000,
            topics: topics.clone(),
            max_message_bytes: 1 << 20,
            batch_max: 100,
            batch_wait_ms: 50,
            queued_batches: 4,
            drain_timeout_secs: 5,
            rebalance_flush_secs: 5,
            compact_after_secs: 30,
            detect_interval_secs,
            alerts: Default::default(),
            retention: Default::default(),
            metrics_listen: None,
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let worker = tokio::spawn(odp_pipeline::run(config, async {
            let _ = stopped.await;
        }));
        let producer: FutureProducer = ClientConfig::new()
            .set("bootstrap.servers", stack.kafka_bootstrap())
            .create()
            .unwrap();
        Harness {
            stack,
            pool,
            topics,
            producer,
            stop,
            worker,
        }
    }

    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.worker.await.unwrap().unwrap();
        self.pool.close().await;
        self.stack.stop().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_windows_and_finished_profiles_are_evaluated() {
    let h = Harness::start("t", 10).await;
    let (pool, producer, topics) = (&h.pool, &h.producer, &h.topics);

    let id = Uuid::new_v4();
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by)
         values ($1, 'h-1', '{\"by\": \"pid\", \"value\": 7}', 60000, 99, 'running', 'test')",
    )
    .bind(id)
    .execute(pool)
    .await
    .unwrap();
    let mut b = SnapshotBuilder::new();
    let hot = [
        Frame::function("main"),
        Frame::function("java.util.Hashtable.get"),
    ];
    b.add(&hot, 1, 40);
    b.add(&[Frame::function("main")], 1, 60);
    let snapshot = b.build(SnapshotHeader {
        profile_id: id,
        host: "h-1".into(),
        agent_id: "agent".into(),
        sequence: 0,
        window_start_ms: 1_700_000_000_000,
        window_end_ms: 1_700_000_010_000,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    });
    send(
        producer,
        &topics.stacks,
        &id.to_string(),
        &snapshot.encode(),
    )
    .await;
    eventually(
        pool,
        "select count(*) from detections where profile_id = $1 and rule_id = 'jvm-hashtable'",
        id,
    )
    .await;

    let finished = AgentEvent {
        host: "h-1".into(),
        agent_id: "agent".into(),
        at_ms: 1_700_000_020_000,
        kind: AgentEventKind::ProfileFinished {
            profile_id: id,
            reason: FinishReason::DurationElapsed,
            snapshots: 1,
            samples: 100,
            spooled_snapshots: 0,
            spooled_samples: 0,
        },
    };
    send(producer, &topics.events, "h-1", &finished.to_json()).await;
    // The evaluation on finish updates the same row.
    eventually(
        pool,
        "select count(*) from detections
         where profile_id = $1 and last_evaluated_at > first_evaluated_at",
        id,
    )
    .await;
    let issues = odp_store::profile_issues(pool, id).await.unwrap();
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].share, 40.0);

    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libraries_reported_in_profile_started_are_evaluated() {
    let h = Harness::start("r", 1).await;
    let (pool, producer, topics) = (&h.pool, &h.producer, &h.topics);

    let id = Uuid::new_v4();
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by)
         values ($1, 'h-1', '{\"by\": \"process_name\", \"value\": \"billing\"}', 60000, 99,
                 'dispatched', 'test')",
    )
    .bind(id)
    .execute(pool)
    .await
    .unwrap();
    // The agent reports its runtime as the profile starts, then windows.
    let started = support::profile_started(
        id,
        Language::Jvm,
        "1.8.0_392",
        &["-Xmx2g"],
        &[(LibraryKind::Jar, "log4j", "1.2.17")],
    );
    send(producer, &topics.events, "h-1", &started.to_json()).await;
    eventually(
        pool,
        "select count(*) from profile_events where profile_id = $1 and kind = 'profile_started'",
        id,
    )
    .await;
    let window = support::snapshot(id, 0, &[(&["main", "work"], 100)]);
    send(producer, &topics.stacks, &id.to_string(), &window.encode()).await;
    eventually(
        pool,
        "select count(*) from detections
         where profile_id = $1 and rule_id = 'jvm-log4j1-library'",
        id,
    )
    .await;
    let issues = odp_store::profile_issues(pool, id).await.unwrap();
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!((issues[0].share, issues[0].samples_total), (100.0, 100));
    assert_eq!(issues[0].detail["libraries"][0]["version"], "1.2.17");

    h.stop().await;
}
