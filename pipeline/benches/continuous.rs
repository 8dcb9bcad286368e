//! Continuous profiles' ingest: simulated hosts of one service, which one
//! enabled continuous configuration profiles always (19 Hz), each sending
//! one signed 10 s window every 10 s. Each window is named with the
//! profile id of its host's hourly segment, as the agent derives it
//! ([`odp_core::continuous::segment_profile_id`]), so the worker opens
//! each segment itself when its first window arrives, as in production.
//! A window is one busy thread's 190 samples (19 Hz × 10 s) drawn with a
//! skew from a pool of stacks the service shares, signed by its host's own
//! agent identity.
//!
//! 1. **Throughput**, against the transport's own limit, in the same run:
//!    a backlog of windows of the same hosts (from the previous hour: the
//!    first round's worker opens those segments) is published, then a bare
//!    rdkafka `BaseConsumer` that only reads the messages' bytes reads it
//!    to the end, and a fresh worker (the release `odp-pipeline` binary,
//!    its own process) drains it until every window is stored. Each is
//!    timed from its first message (or stored window) to its last, and
//!    the ratio of their windows a second printed per round, then the
//!    median (target ≥ 0.5×).
//! 2. **Keeping up**: the hosts stream for the run's length into one
//!    fresh worker; every 10 s the lag (windows sent but not stored) and
//!    the worker's resident memory are printed, then whether the lag
//!    stayed bounded and the memory flat (the last third of the run
//!    against the first).
//!
//! Beside the seed pack, which matches none of the pool's stacks, the
//! service has a rule of its own on the leaves of a tenth of its functions
//! (below its threshold, so it flags nothing): the worker keeps apart the
//! stacks of its running segments that some rule reads, and this is what
//! it keeps.
//!
//! Run by hand: `cargo bench -p odp-pipeline --bench continuous` (about 13
//! minutes; needs Tansu and Postgres like the tests). `ODP_FLEET_AGENTS`
//! sets the hosts (2,000), `ODP_FLEET_SECS` the streaming run (600),
//! `ODP_BENCH_BACKLOG` the windows of each throughput round (20,000),
//! `ODP_BENCH_ROUNDS` the rounds (3). Prints, asserts nothing.

mod common;
#[path = "common/offsets.rs"]
mod offsets;
#[path = "common/paced.rs"]
mod paced;
#[path = "common/stack_pool.rs"]
mod stack_pool;

use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use common::signing::Issuer;
use odp_core::continuous::{segment_profile_id, segment_start, DEFAULT_FREQUENCY_HZ, SEGMENT_SECS};
use odp_core::identity::{AgentIdentity, Channel};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Target};
use odp_devstack::{Stack, StackOptions};
use odp_plumbing::Topics;
use odp_profile::{FrameRead, FrameRef};
use odp_rules::{RuleDef, RuleSet};
use odp_store::{ContinuousProfiles, NewContinuous, NewService, Services};
use paced::{env_or, Message, Paced, WINDOW};
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::message::Message as _;
use rdkafka::producer::FutureProducer;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use sqlx::PgPool;
use stack_pool::Rng;
use uuid::Uuid;

const SERVICE: &str = "checkout";
/// Distinct stacks the service's hosts run, and the functions they are of.
const POOL_STACKS: usize = 2_000;
const FUNCTIONS: usize = 3_000;
/// The one busy thread of each host's profiled process.
const TID: u32 = 1;
/// Most a throughput side may take before the bench gives up on it.
const PATIENCE: Duration = Duration::from_secs(600);

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let hosts = env_or("ODP_FLEET_AGENTS", 2000) as usize;
    let run_for = Duration::from_secs(env_or("ODP_FLEET_SECS", 600));
    let backlog = env_or("ODP_BENCH_BACKLOG", 20_000) as usize;
    let rounds = env_or("ODP_BENCH_ROUNDS", 3) as usize;
    let options = common::in_memory_broker(
        StackOptions::ephemeral().topics(Topics::with_prefix("continuous-")),
    );
    let stack = Stack::start(options)
        .await
        .expect("start the stack (is tansu installed?)");
    let pool = stack.connect().await.unwrap();
    let issuer = Issuer::new();
    let fleet = Fleet {
        assignment: configure(&stack).await,
        identities: (0..hosts).map(|h| issuer.identity(&host(h))).collect(),
        stacks: stack_pool::stacks(&mut Rng(0x9e37_79b9_7f4a_7c15), POOL_STACKS, FUNCTIONS),
    };
    let read = service_rule(&stack, &fleet.stacks).await;
    println!(
        "service rule {:?} (leaf only): {read} of the pool's {POOL_STACKS} stacks",
        SERVICE_RULE
    );
    let public_key = issuer.write_public_key(stack.state_dir());
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", stack.kafka_bootstrap())
        .set("linger.ms", "5")
        .set("batch.num.messages", "1")
        .create()
        .unwrap();
    let sample = fleet.window(0, 0);
    println!(
        "{hosts} hosts of service {SERVICE}, continuous at {DEFAULT_FREQUENCY_HZ} Hz: one {}-s \
         window each per {} s ({:.0} windows/s), {} samples and {} bytes a window",
        WINDOW.as_secs(),
        WINDOW.as_secs(),
        hosts as f64 / WINDOW.as_secs_f64(),
        samples_per_window(),
        sample.payload.len()
    );

    // Throughput: the backlog's windows come from the previous hour, 10 s
    // apart per host, each round after the one before.
    let hour_before_ms = (segment_start(unix_ms() / 1000) - SEGMENT_SECS) * 1000;
    let per_host = backlog.div_ceil(hosts);
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let from = tokio::task::block_in_place(|| offsets::ends(&stack));
        let published = Instant::now();
        let mut sends = Vec::with_capacity(hosts);
        for k in 0..per_host {
            let step = (round * per_host + k) as i64 * WINDOW.as_millis() as i64;
            for h in 0..hosts {
                let window = fleet.window(h, hour_before_ms + step + phase_ms(h, hosts));
                let topic = stack.topics().stacks.clone();
                sends.push(paced::send(producer.clone(), topic, window));
            }
            futures::future::join_all(sends.drain(..)).await;
        }
        let windows = per_host * hosts;
        let to = tokio::task::block_in_place(|| offsets::ends(&stack));
        println!(
            "round {}: {windows} windows published in {:.1} s",
            round + 1,
            published.elapsed().as_secs_f64()
        );
        let (bare, bytes) = tokio::task::block_in_place(|| bare_read(&stack, round, &from, &to));
        let (worker, to_first) = drain(&stack, &pool, &public_key, round, &from, windows).await;
        let ratio = worker.rate() / bare.rate();
        println!(
            "round {}: bare consumer {} windows ({:.1} MB) in {:.2} s = {:.0} windows/s; \
             worker {} windows in {:.2} s = {:.0} windows/s (first stored {:.2} s after \
             start); worker / bare = {ratio:.2}x (target >= 0.5x)",
            round + 1,
            bare.counted,
            bytes as f64 / 1e6,
            bare.seconds,
            bare.rate(),
            worker.counted,
            worker.seconds,
            worker.rate(),
            to_first.as_secs_f64(),
        );
        ratios.push(ratio);
    }
    if !ratios.is_empty() {
        ratios.sort_by(f64::total_cmp);
        println!(
            "throughput worker / bare consumer, median of {rounds} rounds = {:.2}x (target >= 0.5x)",
            ratios[ratios.len() / 2]
        );
    }

    // Keeping up: a fresh worker reads only what the hosts stream from now.
    tokio::task::block_in_place(|| offsets::start_at_end(&stack, "continuous"));
    let stored_before = paced::stored(&pool).await;
    let worker = common::spawn_worker(&stack, "continuous", stack.database_url(), &public_key);
    println!(
        "streaming for {} s into one worker (target: lag bounded, RSS flat)",
        run_for.as_secs()
    );
    // Host h's window w ends when it is sent.
    let run_start_ms = unix_ms() - WINDOW.as_millis() as i64;
    let paced = Paced {
        pool: &pool,
        worker: &worker,
        producer: &producer,
        topic: &stack.topics().stacks,
        agents: hosts,
        run_for,
        stored_before,
    };
    paced
        .run(|h, w| {
            let step = i64::from(w) * WINDOW.as_millis() as i64;
            fleet.window(h, run_start_ms + step + phase_ms(h, hosts))
        })
        .await;
    drop(worker);
}

/// Service `checkout` and its continuous configuration, at the default
/// rate on every host: the id its segments are derived from.
async fn configure(stack: &Stack) -> Uuid {
    let db = stack.store().await.unwrap();
    Services::new(db.clone())
        .create(&NewService {
            name: SERVICE.into(),
            target: Target::ProcessName(SERVICE.into()),
            owner_team: None,
            description: None,
            created_by: "bench".into(),
        })
        .await
        .unwrap();
    ContinuousProfiles::new(db)
        .create(&NewContinuous {
            service: SERVICE.into(),
            event: EventKind::CpuClock,
            frequency_hz: DEFAULT_FREQUENCY_HZ,
            cpu_budget_ppm: odp_core::continuous::DEFAULT_CPU_BUDGET_PPM,
            hosts: None,
            created_by: "bench".into(),
        })
        .await
        .unwrap()
        .id
}

/// The service's own rule: the leaves of the functions whose number ends
/// in 7.
const SERVICE_RULE: &str = r"\.method\d*7$";

/// Saves the service's rule, and returns how many of `pool`'s stacks it
/// reads.
async fn service_rule(stack: &Stack, pool: &[Vec<Frame>]) -> usize {
    let rule = RuleDef {
        id: "checkout-hot-leaves".into(),
        title: "Checkout's watched leaves".into(),
        explanation: "The bench's rule of its own".into(),
        fix: "None".into(),
        link: "https://example.invalid".into(),
        kind: odp_rules::stack_share::KIND.into(),
        spec: serde_json::json!({"function": SERVICE_RULE, "leaf_only": true}),
        threshold_pct: 50.0,
        service_thresholds: Default::default(),
        enabled: true,
    };
    let db = stack.store().await.unwrap();
    odp_store::save_user_rule(db, &rule).await.unwrap();
    let (rules, _) = RuleSet::compile([rule]);
    let leaf = |frames: &[Frame]| FrameRef {
        function: frames.last().unwrap().function.clone(),
        module: String::new(),
    };
    pool.iter()
        .filter(|frames| rules.running_frame_read(&leaf(frames)) == FrameRead::AsLeaf)
        .count()
}

fn host(h: usize) -> String {
    format!("{SERVICE}-{h}")
}

/// Where in each 10 s host `h` of `hosts` sends: the hosts spread evenly.
fn phase_ms(h: usize, hosts: usize) -> i64 {
    (h as u128 * WINDOW.as_millis() / hosts as u128) as i64
}

fn samples_per_window() -> u64 {
    u64::from(DEFAULT_FREQUENCY_HZ) * WINDOW.as_secs()
}

fn unix_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The hosts, each with its agent's identity, and the stacks they run.
struct Fleet {
    assignment: Uuid,
    /// Host `h`'s at `h`.
    identities: Vec<AgentIdentity>,
    stacks: Vec<Vec<Frame>>,
}

impl Fleet {
    /// Host `h`'s window from `start_ms`, as its agent publishes it: named
    /// with its segment's profile id, signed.
    fn window(&self, h: usize, start_ms: i64) -> Message {
        let host = host(h);
        let segment = segment_start(start_ms.div_euclid(1000));
        let profile_id = segment_profile_id(self.assignment, &host, segment);
        let mut rng = Rng(((h as u64) << 40 ^ start_ms as u64) | 1);
        let mut counts: HashMap<usize, u64> = HashMap::new();
        for _ in 0..samples_per_window() {
            *counts.entry(rng.skewed(self.stacks.len())).or_default() += 1;
        }
        let mut b = SnapshotBuilder::new();
        for (stack, count) in counts {
            b.add(&self.stacks[stack], TID, count);
        }
        b.name_thread(TID, "worker");
        let payload = b
            .build(SnapshotHeader {
                profile_id,
                host: host.clone(),
                agent_id: format!("agent-{h}"),
                // Unique per host and window: the window's second.
                sequence: start_ms.div_euclid(1000) as u64,
                window_start_ms: start_ms,
                window_end_ms: start_ms + WINDOW.as_millis() as i64,
                event: EventKind::CpuClock,
                period: 1_000_000_000 / u64::from(DEFAULT_FREQUENCY_HZ),
                frequency_hz: DEFAULT_FREQUENCY_HZ,
            })
            .encode();
        let headers =
            odp_plumbing::signed::headers(&self.identities[h].sign(Channel::Stacks, &payload));
        Message {
            key: profile_id.to_string(),
            payload,
            headers,
        }
    }
}

/// One side of a throughput round: what it counted (after its first
/// message or stored window, when its clock started) in how long.
struct Timed {
    counted: u64,
    seconds: f64,
}

impl Timed {
    fn rate(&self) -> f64 {
        self.counted as f64 / self.seconds
    }
}

/// A bare consumer of its own group reads the stacks topic from `from` to
/// `to`, touching each message's bytes and nothing more: the transport's
/// own rate. Timed from the first message, which is not counted; with
/// the payload bytes it read.
fn bare_read(stack: &Stack, round: usize, from: &[(i32, i64)], to: &[(i32, i64)]) -> (Timed, u64) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", stack.kafka_bootstrap())
        .set("group.id", format!("bare-{round}"))
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let topic = &stack.topics().stacks;
    let mut list = TopicPartitionList::new();
    for &(partition, offset) in from {
        list.add_partition_offset(topic, partition, Offset::Offset(offset))
            .unwrap();
    }
    consumer.assign(&list).unwrap();
    let mut left: HashMap<i32, i64> = to
        .iter()
        .zip(from)
        .filter(|((_, end), (_, start))| end > start)
        .map(|(&(partition, end), _)| (partition, end))
        .collect();
    let (mut started, mut counted, mut bytes) = (None::<Instant>, 0u64, 0u64);
    let launched = Instant::now();
    while !left.is_empty() && launched.elapsed() < PATIENCE {
        let Some(message) = consumer.poll(Duration::from_millis(100)) else {
            continue;
        };
        let message = message.expect("consume");
        let payload = black_box(message.payload().unwrap_or_default());
        if started.is_none() {
            started = Some(Instant::now());
        } else {
            counted += 1;
            bytes += payload.len() as u64;
        }
        if left
            .get(&message.partition())
            .is_some_and(|&end| message.offset() + 1 >= end)
        {
            left.remove(&message.partition());
        }
    }
    if !left.is_empty() {
        println!("bare consumer: gave up with partitions {left:?} unread");
    }
    let seconds = started.map_or(f64::NAN, |s| s.elapsed().as_secs_f64());
    (Timed { counted, seconds }, bytes)
}

/// A fresh worker, of a group starting at `from`, stores the `windows`
/// published after it. Timed from its first stored window: joining the
/// group and loading the rules are start-up, not ingest; the windows
/// stored by then are not counted. With the time from its start to its
/// first stored window.
async fn drain(
    stack: &Stack,
    pool: &PgPool,
    public_key: &Path,
    round: usize,
    from: &[(i32, i64)],
    windows: usize,
) -> (Timed, Duration) {
    let group = format!("drain-{round}");
    tokio::task::block_in_place(|| offsets::commit(stack, &group, from));
    let before = paced::stored(pool).await;
    let launched = Instant::now();
    let worker = common::spawn_worker(stack, &group, stack.database_url(), public_key);
    let (mut started, mut stored_at_start, mut to_first) = (None::<Instant>, 0, Duration::ZERO);
    loop {
        let stored = paced::stored(pool).await - before;
        if stored > 0 && started.is_none() {
            started = Some(Instant::now());
            stored_at_start = stored;
            to_first = launched.elapsed();
        }
        if stored >= windows as i64 || launched.elapsed() > PATIENCE {
            let seconds = started.map_or(f64::NAN, |s| s.elapsed().as_secs_f64());
            if stored < windows as i64 {
                println!("worker: gave up with {stored} of {windows} windows stored");
            }
            drop(worker);
            let counted = (stored - stored_at_start) as u64;
            return (Timed { counted, seconds }, to_first);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
