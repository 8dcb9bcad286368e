//! A fleet simulator that speaks the real contracts: many simulated hosts,
//! each behaving on Kafka as one agent would, beside the real stack.
//!
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

pub mod fixtures;

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odp_core::command::{CommandAction, CommandVerifier, StartProfile};
use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use odp_core::model::Language;
use odp_core::runtime::RuntimeInfo;
use odp_core::service::{services_digest, SyncServices};
use odp_core::Snapshot;
use odp_plumbing::Topics;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::error::{kafka_error, DevError, Result};
use crate::kafka::TANSU_KAFKA_OPTIONS;

pub use fixtures::{fixture_dir, load_fixtures, record_fixtures};

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
    /// The api-server's command public key (SPKI PEM), as the agents get it.
    pub command_public_key_pem: String,
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
        command_public_key_pem: &str,
        hosts: Vec<SimHost>,
    ) -> Result<FleetOptions> {
        Ok(FleetOptions {
            kafka_bootstrap: kafka_bootstrap.to_owned(),
            topics: topics.clone(),
            kafka_options: TANSU_KAFKA_OPTIONS.to_owned(),
            command_public_key_pem: command_public_key_pem.to_owned(),
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
        let mut hosts = HashMap::new();
        let mut order = Vec::new();
        for (index, host) in options.hosts.iter().enumerate() {
            let verifier =
                CommandVerifier::from_public_pem(&options.command_public_key_pem, &host.id)
                    .map_err(|e| DevError::Invalid(format!("command public key: {e}")))?;
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

/// A consumer assigned every partition of the commands topic from its
/// current end, in a group of its own (which only names it: nothing is
/// committed).
async fn command_consumer(options: &FleetOptions) -> Result<StreamConsumer> {
    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", &options.kafka_bootstrap)
        .set("group.id", format!("odp-fleet-sim-{}", Uuid::new_v4()))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "50")
        .create()
        .map_err(|e| kafka_error("creating the fleet's command consumer", e))?;
    let topic = options.topics.commands.clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let assignment = loop {
        match end_offsets(&consumer, &topic) {
            Ok(assignment) => break assignment,
            Err(e) if tokio::time::Instant::now() > deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    consumer
        .assign(&assignment)
        .map_err(|e| kafka_error(format!("assigning {topic}"), e))?;
    Ok(consumer)
}

fn end_offsets(consumer: &StreamConsumer, topic: &str) -> Result<TopicPartitionList> {
    let timeout = Duration::from_secs(10);
    let metadata = consumer
        .fetch_metadata(Some(topic), timeout)
        .map_err(|e| kafka_error(format!("metadata of {topic}"), e))?;
    let partitions = metadata
        .topics()
        .first()
        .map_or(0, |t| t.partitions().len() as i32);
    if partitions == 0 {
        return Err(DevError::Invalid(format!(
            "topic {topic} has no partitions"
        )));
    }
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        let (_, high) = consumer
            .fetch_watermarks(topic, partition, timeout)
            .map_err(|e| kafka_error(format!("watermarks of {topic}/{partition}"), e))?;
        assignment
            .add_partition_offset(topic, partition, Offset::Offset(high))
            .map_err(|e| kafka_error("assigning partitions", e))?;
    }
    Ok(assignment)
}

impl Shared {
    fn producer(&self, index: usize) -> &FutureProducer {
        &self.producers[index % self.producers.len()]
    }

    /// Publishes an event of `host` keyed by its id, awaiting the broker.
    async fn event(&self, index: usize, host: &str, agent_id: &str, kind: AgentEventKind) -> bool {
        let payload = AgentEvent {
            host: host.to_owned(),
            agent_id: agent_id.to_owned(),
            at_ms: unix_ms(),
            kind,
        }
        .to_json();
        let record = FutureRecord::to(&self.topics.events)
            .key(host)
            .payload(&payload);
        let sent = self.producer(index).send(record, QUEUE_TIMEOUT).await;
        if sent.is_err() {
            bump(&self.counters.send_failures, 1);
        }
        sent.is_ok()
    }

    async fn snapshot(&self, index: usize, snapshot: &Snapshot) -> bool {
        let payload = snapshot.encode();
        let key = snapshot.profile_id.to_string();
        let record = FutureRecord::to(&self.topics.stacks)
            .key(&key)
            .payload(&payload);
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

/// Each host's heartbeat once per `every`, the hosts spread evenly over it.
async fn heartbeats(shared: Arc<Shared>, every: Duration) {
    let step = every / shared.order.len().max(1) as u32;
    let mut tick = tokio::time::interval(step.max(Duration::from_micros(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let version = env!("CARGO_PKG_VERSION").to_owned();
    for host in shared.order.iter().cycle() {
        tick.tick().await;
        let Some(state) = shared.hosts.get(host) else {
            continue;
        };
        let (index, agent_id, kind) = {
            let state = state.lock().expect("host lock");
            if state.undeployed {
                continue;
            }
            let kind = AgentEventKind::Heartbeat {
                version: version.clone(),
                running_profiles: state.running.keys().copied().collect(),
                plugins: vec!["native".to_owned()],
                machine_id: Some(state.machine_id.clone()),
                started_at_ms: Some(shared.started_at_ms),
                labels: state.labels.clone(),
                services: state.live_services(),
                services_digest: Some(state.digest()),
            };
            (state.index, state.agent_id.clone(), kind)
        };
        let payload = AgentEvent {
            host: host.clone(),
            agent_id,
            at_ms: unix_ms(),
            kind,
        }
        .to_json();
        let record = FutureRecord::to(&shared.topics.events)
            .key(host)
            .payload(&payload);
        // Queued now, delivered in the background: a slow broker must not
        // bunch the next hosts' beats.
        match shared.producer(index).send_result(record) {
            Ok(delivery) => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    match delivery.await {
                        Ok(Ok(_)) => bump(&shared.counters.heartbeats_sent, 1),
                        _ => bump(&shared.counters.send_failures, 1),
                    }
                });
            }
            Err(_) => bump(&shared.counters.send_failures, 1),
        }
    }
}

/// Reads every command and acts for the simulated hosts.
async fn intake(shared: Arc<Shared>, consumer: StreamConsumer) {
    loop {
        let message = match consumer.recv().await {
            Ok(message) => message,
            Err(e) => {
                tracing::debug!(error = %e, "fleet simulator: reading commands failed");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let received_ms = unix_ms();
        bump(&shared.counters.commands_read, 1);
        let Some(host) = message.key().and_then(|k| std::str::from_utf8(k).ok()) else {
            bump(&shared.counters.commands_not_ours, 1);
            continue;
        };
        if !shared.hosts.contains_key(host) {
            bump(&shared.counters.commands_not_ours, 1);
            continue;
        }
        let host = host.to_owned();
        let token = message
            .payload()
            .and_then(|p| std::str::from_utf8(p).ok())
            .unwrap_or("")
            .trim()
            .to_owned();
        let published_ms = message.timestamp().to_millis();
        handle(&shared, &host, &token, published_ms, received_ms).await;
    }
}

async fn handle(
    shared: &Arc<Shared>,
    host: &str,
    token: &str,
    published_ms: Option<i64>,
    received_ms: i64,
) {
    let verified = {
        let mut state = shared.hosts[host].lock().expect("host lock");
        state.verifier.verify(token, received_ms / 1000)
    };
    let command = match verified {
        Ok(command) => command,
        Err(e) => {
            bump(&shared.counters.commands_rejected, 1);
            let id = CommandVerifier::unverified_id(token);
            shared.reject(host, id, None, e.to_string()).await;
            return;
        }
    };
    bump(&shared.counters.commands_verified, 1);
    let kind = match &command.action {
        CommandAction::Start(_) => "start",
        CommandAction::Stop { .. } => "stop",
        CommandAction::Undeploy { .. } => "undeploy",
        CommandAction::SyncServices(_) => "sync_services",
    };
    shared
        .latencies
        .lock()
        .expect("latency lock")
        .push(CommandLatency {
            host: host.to_owned(),
            command_id: command.id,
            kind,
            published_ms: published_ms.unwrap_or(command.issued_at * 1000),
            issued_at: command.issued_at,
            received_ms,
        });
    let refused = |reason: String, profile_id: Option<Uuid>| {
        bump(&shared.counters.commands_refused, 1);
        shared.reject(host, Some(command.id), profile_id, reason)
    };
    match command.action {
        CommandAction::Start(start) => {
            let profile_id = start.profile_id;
            let spawned = {
                let mut guard = shared.hosts[host].lock().expect("host lock");
                let state = &mut *guard;
                if state.undeployed {
                    Err("agent is draining and takes no new profiles".to_owned())
                } else if start.frequency_hz == 0 || start.duration_ms == 0 {
                    Err("a start needs a frequency and a duration".to_owned())
                } else if let Entry::Vacant(slot) = state.running.entry(profile_id) {
                    let (stop, stop_rx) = watch::channel(false);
                    slot.insert(stop);
                    shared.profiles.lock().expect("profiles lock").insert(
                        profile_id,
                        SimProfile {
                            profile_id,
                            host: host.to_owned(),
                            agent_id: state.agent_id.clone(),
                            received_ms,
                            acked_ms: None,
                            snapshots: 0,
                            samples: 0,
                            finished: None,
                        },
                    );
                    Ok((state.index, state.agent_id.clone(), stop_rx))
                } else {
                    Err(format!("profile {profile_id} is already running"))
                }
            };
            match spawned {
                Ok((index, agent_id, stop_rx)) => {
                    bump(&shared.counters.starts, 1);
                    let run = ProfileRun {
                        shared: shared.clone(),
                        index,
                        host: host.to_owned(),
                        agent_id,
                        start,
                    };
                    tokio::spawn(run.run(stop_rx));
                }
                Err(reason) => refused(reason, Some(profile_id)).await,
            }
        }
        CommandAction::Stop { profile_id } => {
            let stopped = {
                let state = shared.hosts[host].lock().expect("host lock");
                state
                    .running
                    .get(&profile_id)
                    .map(|stop| stop.send_replace(true))
                    .is_some()
            };
            if stopped {
                bump(&shared.counters.stops, 1);
            } else {
                refused(
                    format!("profile {profile_id} is not running"),
                    Some(profile_id),
                )
                .await;
            }
        }
        CommandAction::Undeploy { .. } => {
            let mut state = shared.hosts[host].lock().expect("host lock");
            state.undeployed = true;
            for stop in state.running.values() {
                stop.send_replace(true);
            }
        }
        CommandAction::SyncServices(sync) => match sync.check() {
            Ok(()) => {
                bump(&shared.counters.syncs, 1);
                shared.hosts[host].lock().expect("host lock").held = Some(sync);
            }
            Err(e) => refused(format!("sync_services refused: {e}"), None).await,
        },
    }
}

/// One simulated profile.
struct ProfileRun {
    shared: Arc<Shared>,
    index: usize,
    host: String,
    agent_id: String,
    start: StartProfile,
}

/// Resolves once a stop is asked; never when the sender is gone.
async fn stop_asked(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|stopped| *stopped).await.is_err() {
        std::future::pending::<()>().await;
    }
}

impl ProfileRun {
    fn update(&self, change: impl FnOnce(&mut SimProfile)) {
        if let Some(profile) = self
            .shared
            .profiles
            .lock()
            .expect("profiles lock")
            .get_mut(&self.start.profile_id)
        {
            change(profile);
        }
    }

    async fn run(self, mut stop: watch::Receiver<bool>) {
        let shared = self.shared.clone();
        let profile_id = self.start.profile_id;
        let first = &shared.windows[self.index % shared.windows.len()];
        let started = AgentEventKind::ProfileStarted {
            profile_id,
            event: first.event,
            frequency_hz: self.start.frequency_hz,
            pids: vec![10_000 + self.index as u32],
            language: Some(Language::Native),
            runtime_version: None,
            runtime: RuntimeInfo::default(),
        };
        if shared
            .event(self.index, &self.host, &self.agent_id, started)
            .await
        {
            bump(&shared.counters.acks_sent, 1);
            let at = unix_ms();
            self.update(|p| p.acked_ms = Some(at));
        }
        let started_ms = unix_ms();
        let window_ms = self
            .start
            .window_ms
            .unwrap_or(shared.default_window.as_millis() as u64)
            .max(1) as i64;
        let end_ms = started_ms + self.start.duration_ms as i64;
        let (mut snapshots, mut samples) = (0u64, 0u64);
        let mut window_start = started_ms;
        let mut sequence = 0u64;
        let reason = loop {
            let window_end = (window_start + window_ms).min(end_ms);
            let wait = Duration::from_millis((window_end - unix_ms()).max(0) as u64);
            let stopped = tokio::select! {
                () = tokio::time::sleep(wait) => false,
                () = stop_asked(&mut stop) => true,
            };
            let cut = if stopped {
                unix_ms().clamp(window_start, window_end)
            } else {
                window_end
            };
            if cut > window_start {
                let fixture =
                    &shared.windows[(self.index + sequence as usize) % shared.windows.len()];
                let snapshot = fixtures::rewrite(
                    fixture,
                    &fixtures::WindowHeader {
                        profile_id,
                        host: &self.host,
                        agent_id: &self.agent_id,
                        sequence,
                        window_start_ms: window_start,
                        window_end_ms: cut,
                        frequency_hz: self.start.frequency_hz,
                    },
                );
                let count = snapshot.total_samples();
                if count > 0 {
                    if shared.snapshot(self.index, &snapshot).await {
                        snapshots += 1;
                        samples += count;
                        bump(&shared.counters.snapshots_sent, 1);
                        bump(&shared.counters.samples_sent, count);
                        self.update(|p| {
                            p.snapshots = snapshots;
                            p.samples = samples;
                        });
                    }
                    sequence += 1;
                }
            }
            if stopped {
                break FinishReason::Stopped;
            }
            if cut >= end_ms {
                break FinishReason::DurationElapsed;
            }
            window_start = cut;
        };
        let finished = AgentEventKind::ProfileFinished {
            profile_id,
            reason,
            snapshots,
            samples,
            spooled_snapshots: 0,
            spooled_samples: 0,
        };
        shared
            .event(self.index, &self.host, &self.agent_id, finished)
            .await;
        bump(&shared.counters.profiles_finished, 1);
        self.update(|p| p.finished = Some(reason));
        if let Some(state) = shared.hosts.get(&self.host) {
            state.lock().expect("host lock").running.remove(&profile_id);
        }
    }
}
