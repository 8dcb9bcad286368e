//! A Tansu broker on a spare loopback port, and a harness that creates
//! per-test topics, enrolls the agent (an identity issued with the
//! api-server's key), signs commands and records what the agent publishes,
//! with whether it was signed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use odp_core::command::{generate_keypair, Command as OdpCommand, CommandAction, CommandSigner};
use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::identity::{
    issue_certificate, AgentIdentity, AgentKey, Certificate, Channel, MessageVerifier,
};
use odp_core::Snapshot;
use odp_plumbing::signed::{self, unix_now};
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

/// How a snapshot or event seen was signed.
#[derive(Debug, Clone)]
pub struct SignatureCheck {
    pub channel: Channel,
    /// The agent and host its payload names.
    pub agent_id: String,
    pub host: String,
    /// Its certificate, or why it does not verify with the api-server's
    /// key.
    pub certified: Result<Certificate, String>,
}

pub struct Harness {
    pub host: String,
    pub agent_id: String,
    /// Where the agent's identity is saved (`--identity-dir`).
    pub identity_dir: PathBuf,
    bootstrap: String,
    topics: [String; 4],
    key_path: PathBuf,
    signer: CommandSigner,
    verifier: Arc<MessageVerifier>,
    producer: FutureProducer,
    /// Every message seen, with whether a `wait` already returned it.
    seen: Arc<Mutex<Vec<(Seen, bool)>>>,
    signatures: Arc<Mutex<Vec<SignatureCheck>>>,
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
        std::fs::write(&key_path, &public).unwrap();
        let signer = CommandSigner::from_private_pem(&private).unwrap();
        let verifier = Arc::new(MessageVerifier::from_public_pem(&public).unwrap());
        // Enrolled as an admin would: a key of its own, certified for the
        // host by the api-server's key.
        let host = format!("host-{}", &Uuid::new_v4().simple().to_string()[..8]);
        let identity_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{prefix}identity"));
        let (key, token) = issue(&signer, &host);
        AgentIdentity::save(&key, &token, &identity_dir).unwrap();
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
        let signatures = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let checks = Arc::clone(&signatures);
        let checker = Arc::clone(&verifier);
        let names = topics.clone();
        let reader = tokio::spawn(async move {
            loop {
                let Ok(m) = consumer.recv().await else {
                    continue;
                };
                let payload = m.payload().map(<[u8]>::to_vec);
                let key = m.key().map(<[u8]>::to_vec);
                let check = |channel, agent_id: &str, host: &str| SignatureCheck {
                    channel,
                    agent_id: agent_id.to_owned(),
                    host: host.to_owned(),
                    certified: signed::verify(&checker, channel, &m, unix_now())
                        .map_err(|e| e.to_string()),
                };
                let item = if m.topic() == names[1] {
                    let snapshot =
                        Snapshot::decode(&payload.unwrap_or_default()).expect("snapshot decodes");
                    let signed = check(Channel::Stacks, &snapshot.agent_id, &snapshot.host);
                    checks.lock().unwrap().push(signed);
                    Seen::Stacks {
                        key: String::from_utf8(key.unwrap_or_default()).unwrap(),
                        snapshot,
                    }
                } else if m.topic() == names[2] {
                    let event =
                        AgentEvent::from_json(&payload.unwrap_or_default()).expect("event parses");
                    let signed = check(Channel::Events, &event.agent_id, &event.host);
                    checks.lock().unwrap().push(signed);
                    Seen::Event(event)
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
            host,
            agent_id: format!("agent-{}", &Uuid::new_v4().simple().to_string()[..8]),
            identity_dir,
            bootstrap: broker.bootstrap().to_owned(),
            topics,
            key_path,
            signer,
            verifier,
            producer,
            seen,
            signatures,
            _reader: reader,
        }
    }

    /// A new agent key and its certificate for `host`, issued with the
    /// api-server's key, as an admin enrolls an agent.
    pub fn enroll(&self, host: &str) -> (AgentKey, String) {
        issue(&self.signer, host)
    }

    /// A valid identity of an agent of `host`, issued with the api-server's
    /// key.
    pub fn identity_for(&self, host: &str) -> AgentIdentity {
        let (key, token) = self.enroll(host);
        AgentIdentity::new(key, &token, &self.verifier, host, unix_now()).unwrap()
    }

    /// Writes an event to the events topic keyed by its host, as an agent
    /// would, signed by `identity` when given.
    pub async fn send_event(&self, event: &AgentEvent, identity: Option<&AgentIdentity>) {
        let payload = event.to_json();
        let mut record = FutureRecord::to(&self.topics[2])
            .key(&event.host)
            .payload(&payload);
        if let Some(identity) = identity {
            record = record.headers(signed::headers(&identity.sign(Channel::Events, &payload)));
        }
        self.producer
            .send(record, Duration::from_secs(10))
            .await
            .expect("event delivered");
    }

    /// How each snapshot and event of this harness's agent seen so far was
    /// signed.
    pub fn signatures(&self) -> Vec<SignatureCheck> {
        let checks = self.signatures.lock().unwrap();
        checks
            .iter()
            .filter(|c| c.agent_id == self.agent_id)
            .cloned()
            .collect()
    }

    /// The agent's flags for this harness: its broker, topics, host, agent
    /// id, key and identity, 10 s windows and a heartbeat a second.
    pub fn agent_args(&self) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        for (flag, value) in [
            ("--kafka-bootstrap", self.bootstrap.as_str()),
            ("--topic-commands", &self.topics[0]),
            ("--topic-stacks", &self.topics[1]),
            ("--topic-events", &self.topics[2]),
            ("--topic-dead-letter", &self.topics[3]),
            ("--host-id", &self.host),
            ("--agent-id", &self.agent_id),
            ("--window-secs", "10"),
            ("--heartbeat-secs", "1"),
        ] {
            args.extend([flag.into(), value.into()]);
        }
        args.extend(["--command-public-key".into(), self.key_path.clone().into()]);
        args.extend(["--identity-dir".into(), self.identity_dir.clone().into()]);
        args
    }

    /// What the agents of this harness's host logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{}.log", self.host))
    }

    /// Checks that every snapshot and event of this harness's agent seen so
    /// far carries headers that verify with the api-server's key and
    /// certify the host the message names; returns how many snapshots and
    /// events were checked.
    pub fn assert_signed(&self) -> (usize, usize) {
        let ours = self.signatures();
        for check in &ours {
            assert_eq!(check.host, self.host, "{check:?}");
            let certified = check.certified.as_ref().map(|c| c.host.as_str());
            assert_eq!(certified, Ok(self.host.as_str()), "{check:?}");
        }
        let count = |channel| ours.iter().filter(|c| c.channel == channel).count();
        (count(Channel::Stacks), count(Channel::Events))
    }

    pub fn spawn_agent(&self) -> Killed {
        self.spawn_agent_with(&[])
    }

    /// [`spawn_agent`](Self::spawn_agent) with more flags.
    pub fn spawn_agent_with(&self, extra: &[&std::ffi::OsStr]) -> Killed {
        let child = self.agent_command(extra).spawn().expect("start the agent");
        Killed(child)
    }

    /// The command [`spawn_agent_with`](Self::spawn_agent_with) runs.
    pub fn agent_command(&self, extra: &[&std::ffi::OsStr]) -> Command {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_odp-profiler-service"));
        command
            .args(self.agent_args())
            .args(extra)
            .env("RUST_LOG", "info,odp_profiler_service=debug")
            // The identity is the one in --identity-dir, whatever the
            // test's environment holds.
            .env_remove("ODP_AGENT_KEY")
            .env_remove("ODP_AGENT_CERTIFICATE")
            .stdout(Stdio::null())
            .stderr(log);
        command
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

/// A new agent key and its certificate for `host`, valid for an hour.
pub fn issue(signer: &CommandSigner, host: &str) -> (AgentKey, String) {
    let key = AgentKey::generate().unwrap();
    let now = unix_now();
    let (_, token) = issue_certificate(signer, host, &key.public_key(), now - 60, now + 3600)
        .expect("issue a certificate");
    (key, token)
}
