//! The snapshot spool against a real broker (Tansu): snapshots published
//! while no broker listens are spooled and delivered in order once one
//! starts on that port; a tiny spool drops its oldest, counts exactly what
//! it dropped, and leaves the record of each loss for the pipeline; an agent started over an earlier run's spool resends it.
//! Every snapshot delivered, resent ones included, is signed by the agent's
//! identity.
//!
//! Needs the `tansu` binary (`ODP_TANSU_BIN`, `PATH` or `~/.cargo/bin`).

mod support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use odp_core::identity::{AgentIdentity, Channel, MessageVerifier};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot};
use odp_profiler_service::metrics::AgentMetrics;
use odp_profiler_service::publish::{Publisher, Sent};
use odp_profiler_service::spool::Spool;
use odp_profiler_service::Args;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::message::Message;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use uuid::Uuid;

use support::kafka::Broker;
use support::Killed;

const WAIT: Duration = Duration::from_secs(60);
/// The host of the agent and of its snapshots.
const HOST: &str = "spool-host";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("pick a free port")
        .port()
}

/// Starts Tansu (in-memory storage) on `port` and creates the topics.
async fn start_broker(port: u16, topics: &[String]) -> Broker {
    let broker = Broker::start_on(port).await.expect("start the broker");
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", broker.bootstrap())
        .create()
        .unwrap();
    let new: Vec<NewTopic<'_>> = topics
        .iter()
        .map(|t| NewTopic::new(t, 2, TopicReplication::Fixed(1)))
        .collect();
    for result in admin
        .create_topics(&new, &AdminOptions::new())
        .await
        .unwrap()
    {
        // The agent's producer may have had it auto-created already.
        if let Err((topic, code)) = result {
            assert_eq!(code, RDKafkaErrorCode::TopicAlreadyExists, "create {topic}");
        }
    }
    broker
}

struct Setup {
    port: u16,
    topics: Vec<String>,
    dir: tempfile::TempDir,
    key: PathBuf,
    /// The api-server's public key, which the snapshots must verify with.
    public: String,
}

impl Setup {
    fn new() -> Setup {
        let prefix = format!("s{}-", &Uuid::new_v4().simple().to_string()[..8]);
        let topics = [
            "odp.commands",
            "odp.stacks",
            "odp.events",
            "odp.dead-letter",
        ]
        .map(|t| format!("{prefix}{t}"))
        .to_vec();
        let dir = tempfile::tempdir().unwrap();
        let (private, public) = odp_core::command::generate_keypair().unwrap();
        let key = dir.path().join("command.pub.pem");
        std::fs::write(&key, &public).unwrap();
        let signer = odp_core::command::CommandSigner::from_private_pem(&private).unwrap();
        let (agent_key, token) = support::kafka::issue(&signer, HOST);
        AgentIdentity::save(&agent_key, &token, &dir.path().join("identity")).unwrap();
        Setup {
            port: free_port(),
            topics,
            dir,
            key,
            public,
        }
    }

    fn spool_dir(&self) -> PathBuf {
        self.dir.path().join("spool")
    }

    fn args(&self, spool_max_bytes: u64) -> Vec<String> {
        let mut args: Vec<String> = vec!["odp-profiler-service".into()];
        for (flag, value) in [
            ("--kafka-bootstrap", format!("127.0.0.1:{}", self.port)),
            ("--topic-commands", self.topics[0].clone()),
            ("--topic-stacks", self.topics[1].clone()),
            ("--topic-events", self.topics[2].clone()),
            ("--topic-dead-letter", self.topics[3].clone()),
            ("--host-id", HOST.into()),
            ("--command-public-key", self.key.display().to_string()),
            (
                "--identity-dir",
                self.dir.path().join("identity").display().to_string(),
            ),
            ("--spool-dir", self.spool_dir().display().to_string()),
            ("--spool-max-bytes", spool_max_bytes.to_string()),
            // Give up on a delivery (and spool it) soon.
            ("--kafka-option", "message.timeout.ms=2000".into()),
        ] {
            args.push(flag.into());
            args.push(value);
        }
        args
    }

    /// A publisher with its resender, and the metrics registry behind it.
    fn publisher(&self, spool_max_bytes: u64) -> (Publisher, odp_metrics::Metrics) {
        let mut args = Args::try_parse_from(self.args(spool_max_bytes)).unwrap();
        // The identity is the one in --identity-dir.
        (args.agent_key, args.agent_certificate) = (None, None);
        let config = args.into_config().unwrap();
        let mut registry = odp_metrics::Registry::default();
        let metrics = AgentMetrics::register(&mut registry);
        let publisher = Publisher::new(&config, Arc::clone(&metrics)).unwrap();
        publisher.spawn_resender().expect("the spool is on");
        (publisher, odp_metrics::Metrics::new(registry))
    }

    fn spooled_files(&self) -> usize {
        std::fs::read_dir(self.spool_dir())
            .map(|d| d.count())
            .unwrap_or(0)
    }

    async fn wait_spool_empty(&self) {
        let deadline = Instant::now() + WAIT;
        while self.spooled_files() > 0 {
            assert!(Instant::now() < deadline, "spool did not drain");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Reads the stacks topic until `want` snapshots (and a short while
    /// longer, to catch extra ones); per partition in offset order.
    async fn read_stacks(&self, want: usize) -> Vec<Snapshot> {
        let bootstrap = format!("127.0.0.1:{}", self.port);
        let topic = self.topics[1].clone();
        let verifier = MessageVerifier::from_public_pem(&self.public).unwrap();
        tokio::task::spawn_blocking(move || read_stacks(&bootstrap, &topic, &verifier, want))
            .await
            .unwrap()
    }
}

/// Also checks each is signed by an agent of the host it names.
fn read_stacks(
    bootstrap: &str,
    topic: &str,
    verifier: &MessageVerifier,
    want: usize,
) -> Vec<Snapshot> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("observer-{}", Uuid::new_v4()))
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let metadata = consumer
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    for p in metadata.topics()[0].partitions() {
        assignment
            .add_partition_offset(topic, p.id(), Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + WAIT;
    let mut extra_until = None;
    loop {
        if out.len() >= want && extra_until.is_none() {
            extra_until = Some(Instant::now() + Duration::from_secs(2));
        }
        if extra_until.is_some_and(|t| Instant::now() > t) {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {want} snapshots",
            out.len()
        );
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
            let snapshot = Snapshot::decode(m.payload().unwrap()).expect("decodes");
            assert_eq!(m.key(), Some(snapshot.profile_id.to_string().as_bytes()));
            let now = odp_plumbing::signed::unix_now();
            let certificate = odp_plumbing::signed::verify(verifier, Channel::Stacks, &m, now)
                .unwrap_or_else(|e| panic!("snapshot {} not signed: {e}", snapshot.sequence));
            assert_eq!(certificate.host, snapshot.host);
            out.push(snapshot);
        }
    }
}

fn window(profile_id: Uuid, sequence: u64) -> Snapshot {
    window_of(HOST, profile_id, sequence)
}

fn window_of(host: &str, profile_id: Uuid, sequence: u64) -> Snapshot {
    let mut b = SnapshotBuilder::new();
    b.add(&[Frame::function("main"), Frame::function("hot")], 1, 10);
    b.build(header(host, profile_id, sequence))
}

fn header(host: &str, profile_id: Uuid, sequence: u64) -> SnapshotHeader {
    SnapshotHeader {
        profile_id,
        host: host.into(),
        agent_id: "a".into(),
        sequence,
        window_start_ms: 0,
        window_end_ms: 1,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    }
}

/// Sequences of one profile, in the order the broker holds them.
fn sequences(all: &[Snapshot], profile_id: Uuid) -> Vec<u64> {
    all.iter()
        .filter(|s| s.profile_id == profile_id)
        .map(|s| s.sequence)
        .collect()
}

fn counter(metrics: &odp_metrics::Metrics, name: &str) -> u64 {
    let text = metrics.encode();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} not in {text}"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_down_then_up_delivers_everything_in_order() {
    let setup = Setup::new();
    let (publisher, metrics) = setup.publisher(1 << 20);
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());

    // Nothing listens yet: the first delivery times out, then the backlog
    // sends everything after it to the spool.
    for seq in 0..5 {
        for profile in [a, b] {
            let sent = publisher.snapshot(&window(profile, seq)).await.unwrap();
            assert_eq!(sent, Sent::Spooled);
        }
    }
    assert_eq!(setup.spooled_files(), 10);

    let _broker = start_broker(setup.port, &setup.topics).await;
    // Published while the spool drains: behind it, never ahead.
    for seq in 5..8 {
        publisher.snapshot(&window(a, seq)).await.unwrap();
    }
    let all = setup.read_stacks(13).await;
    assert_eq!(all.len(), 13, "nothing lost, nothing twice");
    assert_eq!(sequences(&all, a), (0..8).collect::<Vec<_>>());
    assert_eq!(sequences(&all, b), (0..5).collect::<Vec<_>>());
    setup.wait_spool_empty().await;
    assert_eq!(counter(&metrics, "odp_agent_spool_dropped_total"), 0);
    assert!(counter(&metrics, "odp_agent_snapshots_spooled_total") >= 10);
    assert_eq!(counter(&metrics, "odp_agent_snapshots_published_total"), 13);

    // Back to normal: acknowledged directly.
    let sent = publisher.snapshot(&window(b, 5)).await.unwrap();
    assert_eq!(sent, Sent::Acknowledged);
}

/// A window of 40 deep stacks of 10 samples each: kilobytes, against the
/// few dozen bytes of the record of its loss.
fn fat_window(profile_id: Uuid, sequence: u64) -> Snapshot {
    let mut b = SnapshotBuilder::new();
    for stack in 0..40 {
        let frames: Vec<Frame> = (0..12)
            .map(|depth| Frame::function(format!("service::handler_{stack}::step_{depth}")))
            .collect();
        b.add(&frames, 1, 10);
    }
    b.build(header(HOST, profile_id, sequence))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_spool_replaces_the_oldest_by_the_record_of_their_loss() {
    let setup = Setup::new();
    let profile = Uuid::new_v4();
    let size = fat_window(profile, 0).encode().len() as u64;
    let per_window = fat_window(profile, 0).total_samples();
    let total = 10u64;
    // Room for three windows and the records of the others.
    let (publisher, metrics) = setup.publisher(3 * size + size / 2);

    for seq in 0..total {
        let sent = publisher.snapshot(&fat_window(profile, seq)).await.unwrap();
        assert_eq!(sent, Sent::Spooled);
    }

    let _broker = start_broker(setup.port, &setup.topics).await;
    setup.wait_spool_empty().await;
    let dropped = counter(&metrics, "odp_agent_spool_dropped_total");
    // Every window arrives: whole, or as the record of its loss.
    let delivered = setup.read_stacks(total as usize).await;
    let mut seqs = sequences(&delivered, profile);
    seqs.sort_unstable();
    assert_eq!(seqs, (0..total).collect::<Vec<_>>(), "each window once");
    let whole: Vec<u64> = delivered
        .iter()
        .filter(|s| s.total_samples() > 0)
        .map(|s| s.sequence)
        .collect();
    assert!(
        whole.ends_with(&[7, 8, 9]),
        "the newest are kept: {whole:?}"
    );
    assert_eq!(whole.len() as u64 + dropped, total, "every drop counted");
    // What the windows held is stored or counted as lost in transport.
    let stored: u64 = delivered.iter().map(Snapshot::total_samples).sum();
    let lost: u64 = delivered.iter().map(|s| s.coverage.lost.transport).sum();
    assert_eq!(
        stored + lost,
        total * per_window,
        "{stored} stored, {lost} lost"
    );
    assert!(dropped == 6 || dropped == 7, "dropped {dropped}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_resends_an_earlier_runs_spool_on_start() {
    let setup = Setup::new();
    let profile = Uuid::new_v4();
    // What an agent that lost its broker left behind, and a snapshot of
    // another host, which this agent cannot sign for: dropped.
    let mut spool = Spool::open(&setup.spool_dir(), 1 << 20).unwrap();
    for seq in 0..5 {
        spool.push(&window(profile, seq).encode()).unwrap();
        if seq == 2 {
            let foreign = window_of("another-host", Uuid::new_v4(), 0);
            spool.push(&foreign.encode()).unwrap();
        }
    }
    drop(spool);

    let _broker = start_broker(setup.port, &setup.topics).await;
    let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join("spool-agent.log");
    let agent = Command::new(env!("CARGO_BIN_EXE_odp-profiler-service"))
        .args(&setup.args(1 << 20)[1..])
        .env("RUST_LOG", "info,odp_profiler_service=debug")
        .env_remove("ODP_AGENT_KEY")
        .env_remove("ODP_AGENT_CERTIFICATE")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("start the agent");
    let mut agent = Killed(agent);

    let all = setup.read_stacks(5).await;
    assert_eq!(sequences(&all, profile), (0..5).collect::<Vec<_>>());
    assert_eq!(all.len(), 5);
    setup.wait_spool_empty().await;
    support::sigterm(&agent);
    let status = support::wait_exit(&mut agent, Duration::from_secs(20));
    assert!(status.success(), "agent exit status {status}");
}
