//! Loss-free ingest, against the real broker and Postgres with the real
//! `odp-pipeline` binary: two workers split the partitions; a worker
//! killed mid-stream and restarted neither loses nor doubles a sample;
//! SIGTERM drains and commits exactly what was stored; Postgres going away
//! and coming back loses nothing. Counts are exact, never approximate.
//!
//! Needs the binaries built (`cargo build --workspace --bins`).

use std::time::Duration;

use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame};
use odp_devstack::{
    pick_free_ports, workspace_binary, ServiceProcess, Stack, StackOptions, Topics,
    TANSU_KAFKA_OPTIONS,
};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use sqlx::PgPool;
use uuid::Uuid;

/// Samples in each snapshot: two stacks, 3 + 4.
const SAMPLES_PER_SNAPSHOT: i64 = 7;

struct Fleet {
    stack: Stack,
    pool: PgPool,
    producer: FutureProducer,
    profiles: Vec<Uuid>,
}

impl Fleet {
    async fn start(name: &str) -> Fleet {
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_env_filter("info")
            .try_init();
        let prefix = format!("{name}-{}-", &Uuid::new_v4().simple().to_string()[..8]);
        let stack = Stack::start(StackOptions::ephemeral().topics(Topics::with_prefix(&prefix)))
            .await
            .expect("start the stack (is tansu installed?)");
        let pool = stack.connect().await.unwrap();
        let producer = ClientConfig::new()
            .set("bootstrap.servers", stack.kafka_bootstrap())
            .set("partitioner", "murmur2_random")
            .set("batch.num.messages", "1")
            .create()
            .unwrap();
        // Eight profiles: their ids spread over the four stacks partitions.
        let profiles = (0..8).map(|_| Uuid::new_v4()).collect();
        Fleet {
            stack,
            pool,
            producer,
            profiles,
        }
    }

    /// A pipeline worker of the shared group, serving metrics on a port
    /// of its own (returned).
    fn worker(&self, name: &str, batch_max: u32) -> (ServiceProcess, u16) {
        let port = pick_free_ports(1).unwrap()[0];
        let topics = self.stack.topics();
        let process = ServiceProcess::builder(name, workspace_binary("odp-pipeline").unwrap())
            .args(["--database-url", self.stack.database_url()])
            .args(["--kafka-bootstrap", self.stack.kafka_bootstrap()])
            .args(["--topic-stacks", &topics.stacks])
            .args(["--topic-events", &topics.events])
            .args(["--topic-dead-letter", &topics.dead_letter])
            .args([
                "--batch-max",
                &batch_max.to_string(),
                "--batch-wait-ms",
                "50",
            ])
            .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
            .env("ODP_KAFKA_OPTIONS", TANSU_KAFKA_OPTIONS)
            .log_dir(self.stack.log_dir())
            .spawn()
            .expect("start odp-pipeline");
        (process, port)
    }

    /// Publishes sequences `sequences` of every profile.
    async fn produce(&self, sequences: std::ops::Range<i64>) {
        for sequence in sequences {
            for &profile_id in &self.profiles {
                let payload = snapshot(profile_id, sequence);
                let key = profile_id.to_string();
                let record = FutureRecord::to(&self.stack.topics().stacks)
                    .key(&key)
                    .payload(&payload);
                self.producer
                    .send(record, Duration::from_secs(30))
                    .await
                    .map_err(|(e, _)| e)
                    .expect("produce");
            }
        }
    }

    /// (snapshots, samples) stored for the fleet's profiles.
    async fn stored(&self) -> (i64, i64) {
        sqlx::query_as(
            "select count(distinct n.id), coalesce(sum(s.count), 0)::bigint
             from snapshots n join samples s on s.snapshot_id = n.id
             where n.profile_id = any($1)",
        )
        .bind(&self.profiles)
        .fetch_one(&self.pool)
        .await
        .unwrap_or((-1, -1))
    }

    /// Waits until `snapshots` are stored; the deadline only bounds a hung
    /// test, and the failure shows the workers' logs.
    async fn wait_stored(&self, snapshots: i64, workers: &[&ServiceProcess]) -> (i64, i64) {
        for _ in 0..1200 {
            let stored = self.stored().await;
            if stored.0 >= snapshots {
                return stored;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let logs: Vec<String> = workers.iter().map(|w| w.log_tail(40)).collect();
        panic!(
            "never stored {snapshots} snapshots, at {:?}\n{}",
            self.stored().await,
            logs.join("\n---\n")
        );
    }
}

fn snapshot(profile_id: Uuid, sequence: i64) -> Vec<u8> {
    let mut b = SnapshotBuilder::new();
    b.add(&[Frame::function("main"), Frame::function("hot")], 1, 3);
    b.add(&[Frame::function("main"), Frame::function("cold")], 2, 4);
    let start = 1_700_000_000_000 + sequence * 10_000;
    b.build(SnapshotHeader {
        profile_id,
        host: "h".into(),
        agent_id: "agent-1".into(),
        sequence: sequence as u64,
        window_start_ms: start,
        window_end_ms: start + 10_000,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    })
    .encode()
}

/// The value of a metric sample (first matching line), or 0 when absent.
async fn metric(port: u16, name: &str, label: &str) -> f64 {
    let Ok(response) = reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await else {
        return 0.0;
    };
    let text = response.text().await.unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with(name) && l.contains(label))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

async fn wait_for_log(worker: &ServiceProcess, needle: &str) {
    for _ in 0..600 {
        if worker.log().contains(needle) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "{} never logged {needle:?}:\n{}",
        worker.name(),
        worker.log_tail(40)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_split_the_partitions_and_store_each_sample_once() {
    let fleet = Fleet::start("split").await;
    let (first, first_port) = fleet.worker("pipeline-1", 20);
    wait_for_log(&first, "partitions assigned").await;
    let (second, second_port) = fleet.worker("pipeline-2", 20);
    // The second worker is only assigned once the group rebalanced.
    wait_for_log(&second, "partitions assigned").await;

    fleet.produce(0..25).await;
    let (snapshots, samples) = fleet.wait_stored(200, &[&first, &second]).await;
    assert_eq!((snapshots, samples), (200, 200 * SAMPLES_PER_SNAPSHOT));

    let stored = "odp_pipeline_snapshots_stored_total";
    let by_first = metric(first_port, stored, "").await;
    let by_second = metric(second_port, stored, "").await;
    assert!(
        by_first > 0.0 && by_second > 0.0,
        "both workers store: {by_first} + {by_second}"
    );
    assert_eq!(by_first + by_second, 200.0, "no snapshot stored twice");
    // Every snapshot repeats the same frames and stacks: after its first
    // batch, a worker sends none of them again.
    let skipped = "odp_pipeline_known_rows_skipped_total";
    assert!(metric(first_port, skipped, "").await > 0.0);
    let (frames, stacks): (i64, i64) = sqlx::query_as(
        "select (select count(*) from frames where function in ('main', 'hot', 'cold')),
                (select count(*) from stacks)",
    )
    .fetch_one(&fleet.pool)
    .await
    .unwrap();
    assert_eq!((frames, stacks), (3, 2), "each stored once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_stream_loses_and_doubles_nothing() {
    let fleet = Fleet::start("kill").await;
    fleet.produce(0..40).await;
    let (mut worker, _) = fleet.worker("pipeline-doomed", 5);
    fleet.wait_stored(40, &[&worker]).await;
    worker.kill().unwrap();
    let (partial, _) = fleet.stored().await;
    assert!(partial < 320, "killed before the end: {partial}");

    let (restarted, _) = fleet.worker("pipeline-restarted", 5);
    let stored = fleet.wait_stored(320, &[&restarted]).await;
    assert_eq!(stored, (320, 320 * SAMPLES_PER_SNAPSHOT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_and_commits_exactly_what_was_stored() {
    let fleet = Fleet::start("drain").await;
    let (mut worker, port) = fleet.worker("pipeline-draining", 10);
    wait_for_log(&worker, "partitions assigned").await;
    fleet.produce(0..20).await;
    // Stop while the worker is busy with the 160 snapshots.
    fleet.wait_stored(20, &[&worker]).await;
    let status = worker.stop().unwrap();
    assert!(
        status.success(),
        "clean exit: {status}\n{}",
        worker.log_tail(30)
    );
    assert!(worker.log().contains("pipeline stopped"));
    let _ = port;
    let (by_first, _) = fleet.stored().await;

    // Whatever the first worker stored, it committed: the next worker
    // consumes exactly the rest, plus one new marker snapshot.
    let (next, next_port) = fleet.worker("pipeline-next", 10);
    wait_for_log(&next, "partitions assigned").await;
    fleet.produce(20..21).await;
    let stored = fleet.wait_stored(168, &[&next]).await;
    assert_eq!(stored, (168, 168 * SAMPLES_PER_SNAPSHOT));
    let consumed = metric(next_port, "odp_pipeline_messages_total", "stacks").await;
    assert_eq!(
        consumed as i64,
        168 - by_first,
        "stored {by_first} before SIGTERM"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_going_away_and_back_loses_nothing() {
    let fleet = Fleet::start("pg-restart").await;
    let (worker, _) = fleet.worker("pipeline-patient", 10);
    fleet.produce(0..10).await;
    fleet.wait_stored(80, &[&worker]).await;

    fleet.stack.postgres().stop().unwrap();
    fleet.produce(10..20).await;
    // The worker retries with backoff meanwhile.
    tokio::time::sleep(Duration::from_secs(3)).await;
    fleet.stack.postgres().start(false, false).await.unwrap();

    let stored = fleet.wait_stored(160, &[&worker]).await;
    assert_eq!(stored, (160, 160 * SAMPLES_PER_SNAPSHOT));
}
