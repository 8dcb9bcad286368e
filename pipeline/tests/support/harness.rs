//! A stack, a pipeline worker run in the test's process on its broker and
//! database (trusting the harness's [`Issuer`]), a producer, and a reader
//! of the dead-letter topic.

use std::time::Duration;

use odp_core::identity::Channel;
use odp_devstack::{pick_free_ports, Stack, StackOptions};
use odp_pipeline::Config;
use odp_plumbing::Topics;
use odp_store::Database;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::{Headers, Message};
use rdkafka::producer::FutureProducer;
use rdkafka::ClientConfig;
use sqlx::PgPool;
use uuid::Uuid;

use super::signing::{Issuer, Signing};

pub(crate) struct Harness {
    /// The dead-letter topic from its beginning. First, so it is dropped
    /// (leaving its group) while the broker still runs: a consumer dropped
    /// after its broker waits for it for ever.
    pub(crate) dead_letters: DeadLetters,
    pub(crate) stack: Stack,
    pub(crate) pool: PgPool,
    pub(crate) db: Database,
    pub(crate) topics: Topics,
    pub(crate) producer: FutureProducer,
    /// Whose certificates the worker believes.
    pub(crate) issuer: Issuer,
    /// Where the worker serves `/metrics`.
    pub(crate) metrics_port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    worker: Option<tokio::task::JoinHandle<Result<(), odp_pipeline::PipelineError>>>,
}

impl Harness {
    /// Starts it all; `configure` may change the worker's configuration
    /// from the tests' defaults.
    pub(crate) async fn start(topic_prefix: &str, configure: impl FnOnce(&mut Config)) -> Harness {
        let topics = Topics::with_prefix(&format!("{topic_prefix}{}-", std::process::id()));
        let stack = Stack::start(StackOptions::ephemeral().topics(topics.clone()))
            .await
            .expect("start the stack (is tansu installed?)");
        let pool = stack.connect().await.unwrap();
        let issuer = Issuer::new();
        let metrics_port = pick_free_ports(1).unwrap()[0];
        let mut config = Config {
            kafka: odp_plumbing::KafkaArgs {
                bootstrap: stack.kafka_bootstrap().to_owned(),
                options: Vec::new(),
            },
            database_url: stack.database_url().to_owned(),
            group_id: "odp-pipeline-test".into(),
            session_timeout_ms: 10_000,
            topics: topics.clone(),
            command_public_key: issuer.write_public_key(stack.state_dir()),
            revocation_refresh_secs: 30,
            max_message_bytes: 1 << 20,
            batch_max: 100,
            batch_wait_ms: 50,
            queued_batches: 4,
            drain_timeout_secs: 5,
            rebalance_flush_secs: 5,
            compact_after_secs: 30,
            detect_interval_secs: 10,
            alerts: Default::default(),
            retention: Default::default(),
            metrics_listen: Some(([127, 0, 0, 1], metrics_port).into()),
        };
        configure(&mut config);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let worker = tokio::spawn(odp_pipeline::run(config, async {
            let _ = stopped.await;
        }));
        let producer: FutureProducer = ClientConfig::new()
            .set("bootstrap.servers", stack.kafka_bootstrap())
            .create()
            .unwrap();
        Harness {
            dead_letters: DeadLetters::subscribe(&stack),
            db: Database::from(&pool),
            stack,
            pool,
            topics,
            producer,
            issuer,
            metrics_port,
            stop: Some(stop),
            worker: Some(worker),
        }
    }

    /// Produces `payload` to the topic of `channel` (stacks or events),
    /// signed as `signing` says.
    pub(crate) async fn send(
        &self,
        channel: Channel,
        key: &str,
        signing: Signing<'_>,
        payload: &[u8],
    ) {
        let topic = match channel {
            Channel::Stacks => &self.topics.stacks,
            Channel::Events => &self.topics.events,
        };
        super::signing::send(&self.producer, topic, key, channel, signing, payload).await;
    }

    /// The value of one of the worker's metrics (0 when absent).
    pub(crate) async fn metric(&self, name: &str) -> f64 {
        super::fleet::metric(self.metrics_port, name, "").await
    }

    /// Waits until the metric reads `value`; the deadline only bounds a
    /// hung test.
    pub(crate) async fn wait_for_metric(&self, name: &str, value: f64) {
        for _ in 0..600 {
            if self.metric(name).await == value {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{name} never read {value}");
    }

    /// Stops the worker (which must have run without error) and the stack.
    pub(crate) async fn stop(mut self) {
        self.stop.take().unwrap().send(()).unwrap();
        self.worker.take().unwrap().await.unwrap().unwrap();
        self.pool.close().await;
    }
}

impl Drop for Harness {
    // A failed test leaves its worker running, and the runtime would drop
    // its consumer after the stack, when the broker is gone: a consumer
    // dropped without its broker waits for it for ever, and so would the
    // test. Stopped here, the worker leaves the group first.
    fn drop(&mut self) {
        let (Some(stop), Some(worker)) = (self.stop.take(), self.worker.take()) else {
            return;
        };
        let _ = stop.send(());
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !worker.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        // Its polling task lets go of the consumer as it is aborted.
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// A message of the dead-letter topic, as the worker sent it.
#[derive(Debug)]
pub(crate) struct DeadLetter {
    pub(crate) reason: String,
    pub(crate) source_topic: String,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) payload: Vec<u8>,
    /// Whether it kept its sender's signature headers.
    pub(crate) signed: bool,
}

pub(crate) struct DeadLetters {
    consumer: StreamConsumer,
}

impl DeadLetters {
    /// A reader of the stack's dead-letter topic from its beginning.
    fn subscribe(stack: &Stack) -> DeadLetters {
        let consumer: StreamConsumer = ClientConfig::new()
            .set("bootstrap.servers", stack.kafka_bootstrap())
            .set("group.id", format!("dead-letters-{}", Uuid::new_v4()))
            .set("auto.offset.reset", "earliest")
            .create()
            .unwrap();
        consumer.subscribe(&[&stack.topics().dead_letter]).unwrap();
        DeadLetters { consumer }
    }

    /// The next dead letter; a hung test fails after a minute.
    pub(crate) async fn next(&self) -> DeadLetter {
        let message = tokio::time::timeout(Duration::from_secs(60), self.consumer.recv())
            .await
            .expect("a message on the dead-letter topic")
            .expect("read the dead-letter topic");
        let header = |name: &str| {
            message.headers().and_then(|headers| {
                headers
                    .iter()
                    .find(|h| h.key == name)
                    .and_then(|h| h.value)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            })
        };
        DeadLetter {
            reason: header("odp-reason").expect("a reason header"),
            source_topic: header("odp-source-topic").expect("a source topic header"),
            signed: header(odp_core::identity::SIGNATURE_HEADER).is_some(),
            key: message.key().map(<[u8]>::to_vec),
            payload: message.payload().unwrap_or_default().to_vec(),
        }
    }

    /// The next `n` dead letters, in the order they were sent.
    pub(crate) async fn take(&self, n: usize) -> Vec<DeadLetter> {
        let mut letters = Vec::with_capacity(n);
        for _ in 0..n {
            letters.push(self.next().await);
        }
        letters
    }
}

/// Polls until `sql` (with `id` bound) counts at least one row; the
/// deadline only bounds a hung test.
pub(crate) async fn eventually(pool: &PgPool, sql: &str, id: Uuid) -> i64 {
    eventually_at_least(pool, sql, id, 1).await
}

/// Polls until `sql` (with `id` bound) counts at least `n`.
pub(crate) async fn eventually_at_least(pool: &PgPool, sql: &str, id: Uuid, n: i64) -> i64 {
    for _ in 0..600 {
        let counted: i64 = sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap();
        if counted >= n {
            return counted;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never {n}: {sql}");
}
