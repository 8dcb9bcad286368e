//! Ingest throughput, measured in one run against the same database:
//!
//! 1. one worker (Kafka → decode → store → commit) versus the database's
//!    own raw bulk load of exactly the rows it wrote into a table of the
//!    same shape (goal ≥ 0.7×), the median of five rounds: `COPY` on
//!    Postgres, `LOAD DATA INFILE` on MySQL;
//! 2. two workers versus one on the four partitions of the stacks topic,
//!    with the database on loopback and again behind a proxy that delays
//!    each packet by 1 ms each way (a database on another host, where a
//!    worker waits on round trips that a second worker overlaps).
//!
//! Every window is signed by its host's agent identity and its profile
//! recorded first, as in production, so the worker's checks (signature,
//! host, profile) are on the clock. Apart from the runs, it times those
//! checks on their own: what verifying a message's signature costs against
//! decoding it.
//!
//! Workers run as their own processes (the release `odp-pipeline`
//! binary), as in production. Run by hand:
//! `cargo bench -p odp-pipeline --bench ingest` (a few minutes; needs
//! Tansu and Postgres like the tests), with `ODP_BENCH_DATABASE=mysql` on a
//! private MariaDB instead, and `ODP_BENCH_PIPELINE=path` to time another
//! build of the worker on the same workload (`ODP_BENCH_WINDOWS` windows a
//! profile instead of 100, and `ODP_BENCH_ONE_WORKER=1` to stop after the
//! one-worker rounds). Prints ratios, asserts nothing.

mod common;
#[path = "common/latency.rs"]
mod latency;
#[path = "ingest/mysql.rs"]
mod mysql;
#[path = "common/offsets.rs"]
mod offsets;
#[path = "ingest/postgres.rs"]
mod postgres;

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::signing::{insert_profile, Issuer};
use odp_core::identity::{AgentIdentity, Channel, MessageVerifier};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot};
use odp_devstack::{DatabaseKind, Stack, StackOptions};
use odp_plumbing::Topics;
use odp_store::Database;
use odp_store::ProfileStatus;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use uuid::Uuid;

/// Runs `$f` of the bench's module for the database's backend, on its pool.
macro_rules! on_database {
    ($db:expr, $f:ident($($arg:expr),*)) => {
        match $db {
            Database::Postgres(pool) => postgres::$f(pool, $($arg),*).await,
            Database::MySql(pool) => mysql::$f(pool, $($arg),*).await,
        }
    };
}

const PROFILES: usize = 40;
/// Windows per profile unless `ODP_BENCH_WINDOWS` says otherwise: a round
/// of the default stores in about a second, too short to tell two builds
/// of the worker apart (`ODP_BENCH_WINDOWS=1000` takes about ten).
const WINDOWS: usize = 100;
const STACKS_PER_WINDOW: usize = 60;
const DISTINCT_STACKS: usize = 600;
const THREADS: u32 = 4;
/// Hosts the profiles run on, one agent identity each.
const HOSTS: usize = 8;
/// Worker runs compared with a raw bulk load. The worker writes one row
/// per window (in `snapshots`), holding the window's block.
const ROUNDS: usize = 5;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let database: DatabaseKind = std::env::var("ODP_BENCH_DATABASE")
        .unwrap_or_else(|_| "postgres".into())
        .parse()
        .expect("ODP_BENCH_DATABASE is postgres or mysql");
    let options = common::in_memory_broker(
        StackOptions::ephemeral()
            .topics(Topics::with_prefix("bench-"))
            .database_kind(database),
    );
    let stack = Stack::start(options)
        .await
        .expect("start the stack (is tansu installed?)");
    let db = stack.store().await.unwrap();
    let server = database.server_name();
    let bulk_load = match database {
        DatabaseKind::Postgres => "COPY",
        DatabaseKind::Mysql => "LOAD DATA INFILE",
    };
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", stack.kafka_bootstrap())
        .set("partitioner", "murmur2_random")
        .set("linger.ms", "20")
        // Tansu skips the rest of a batch fetched from its middle (see
        // odp_devstack::TANSU_KAFKA_OPTIONS), which backpressure pauses do.
        .set("batch.num.messages", "1")
        .create()
        .unwrap();

    let issuer = Issuer::new();
    let agents = Agents {
        public_key: issuer.write_public_key(stack.state_dir()),
        identities: (0..HOSTS).map(|h| issuer.identity(&host(h))).collect(),
    };
    verify_cost(&agents);
    let windows: usize = std::env::var("ODP_BENCH_WINDOWS")
        .map(|w| w.parse().expect("ODP_BENCH_WINDOWS is a count"))
        .unwrap_or(WINDOWS);
    let runs = Runs {
        stack: &stack,
        db: &db,
        producer: &producer,
        agents: &agents,
        windows,
    };

    println!(
        "database: {server}; workload: {PROFILES} profiles x {windows} windows, \
         {STACKS_PER_WINDOW} stacks each, signed by {HOSTS} hosts' agents"
    );
    // Other work on the machine slows either side at random: rounds of a
    // worker run and the raw bulk load of its rows right after, and the
    // median.
    let mut ratios = Vec::new();
    let mut one_rates = Vec::new();
    for round in 1..=ROUNDS {
        let group = format!("one-{round}");
        let one = runs.ingest(1, &group, stack.database_url()).await;
        let (rows, timed_rows) = (one.rows, one.timed_rows());
        let load_secs = on_database!(&db, bulk_load_seconds(&one.profiles));
        let rows_per_sec = one.rate();
        let load_rows_per_sec = rows as f64 / load_secs;
        let ratio = rows_per_sec / load_rows_per_sec;
        println!(
            "round {round}: 1 worker {timed_rows} rows in {:.2} s = {rows_per_sec:.0} rows/s \
             ({} stored before the clock started); raw {bulk_load} {rows} rows in \
             {load_secs:.2} s = {load_rows_per_sec:.0} rows/s; ratio {ratio:.2}x",
            one.seconds, one.rows_before
        );
        ratios.push(ratio);
        one_rates.push(rows_per_sec);
    }
    println!(
        "ratio worker/{bulk_load}, median of {ROUNDS} rounds = {:.2}x (goal >= 0.7x)",
        median(&mut ratios)
    );

    if std::env::var_os("ODP_BENCH_ONE_WORKER").is_some() {
        return;
    }
    let local = stack.database_url().to_owned();
    let two_rate = runs.ingest(2, "two", &local).await.report(2);
    println!(
        "ratio 2 workers/1 worker throughput = {:.2}x",
        two_rate / median(&mut one_rates)
    );

    let (upstream, _) = authority(&local);
    let proxy = latency::LatencyProxy::start(
        upstream.parse().expect("the database at host:port"),
        Duration::from_millis(1),
    )
    .await;
    let remote = local.replacen(upstream, &proxy.addr.to_string(), 1);
    println!("{server} behind a proxy adding 1 ms each way:");
    let (mut one_remote, mut two_remote) = (Vec::new(), Vec::new());
    for round in 1..=2 {
        let group = format!("one-remote-{round}");
        let one = runs.ingest(1, &group, &remote).await;
        one_remote.push(one.report(1));
        let group = format!("two-remote-{round}");
        let two = runs.ingest(2, &group, &remote).await;
        two_remote.push(two.report(2));
    }
    println!(
        "ratio 2 workers/1 worker throughput, 1 ms away = {:.2}x",
        median(&mut two_remote) / median(&mut one_remote)
    );
}

/// The agents the windows come from, and the key that certifies them.
struct Agents {
    public_key: PathBuf,
    /// Of `host(i)`, at `i`.
    identities: Vec<AgentIdentity>,
}

fn host(i: usize) -> String {
    format!("host-{i}")
}

/// Prints what checking a window's signature costs per message, its
/// certificate already verified (as all but an agent's first message
/// find it), against decoding the window, and the one-off check of a
/// certificate. CPU only: no broker, no database.
fn verify_cost(agents: &Agents) {
    const MESSAGES: usize = 2_000;
    let pem = std::fs::read_to_string(&agents.public_key).unwrap();
    let identity = &agents.identities[0];
    let profile = Uuid::new_v4();
    let signed: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = (0..MESSAGES)
        .map(|window| {
            let payload = snapshot("verify", profile, &host(0), window);
            let signature = identity.sign(Channel::Stacks, &payload);
            let certificate = signature.certificate.as_bytes().to_vec();
            (payload, certificate, signature.signature.into_bytes())
        })
        .collect();
    let now = odp_plumbing::signed::unix_now();
    let verify =
        |verifier: &MessageVerifier,
         (payload, certificate, signature): &(Vec<u8>, Vec<u8>, Vec<u8>)| {
            verifier
                .verify(
                    Channel::Stacks,
                    payload,
                    Some(certificate),
                    Some(signature),
                    now,
                )
                .expect("verifies")
        };
    // The best of a few passes: other work on the machine only adds.
    let best = |pass: &dyn Fn() -> Duration| (0..5).map(|_| pass()).min().unwrap();
    let decode = best(&|| {
        let started = Instant::now();
        for (payload, ..) in &signed {
            black_box(Snapshot::decode(black_box(payload)).unwrap());
        }
        started.elapsed()
    });
    let verifier = MessageVerifier::from_public_pem(&pem).unwrap();
    verify(&verifier, &signed[0]);
    let checked = best(&|| {
        let started = Instant::now();
        for message in &signed {
            black_box(verify(&verifier, message));
        }
        started.elapsed()
    });
    let first = best(&|| {
        let fresh = MessageVerifier::from_public_pem(&pem).unwrap();
        let started = Instant::now();
        black_box(verify(&fresh, &signed[0]));
        started.elapsed()
    });
    let per = |d: Duration| d.as_secs_f64() * 1e6 / MESSAGES as f64;
    println!(
        "per window of {} bytes: decode {:.1} us; signature check {:.1} us \
         (certificate cached; its first check {:.0} us); \
         check / decode = {:.2}x, (check + decode) / decode = {:.2}x",
        signed[0].0.len(),
        per(decode),
        per(checked),
        first.as_secs_f64() * 1e6,
        checked.as_secs_f64() / decode.as_secs_f64(),
        (checked + decode).as_secs_f64() / decode.as_secs_f64()
    );
}

/// The `host:port` of a `scheme://user@host:port/db` URL, and the rest.
fn authority(url: &str) -> (&str, &str) {
    let after_user = url.split_once('@').map_or(url, |(_, rest)| rest);
    after_user.split_once('/').unwrap_or((after_user, ""))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

struct Run {
    profiles: Vec<Uuid>,
    seconds: f64,
    /// Rows of `profiles` already stored when the clock started.
    rows_before: i64,
    /// Rows of `profiles` stored in all.
    rows: i64,
}

impl Run {
    /// The rows stored on the clock: it starts at the first stored batch,
    /// so that batch's rows are not counted either.
    fn timed_rows(&self) -> i64 {
        self.rows - self.rows_before
    }

    fn rate(&self) -> f64 {
        self.timed_rows() as f64 / self.seconds
    }

    /// Prints the run's rate and returns it.
    fn report(&self, workers: usize) -> f64 {
        println!(
            "{workers} worker(s): {} rows in {:.2} s = {:.0} rows/s",
            self.timed_rows(),
            self.seconds,
            self.rate()
        );
        self.rate()
    }
}

/// What every run publishes to and stores in, and how many windows.
struct Runs<'a> {
    stack: &'a Stack,
    db: &'a Database,
    producer: &'a FutureProducer,
    agents: &'a Agents,
    /// Per profile.
    windows: usize,
}

impl Runs<'_> {
    /// Publishes the workload first, then times `workers` workers of a fresh
    /// group, which starts where the earlier runs' messages end, from start
    /// until every snapshot is stored.
    async fn ingest(&self, workers: usize, group: &str, database_url: &str) -> Run {
        let Runs {
            stack,
            db,
            producer,
            agents,
            windows,
        } = *self;
        // Each run starts from empty tables, as its baseline does: tables grown
        // by the earlier runs would make every later run slower.
        on_database!(db, clear());
        // Profile `i` runs on `host(i % HOSTS)`, recorded as the api-server
        // would have before any window came.
        let mut profiles: Vec<Uuid> = Vec::with_capacity(PROFILES);
        for i in 0..PROFILES {
            profiles.push(insert_profile(db, &host(i % HOSTS), ProfileStatus::Requested).await);
        }
        let group = format!("bench-{group}");
        tokio::task::block_in_place(|| offsets::start_at_end(stack, &group));
        let mut sends = Vec::new();
        for window in 0..windows {
            for (i, &profile) in profiles.iter().enumerate() {
                let payload = snapshot(&group, profile, &host(i % HOSTS), window);
                let signature = agents.identities[i % HOSTS].sign(Channel::Stacks, &payload);
                let headers = odp_plumbing::signed::headers(&signature);
                let key = profile.to_string();
                let topic = stack.topics().stacks.clone();
                sends.push(async move {
                    let record = FutureRecord::to(&topic)
                        .key(&key)
                        .payload(&payload)
                        .headers(headers);
                    producer
                        .send(record, Duration::from_secs(60))
                        .await
                        .map_err(|(e, _)| e)
                });
            }
            for sent in futures::future::join_all(sends.drain(..)).await {
                sent.expect("produce");
            }
        }
        let launched = Instant::now();
        let workers: Vec<_> = (0..workers)
            .map(|_| common::spawn_worker(stack, &group, database_url, &agents.public_key))
            .collect();
        // Timed from the first stored snapshot: joining the group and loading
        // the rules are start-up, not ingest. The rows stored by then are
        // counted (in one statement, after the clock started, so a batch
        // committed in between is timed but not counted) and left out.
        //
        // A profile's windows are stored in order (one partition, batches one
        // after the other), so the poll, which must not take the database's
        // time from the worker, looks up only each profile's first and last
        // window.
        let mut started = None;
        let mut rows_before = 0;
        loop {
            let (first, last) = on_database!(db, progress(&profiles, windows as i64 - 1));
            if first > 0 && started.is_none() {
                started = Some(Instant::now());
                rows_before = on_database!(db, rows(&profiles));
                println!(
                    "{group}: first snapshot stored {:.2} s after start",
                    launched.elapsed().as_secs_f64()
                );
            }
            if last == PROFILES as i64 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let seconds = started.expect("stored").elapsed().as_secs_f64();
        drop(workers);
        let rows = on_database!(db, rows(&profiles));
        assert_eq!(rows, (PROFILES * windows) as i64, "every window stored");
        Run {
            profiles,
            seconds,
            rows_before,
            rows,
        }
    }
}

/// A window of `profile` on `host`: 60 of 600 distinct stacks (rotating
/// with the window, as hot paths do), 4 threads. Function names carry the
/// run's name, so each run stores frames and stacks of its own.
fn snapshot(run: &str, profile: Uuid, host: &str, window: usize) -> Vec<u8> {
    let mut b = SnapshotBuilder::new();
    for i in 0..STACKS_PER_WINDOW {
        let stack = (window * 7 + i * 11) % DISTINCT_STACKS;
        let frames = [
            Frame::function(format!("{run}::main")),
            Frame::function(format!("{run}::handler_{}", stack % 40)),
            Frame::function(format!("{run}::work_{stack}")),
        ];
        b.add(&frames, i as u32 % THREADS + 1, 1 + (i as u64 * 13) % 50);
    }
    for tid in 1..=THREADS {
        b.name_thread(tid, format!("worker-{tid}"));
    }
    let start = 1_700_000_000_000 + window as i64 * 10_000;
    b.build(SnapshotHeader {
        profile_id: profile,
        host: host.to_owned(),
        agent_id: "bench-agent".into(),
        sequence: window as u64,
        window_start_ms: start,
        window_end_ms: start + 10_000,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    })
    .encode()
}
