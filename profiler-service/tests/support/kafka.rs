//! A Tansu broker on a spare loopback port, and a harness that creates
//! per-test topics, signs commands and records what the agent publishes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use odp_core::command::{generate_keypair, Command as OdpCommand, CommandAction, CommandSigner};
use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::Snapshot;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::{Headers, Message};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use uuid::Uuid;

use super::Killed;

const WAIT: Duration = Duration::from_secs(30);
/// Partitions of the stacks, events and dead-letter topics.
const OUTPUT_PARTITIONS: i32 = 2;

/// The broker the tests talk to: the dev stack's Tansu, in memory.
pub use odp_devstack::Broker;

/// What the test saw the agent publish.
#[derive(Debug, Clone)]
pub enum Seen {
    Event(AgentEvent),
    Stacks {
        key: String,
        snapshot: Snapshot,
    },
    DeadLetter {
        key: Option<Vec<u8>>,
        payload: Option<Vec<u8>>,
        reason: Option<String>,
    },
}

pub struct Harness {
    pub host: String,
    pub agent_id: String,
    bootstrap: String,
    topics: [String; 4],
    key_path: PathBuf,
    signer: CommandSigner,
    producer: FutureProducer,
    /// Every message seen, with whether a `wait` already returned it.
    seen: Arc<Mutex<Vec<(Seen, bool)>>>,
    _reader: tokio::task::JoinHandle<()>,
}

impl Harness {
    pub async fn new(broker: &Broker, command_partitions: i32) -> Harness {
        let prefix = format!("t{}-", &Uuid::new_v4().simple().to_string()[..8]);
        let topics = [
            "odp.commands",
            "odp.stacks",
            "odp.events",
            "odp.dead-letter",
        ]
        .map(|t| format!("{prefix}{t}"));
        let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", broker.bootstrap())
            .create()
            .unwrap();
        let new: Vec<NewTopic<'_>> = topics
            .iter()
            .enumerate()
            .map(|(i, t)| {
                NewTopic::new(
                    t,
                    if i == 0 {
                        command_partitions
                    } else {
                        OUTPUT_PARTITIONS
                    },
                    TopicReplication::Fixed(1),
                )
            })
            .collect();
        for result in admin
            .create_topics(&new, &AdminOptions::new())
            .await
            .unwrap()
        {
            result.expect("create topic");
        }

        let (private, public) = generate_keypair().unwrap();
        let key_path =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{prefix}command.pub.pem"));
        std::fs::write(&key_path, public).unwrap();
        let producer: FutureProducer = ClientConfig::new()
            .set("bootstrap.servers", broker.bootstrap())
            .set("partitioner", "murmur2_random")
            .create()
            .unwrap();

        let consumer: StreamConsumer = ClientConfig::new()
            .set("bootstrap.servers", broker.bootstrap())
            .set("group.id", format!("{prefix}observer"))
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .create()
            .unwrap();
        // Assigned, not subscribed: no group membership to leave on drop,
        // which would block the end of the test for a session timeout.
        let mut assignment = TopicPartitionList::new();
        for topic in &topics[1..] {
            for partition in 0..OUTPUT_PARTITIONS {
                assignment
                    .add_partition_offset(topic, partition, Offset::Beginning)
                    .unwrap();
            }
        }
        consumer.assign(&assignment).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let names = topics.clone();
        let reader = tokio::spawn(async move {
            loop {
                let Ok(m) = consumer.recv().await else {
                    continue;
                };
                let payload = m.payload().map(<[u8]>::to_vec);
                let key = m.key().map(<[u8]>::to_vec);
                let item = if m.topic() == names[1] {
                    Seen::Stacks {
                        key: String::from_utf8(key.unwrap_or_default()).unwrap(),
                        snapshot: Snapshot::decode(&payload.unwrap_or_default())
                            .expect("snapshot decodes"),
                    }
                } else if m.topic() == names[2] {
                    Seen::Event(
                        AgentEvent::from_json(&payload.unwrap_or_default()).expect("event parses"),
                    )
                } else {
                    let reason = m.headers().and_then(|h| {
                        h.iter()
                            .find(|h| h.key == "odp-reason")
                            .and_then(|h| h.value.map(|v| String::from_utf8_lossy(v).into_owned()))
                    });
                    Seen::DeadLetter {
                        key,
                        payload,
                        reason,
                    }
                };
                sink.lock().unwrap().push((item, false));
            }
        });
        Harness {
            host: format!("host-{}", &Uuid::new_v4().simple().to_string()[..8]),
            agent_id: format!("agent-{}", &Uuid::new_v4().simple().to_string()[..8]),
            bootstrap: broker.bootstrap().to_owned(),
            topics,
            key_path,
            signer: CommandSigner::from_private_pem(&private).unwrap(),
            producer,
            seen,
            _reader: reader,
        }
    }

    pub fn spawn_agent(&self) -> Killed {
        self.spawn_agent_with(&[])
    }

    /// [`spawn_agent`](Self::spawn_agent) with more flags.
    pub fn spawn_agent_with(&self, extra: &[&std::ffi::OsStr]) -> Killed {
        let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{}.log", self.host));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_odp-profiler-service"))
            .args(["--kafka-bootstrap", &self.bootstrap])
            .args([
                "--topic-commands",
                &self.topics[0],
                "--topic-stacks",
                &self.topics[1],
            ])
            .args([
                "--topic-events",
                &self.topics[2],
                "--topic-dead-letter",
                &self.topics[3],
            ])
            .args(["--host-id", &self.host, "--agent-id", &self.agent_id])
            .arg("--command-public-key")
            .arg(&self.key_path)
            .args(["--window-secs", "10", "--heartbeat-secs", "1"])
            .args(extra)
            .env("RUST_LOG", "info,odp_profiler_service=debug")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start the agent");
        Killed(child)
    }

    pub fn command_for(&self, host: &str, action: CommandAction) -> String {
        let now = odp_profiler_service::window::unix_ms() / 1000;
        let command = OdpCommand {
            id: Uuid::new_v4(),
            host: host.to_owned(),
            issued_at: now,
            expires_at: now + 300,
            action,
        };
        self.signer.sign(&command).unwrap()
    }

    /// A command for this host whose start carries cost-control options.
    pub fn command_with_options(
        &self,
        action: CommandAction,
        options: &odp_core::cost::StartOptions,
    ) -> String {
        let now = odp_profiler_service::window::unix_ms() / 1000;
        let command = OdpCommand {
            id: Uuid::new_v4(),
            host: self.host.clone(),
            issued_at: now,
            expires_at: now + 300,
            action,
        };
        self.signer.sign_with_options(&command, options).unwrap()
    }

    /// Signs any command with the api-server's key (an expired one, say).
    pub fn sign(&self, command: &OdpCommand) -> String {
        self.signer.sign(command).unwrap()
    }

    pub fn command(&self, action: CommandAction) -> String {
        self.command_for(&self.host, action)
    }

    pub async fn send(&self, key: &str, token: &str) {
        self.send_raw(key, token.as_bytes()).await;
    }

    pub async fn send_raw(&self, key: &str, payload: &[u8]) {
        let record = FutureRecord::to(&self.topics[0]).key(key).payload(payload);
        self.producer
            .send(record, Duration::from_secs(10))
            .await
            .expect("command delivered");
    }

    /// The first message not returned before that matches, waiting for it.
    pub async fn wait(&self, matches: impl Fn(&Seen) -> bool) -> Seen {
        let deadline = Instant::now() + WAIT;
        loop {
            {
                let mut seen = self.seen.lock().unwrap();
                if let Some((item, taken)) =
                    seen.iter_mut().find(|(m, taken)| !*taken && matches(m))
                {
                    *taken = true;
                    return item.clone();
                }
            }
            assert!(
                Instant::now() < deadline,
                "timed out; seen so far: {:#?}",
                self.seen()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_event(&self, matches: impl Fn(&AgentEventKind) -> bool) -> AgentEventKind {
        match self
            .wait(|m| matches!(m, Seen::Event(e) if matches(&e.kind)))
            .await
        {
            Seen::Event(e) => {
                assert_eq!(
                    (e.host.as_str(), e.agent_id.as_str()),
                    (self.host.as_str(), self.agent_id.as_str())
                );
                e.kind
            }
            _ => unreachable!(),
        }
    }

    /// Every snapshot of a profile seen so far, waiting until there are
    /// `count` (stacks and events travel on different topics).
    pub async fn wait_snapshots(&self, profile_id: Uuid, count: usize) -> Vec<Snapshot> {
        let deadline = Instant::now() + WAIT;
        loop {
            let mut found: Vec<Snapshot> = self
                .seen()
                .into_iter()
                .filter_map(|m| match m {
                    Seen::Stacks { snapshot, .. } if snapshot.profile_id == profile_id => {
                        Some(snapshot)
                    }
                    _ => None,
                })
                .collect();
            if found.len() >= count {
                found.sort_by_key(|s| s.sequence);
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {count} snapshots",
                found.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(m, _)| m.clone())
            .collect()
    }
}
