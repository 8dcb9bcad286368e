//! A fleet simulator that speaks the real contracts: many simulated hosts,
//! each behaving on Kafka as one agent would, beside the real stack.
//!
//! - Every host has an agent identity of its own, certified with the
//!   api-server's command key as the api-server would certify a deployed
//!   agent, and signs each message it sends with it
//!   ([`odp_core::identity`]).
//! - Every host heartbeats on the events topic (keyed by its id, one
//!   stable agent id per host), the hosts spread over the interval, with
//!   its labels, the defined services it runs (those of its last
//!   `sync_services` it was told it runs) and the digest of the
//!   definitions it holds, as the agent fills them.
//! - The commands topic is read whole (every partition, a group of its
//!   own) and each command addressed to a simulated host is verified by
//!   the agent's own [`CommandVerifier`] for that host (signature, host,
//!   expiry, replay). A start answers `profile_started`, then one window
//!   per `window_ms` (of real captures: [`fixtures`]) until its duration
//!   or a stop, then `profile_finished` with the windows and samples the
//!   broker acknowledged. A sync replaces the definitions held. What does
//!   not verify is counted and reported as `command_rejected`, never
//!   acted on.
//! - Counters and each command's receive latency (the record's Kafka
//!   timestamp, set when the api-server published it, to its arrival)
//!   are there for tests and benchmarks ([`FleetSim::stats`]).

mod commands;
pub mod fixtures;
mod heartbeats;
mod profile;

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odp_core::command::{
    public_pem_of, CommandAction, CommandSigner, CommandVerifier, StartProfile,
};
use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use odp_core::identity::{AgentIdentity, Channel, MessageVerifier};
use odp_core::model::Language;
use odp_core::runtime::RuntimeInfo;
use odp_core::service::{services_digest, SyncServices};
use odp_core::Snapshot;
use odp_plumbing::{signed, Topics};
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::agent_identity::issue_with;
use crate::error::{kafka_error, DevError, Result};
use crate::kafka::TANSU_KAFKA_OPTIONS;

use commands::{command_consumer, intake};
pub use fixtures::{fixture_dir, load_fixtures, record_fixtures};
use heartbeats::heartbeats;

/// How long a send may wait for room in the local queue.
const QUEUE_TIMEOUT: Duration = Duration::from_secs(15);

/// One simulated host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimHost {
    pub id: String,
    /// Operator labels (`zone`, `version`...); the discovered ones
    /// (`kernel`, `cpu_model`, `cores`, `arch`) are added as an agent would.
    pub labels: BTreeMap<String, String>,
    /// Names of the services with live processes on the host: reported
    /// once a sync defines them, as the agent's process scan would.
    pub services: Vec<String>,
    /// How far ahead of true time the host's clock runs, in ms (negative:
    /// behind): its heartbeats, events and windows are stamped with it,
    /// as a skewed host's agent would stamp them, and its commands are
    /// checked against it.
    pub clock_offset_ms: i64,
}

impl SimHost {
    /// `{prefix}sim-{i:04}` for `i` in `0..count`, labelled
    /// `zone=z{i%3}` and `version=v{i%2}`, each running `services`.
    pub fn numbered(prefix: &str, count: usize, services: &[&str]) -> Vec<SimHost> {
        (0..count)
            .map(|i| SimHost {
                id: format!("{prefix}sim-{i:04}"),
                labels: BTreeMap::from([
                    ("zone".to_owned(), format!("z{}", i % 3)),
                    ("version".to_owned(), format!("v{}", i % 2)),
                ]),
                services: services.iter().map(|s| (*s).to_owned()).collect(),
                clock_offset_ms: 0,
            })
            .collect()
    }
}

/// What a [`FleetSim`] starts with.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    pub kafka_bootstrap: String,
    pub topics: Topics,
    /// librdkafka settings of its producers (`k=v,k=v`); the dev stack's
    /// [`TANSU_KAFKA_OPTIONS`] by default.
    pub kafka_options: String,
    /// The api-server's command signing key (PKCS#8 PEM): it certifies
    /// each simulated host's identity, and its public half verifies the
    /// commands, as the agents' copy does.
    pub command_signing_key_pem: String,
    pub hosts: Vec<SimHost>,
    /// Each host heartbeats once per interval (the agent's `--heartbeat-secs`).
    pub heartbeat_every: Duration,
    /// The window when a start names none (the agent's `--window-secs`).
    pub default_window: Duration,
    /// Real captures to send ([`load_fixtures`]).
    pub windows: Vec<Snapshot>,
    /// Producers shared by the hosts (each host always uses the same
    /// one, so its messages stay in order).
    pub producers: usize,
}

impl FleetOptions {
    /// Options for `hosts` on a stack, with the committed fixtures.
    pub fn new(
        kafka_bootstrap: &str,
        topics: &Topics,
        command_signing_key_pem: &str,
        hosts: Vec<SimHost>,
    ) -> Result<FleetOptions> {
        Ok(FleetOptions {
            kafka_bootstrap: kafka_bootstrap.to_owned(),
            topics: topics.clone(),
            kafka_options: TANSU_KAFKA_OPTIONS.to_owned(),
            command_signing_key_pem: command_signing_key_pem.to_owned(),
            hosts,
            heartbeat_every: Duration::from_secs(5),
            default_window: Duration::from_secs(10),
            windows: load_fixtures(&fixture_dir())?,
            producers: 4,
        })
    }
}

/// The simulator's counters at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetStats {
    /// Records read from the commands topic.
    pub commands_read: u64,
    /// Of those, addressed to hosts it does not simulate (skipped).
    pub commands_not_ours: u64,
    pub commands_verified: u64,
    /// Failed verification (signature, host, expiry, replay): counted,
    /// reported, not acted on.
    pub commands_rejected: u64,
    /// Verified, but refused as the agent would (a start of a running
    /// profile, a stop of none, a bad sync).
    pub commands_refused: u64,
    pub starts: u64,
    pub stops: u64,
    pub syncs: u64,
    /// `profile_started` events the broker acknowledged.
    pub acks_sent: u64,
    pub heartbeats_sent: u64,
    pub snapshots_sent: u64,
    pub samples_sent: u64,
    pub profiles_finished: u64,
    pub send_failures: u64,
}

/// What one simulated profile sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimProfile {
    pub profile_id: Uuid,
    pub host: String,
    pub agent_id: String,
    /// When its start command arrived and when the broker acknowledged its
    /// `profile_started` (unix ms).
    pub received_ms: i64,
    pub acked_ms: Option<i64>,
    /// Windows and samples the broker acknowledged.
    pub snapshots: u64,
    pub samples: u64,
    /// How it ended, once `profile_finished` was sent.
    pub finished: Option<FinishReason>,
}

/// One verified command's trip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLatency {
    pub host: String,
    pub command_id: Uuid,
    /// `start`, `stop`, `undeploy` or `sync_services`.
    pub kind: &'static str,
    /// The record's Kafka timestamp: when the api-server published it
    /// (unix ms); the command's `iat` (whole seconds) when absent.
    pub published_ms: i64,
    /// The command's issue time (`iat`, unix s).
    pub issued_at: i64,
    pub received_ms: i64,
}

impl CommandLatency {
    pub fn latency(&self) -> Duration {
        Duration::from_millis((self.received_ms - self.published_ms).max(0) as u64)
    }
}

#[derive(Default)]
struct Counters {
    commands_read: AtomicU64,
    commands_not_ours: AtomicU64,
    commands_verified: AtomicU64,
    commands_rejected: AtomicU64,
    commands_refused: AtomicU64,
    starts: AtomicU64,
    stops: AtomicU64,
    syncs: AtomicU64,
    acks_sent: AtomicU64,
    heartbeats_sent: AtomicU64,
    snapshots_sent: AtomicU64,
    samples_sent: AtomicU64,
    profiles_finished: AtomicU64,
    send_failures: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// One host's state as its agent would hold it.
struct HostState {
    index: usize,
    agent_id: String,
    machine_id: String,
    labels: BTreeMap<String, String>,
    runs: Vec<String>,
    verifier: CommandVerifier,
    /// The definitions of the last sync (none before one).
    held: Option<SyncServices>,
    running: BTreeMap<Uuid, watch::Sender<bool>>,
    undeployed: bool,
}

impl HostState {
    fn digest(&self) -> String {
        self.held
            .as_ref()
            .map_or_else(|| services_digest(&[]), |s| s.digest.clone())
    }

    /// The defined services it runs, sorted, as the agent's scan reports.
    fn live_services(&self) -> Vec<String> {
        let Some(held) = &self.held else {
            return Vec::new();
        };
        let mut live: Vec<String> = held
            .services
            .iter()
            .filter(|d| self.runs.contains(&d.name))
            .map(|d| d.name.clone())
            .collect();
        live.sort_unstable();
        live
    }
}

struct Shared {
    topics: Topics,
    producers: Vec<FutureProducer>,
    /// Each host's identity, by its index.
    identities: Vec<AgentIdentity>,
    /// Each host's clock offset, by its index.
    clock_offsets: Vec<i64>,
    hosts: HashMap<String, Mutex<HostState>>,
    order: Vec<String>,
    windows: Vec<Snapshot>,
    default_window: Duration,
    started_at_ms: i64,
    counters: Counters,
    profiles: Mutex<HashMap<Uuid, SimProfile>>,
    latencies: Mutex<Vec<CommandLatency>>,
}

/// The running simulator; its tasks end when it is stopped or dropped.
pub struct FleetSim {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

fn unix_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn client(bootstrap: &str, options: &str) -> ClientConfig {
    let mut client = ClientConfig::new();
    for pair in options.split(',').filter(|p| !p.trim().is_empty()) {
        if let Some((key, value)) = pair.split_once('=') {
            client.set(key.trim(), value.trim());
        }
    }
    client.set("bootstrap.servers", bootstrap);
    client
}

/// Discovered labels as an agent reports them, fixed for the simulator.
fn discovered_labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("arch".to_owned(), std::env::consts::ARCH.to_owned()),
        ("cores".to_owned(), "4".to_owned()),
        ("cpu_model".to_owned(), "ODP fleet simulator".to_owned()),
        ("kernel".to_owned(), "6.1.0-sim".to_owned()),
    ])
}

impl FleetSim {
    /// Starts heartbeats and command intake for every host. Commands
    /// published from now on are read.
    pub async fn start(options: FleetOptions) -> Result<FleetSim> {
        if options.windows.is_empty() {
            return Err(DevError::Invalid(
                "the fleet simulator needs windows".into(),
            ));
        }
        if options.hosts.is_empty() {
            return Err(DevError::Invalid("the fleet simulator needs hosts".into()));
        }
        let producers = (0..options.producers.max(1))
            .map(|i| {
                client(&options.kafka_bootstrap, &options.kafka_options)
                    .set("client.id", format!("odp-fleet-sim-{i}"))
                    .set("compression.type", "lz4")
                    .set("partitioner", "murmur2_random")
                    .set("queue.buffering.max.messages", "1000000")
                    .create::<FutureProducer>()
                    .map_err(|e| kafka_error("creating a fleet producer", e))
            })
            .collect::<Result<Vec<_>>>()?;
        let key_error = |e: &dyn std::fmt::Display| DevError::Invalid(format!("command key: {e}"));
        let signer = CommandSigner::from_private_pem(&options.command_signing_key_pem)
            .map_err(|e| key_error(&e))?;
        let public_pem =
            public_pem_of(&options.command_signing_key_pem).map_err(|e| key_error(&e))?;
        let message_verifier =
            MessageVerifier::from_public_pem(&public_pem).map_err(|e| key_error(&e))?;
        let mut hosts = HashMap::new();
        let mut order = Vec::new();
        let mut identities = Vec::with_capacity(options.hosts.len());
        for (index, host) in options.hosts.iter().enumerate() {
            let verifier = CommandVerifier::from_public_pem(&public_pem, &host.id)
                .map_err(|e| key_error(&e))?;
            let issued = issue_with(&signer, &message_verifier, &host.id, "fleet")?;
            identities.push(issued.identity);
            let mut labels = discovered_labels();
            labels.extend(host.labels.clone());
            let state = HostState {
                index,
                agent_id: Uuid::new_v4().to_string(),
                machine_id: Uuid::new_v4().simple().to_string(),
                labels,
                runs: host.services.clone(),
                verifier,
                held: None,
                running: BTreeMap::new(),
                undeployed: false,
            };
            if hosts.insert(host.id.clone(), Mutex::new(state)).is_some() {
                return Err(DevError::Invalid(format!("host {} given twice", host.id)));
            }
            order.push(host.id.clone());
        }
        let consumer = command_consumer(&options).await?;
        let shared = Arc::new(Shared {
            topics: options.topics.clone(),
            producers,
            identities,
            clock_offsets: options.hosts.iter().map(|h| h.clock_offset_ms).collect(),
            hosts,
            order,
            windows: options.windows.clone(),
            default_window: options.default_window,
            started_at_ms: unix_ms(),
            counters: Counters::default(),
            profiles: Mutex::new(HashMap::new()),
            latencies: Mutex::new(Vec::new()),
        });
        let tasks = vec![
            tokio::spawn(heartbeats(shared.clone(), options.heartbeat_every)),
            tokio::spawn(intake(shared.clone(), consumer)),
        ];
        Ok(FleetSim { shared, tasks })
    }

    /// The simulated host ids, in the order given.
    pub fn hosts(&self) -> &[String] {
        &self.shared.order
    }

    /// The agent id host `host` reports.
    pub fn agent_id(&self, host: &str) -> Option<String> {
        let state = self.shared.hosts.get(host)?;
        let state = state.lock().expect("host lock");
        Some(state.agent_id.clone())
    }

    pub fn stats(&self) -> FleetStats {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        FleetStats {
            commands_read: get(&c.commands_read),
            commands_not_ours: get(&c.commands_not_ours),
            commands_verified: get(&c.commands_verified),
            commands_rejected: get(&c.commands_rejected),
            commands_refused: get(&c.commands_refused),
            starts: get(&c.starts),
            stops: get(&c.stops),
            syncs: get(&c.syncs),
            acks_sent: get(&c.acks_sent),
            heartbeats_sent: get(&c.heartbeats_sent),
            snapshots_sent: get(&c.snapshots_sent),
            samples_sent: get(&c.samples_sent),
            profiles_finished: get(&c.profiles_finished),
            send_failures: get(&c.send_failures),
        }
    }

    /// What profile `id` sent so far, if a simulated host runs or ran it.
    pub fn profile(&self, id: Uuid) -> Option<SimProfile> {
        self.shared
            .profiles
            .lock()
            .expect("profiles lock")
            .get(&id)
            .cloned()
    }

    /// Every profile the simulated hosts ran, by start.
    pub fn profiles(&self) -> Vec<SimProfile> {
        let mut all: Vec<SimProfile> = self
            .shared
            .profiles
            .lock()
            .expect("profiles lock")
            .values()
            .cloned()
            .collect();
        all.sort_by_key(|p| (p.received_ms, p.profile_id));
        all
    }

    /// Every verified command's trip, in arrival order.
    pub fn command_latencies(&self) -> Vec<CommandLatency> {
        self.shared.latencies.lock().expect("latency lock").clone()
    }

    /// Ends heartbeats, intake and running profiles (which send nothing
    /// more).
    pub fn stop(mut self) {
        self.abort();
    }

    fn abort(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        for state in self.shared.hosts.values() {
            let mut state = state.lock().expect("host lock");
            state.undeployed = true;
            state.running.clear();
        }
    }
}

impl Drop for FleetSim {
    fn drop(&mut self) {
        self.abort();
    }
}

impl Shared {
    fn producer(&self, index: usize) -> &FutureProducer {
        &self.producers[index % self.producers.len()]
    }

    /// The time by the clock of the host of `index`, unix ms.
    fn clock_ms(&self, index: usize) -> i64 {
        unix_ms() + self.clock_offsets[index]
    }

    /// Publishes an event of `host` keyed by its id, awaiting the broker.
    async fn event(&self, index: usize, host: &str, agent_id: &str, kind: AgentEventKind) -> bool {
        let at_ms = self.clock_ms(index);
        let payload = AgentEvent {
            host: host.to_owned(),
            agent_id: agent_id.to_owned(),
            at_ms,
            kind,
        }
        .to_json();
        let signature = self.identities[index].sign(Channel::Events, &payload);
        let record = FutureRecord::to(&self.topics.events)
            .key(host)
            .payload(&payload)
            .timestamp(at_ms)
            .headers(signed::headers(&signature));
        let sent = self.producer(index).send(record, QUEUE_TIMEOUT).await;
        if sent.is_err() {
            bump(&self.counters.send_failures, 1);
        }
        sent.is_ok()
    }

    async fn snapshot(&self, index: usize, snapshot: &Snapshot) -> bool {
        let payload = snapshot.encode();
        let key = snapshot.profile_id.to_string();
        let signature = self.identities[index].sign(Channel::Stacks, &payload);
        let record = FutureRecord::to(&self.topics.stacks)
            .key(&key)
            .payload(&payload)
            .timestamp(self.clock_ms(index))
            .headers(signed::headers(&signature));
        let sent = self.producer(index).send(record, QUEUE_TIMEOUT).await;
        if sent.is_err() {
            bump(&self.counters.send_failures, 1);
        }
        sent.is_ok()
    }

    async fn reject(
        &self,
        host: &str,
        command_id: Option<Uuid>,
        profile_id: Option<Uuid>,
        reason: String,
    ) {
        let Some((index, agent_id)) = self.hosts.get(host).map(|s| {
            let s = s.lock().expect("host lock");
            (s.index, s.agent_id.clone())
        }) else {
            return;
        };
        let kind = AgentEventKind::CommandRejected {
            command_id,
            profile_id,
            reason,
        };
        self.event(index, host, &agent_id, kind).await;
    }
}
