//! A stack (Tansu and Postgres) with real `odp-pipeline` workers of one
//! consumer group, the snapshots published to it and exact counts of what
//! was stored: what the scale-out tests share.
//!
//! Needs the binaries built (`cargo build --workspace --bins`).

use std::path::PathBuf;
use std::time::Duration;

use odp_core::identity::{AgentIdentity, Channel};
use odp_devstack::{
    pick_free_ports, workspace_binary, ServiceProcess, Stack, StackOptions, TANSU_KAFKA_OPTIONS,
};
use odp_plumbing::Topics;
use odp_store::ProfileStatus;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use sqlx::PgPool;
use uuid::Uuid;

use super::signing::{insert_profile, Issuer};

/// The two stacks of each snapshot published.
const HOT: (&[&str], u64) = (&["main", "hot"], 3);
const COLD: (&[&str], u64) = (&["main", "cold"], 4);
/// Samples in each snapshot.
pub(crate) const SAMPLES_PER_SNAPSHOT: i64 = 7;

pub(crate) struct Fleet {
    pub(crate) stack: Stack,
    pub(crate) pool: PgPool,
    producer: FutureProducer,
    /// Profile `i` is published to stacks partition `i % 4`, so every
    /// partition carries two of the eight. All run on `h-1`.
    pub(crate) profiles: Vec<Uuid>,
    /// The agent of `h-1`, which signs every snapshot.
    agent: AgentIdentity,
    /// The key the workers verify its certificate with.
    command_public_key: PathBuf,
}

impl Fleet {
    pub(crate) async fn start(name: &str) -> Fleet {
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
            .set("batch.num.messages", "1")
            .create()
            .unwrap();
        let db = odp_store::Database::from(&pool);
        let mut profiles = Vec::new();
        for _ in 0..8 {
            profiles.push(insert_profile(&db, "h-1", ProfileStatus::Dispatched).await);
        }
        let issuer = Issuer::new();
        let command_public_key = issuer.write_public_key(stack.state_dir());
        Fleet {
            agent: issuer.identity("h-1"),
            command_public_key,
            stack,
            pool,
            producer,
            profiles,
        }
    }

    /// A pipeline worker of the shared group, serving metrics on a port
    /// of its own (returned).
    pub(crate) fn worker(&self, name: &str, batch_max: u32) -> (ServiceProcess, u16) {
        self.worker_with(name, batch_max, &[])
    }

    /// [`Fleet::worker`] with extra command-line flags.
    pub(crate) fn worker_with(
        &self,
        name: &str,
        batch_max: u32,
        extra_args: &[&str],
    ) -> (ServiceProcess, u16) {
        let port = pick_free_ports(1).unwrap()[0];
        let topics = self.stack.topics();
        let process = ServiceProcess::builder(name, workspace_binary("odp-pipeline").unwrap())
            .args(["--database-url", self.stack.database_url()])
            .args(["--kafka-bootstrap", self.stack.kafka_bootstrap()])
            .args(["--topic-stacks", &topics.stacks])
            .args(["--topic-events", &topics.events])
            .args(["--topic-dead-letter", &topics.dead_letter])
            .arg("--command-public-key")
            .arg(&self.command_public_key)
            .args([
                "--batch-max",
                &batch_max.to_string(),
                "--batch-wait-ms",
                "50",
            ])
            .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
            .args(extra_args)
            .env("ODP_KAFKA_OPTIONS", TANSU_KAFKA_OPTIONS)
            .log_dir(self.stack.log_dir())
            .spawn()
            .expect("start odp-pipeline");
        (process, port)
    }

    /// Publishes sequences `sequences` of every profile.
    pub(crate) async fn produce(&self, sequences: std::ops::Range<i64>) {
        for sequence in sequences {
            for profile in 0..self.profiles.len() {
                self.produce_one(profile, sequence).await;
            }
        }
    }

    /// Publishes sequence `sequence` of the `profile`th profile.
    pub(crate) async fn produce_one(&self, profile: usize, sequence: i64) {
        let profile_id = self.profiles[profile];
        let payload = super::snapshot(profile_id, sequence as u64, &[HOT, COLD]).encode();
        let key = profile_id.to_string();
        let signature = self.agent.sign(Channel::Stacks, &payload);
        let record = FutureRecord::to(&self.stack.topics().stacks)
            .key(&key)
            .partition(profile as i32 % Topics::STACKS_PARTITIONS)
            .payload(&payload)
            .headers(odp_plumbing::signed::headers(&signature));
        self.producer
            .send(record, Duration::from_secs(30))
            .await
            .map_err(|(e, _)| e)
            .expect("produce");
    }

    /// (snapshots, samples) stored for the fleet's profiles.
    pub(crate) async fn stored(&self) -> (i64, i64) {
        sqlx::query_as(
            "select count(*), coalesce(sum(n.samples), 0)::bigint
             from snapshots n where n.profile_id = any($1)",
        )
        .bind(&self.profiles)
        .fetch_one(&self.pool)
        .await
        .unwrap_or((-1, -1))
    }

    /// Waits until `snapshots` are stored; the deadline only bounds a hung
    /// test, and the failure shows the workers' logs.
    pub(crate) async fn wait_stored(
        &self,
        snapshots: i64,
        workers: &[&ServiceProcess],
    ) -> (i64, i64) {
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

/// The value of a metric sample (first matching line), or 0 when absent.
pub(crate) async fn metric(port: u16, name: &str, label: &str) -> f64 {
    let Ok(response) = reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await else {
        return 0.0;
    };
    let text = response.text().await.unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with(name) && l.contains(label))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

/// Waits until `worker` has logged `needle` at least `times` times.
pub(crate) async fn wait_for_logged(worker: &ServiceProcess, needle: &str, times: usize) {
    for _ in 0..600 {
        if worker.log().matches(needle).count() >= times {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "{} never logged {needle:?} {times} times:\n{}",
        worker.name(),
        worker.log_tail(40)
    );
}

pub(crate) async fn wait_for_log(worker: &ServiceProcess, needle: &str) {
    wait_for_logged(worker, needle, 1).await;
}
