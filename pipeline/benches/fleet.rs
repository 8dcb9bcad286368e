//! A fleet: 1,000 simulated agents each streaming a 10 s window of their
//! profile, spread evenly over every 10 s, for several minutes, into one
//! pipeline worker (the release `odp-pipeline` binary, its own process so
//! its memory is its own). Every 10 s it prints the lag (snapshots sent but
//! not yet stored) and the worker's resident memory, then whether the lag
//! stayed bounded and the memory flat: the last third of the run against
//! the first. Each agent signs its windows with an identity of its own
//! host, as in production.
//!
//! Run by hand: `cargo bench -p odp-pipeline --bench fleet` (about 4
//! minutes; `ODP_FLEET_SECS` and `ODP_FLEET_AGENTS` change the run). Needs
//! Tansu and Postgres like the tests. Prints, asserts nothing.

mod common;

use std::time::{Duration, Instant};

use common::signing::Issuer;
use odp_core::identity::{AgentIdentity, Channel};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame};
use odp_devstack::{ServiceProcess, Stack, StackOptions};
use odp_plumbing::Topics;
use rdkafka::message::OwnedHeaders;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::ClientConfig;
use sqlx::PgPool;
use uuid::Uuid;

const WINDOW: Duration = Duration::from_secs(10);
/// Distinct stacks per service; an agent's window holds some of them.
const SERVICE_STACKS: usize = 400;
const SERVICES: usize = 20;
const STACKS_PER_WINDOW: usize = 40;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let agents = env_or("ODP_FLEET_AGENTS", 1000) as usize;
    let run_for = Duration::from_secs(env_or("ODP_FLEET_SECS", 200));
    let options =
        common::in_memory_broker(StackOptions::ephemeral().topics(Topics::with_prefix("fleet-")));
    let stack = Stack::start(options)
        .await
        .expect("start the stack (is tansu installed?)");
    let pool = stack.connect().await.unwrap();
    let profiles = running_profiles(&pool, agents).await;
    let issuer = Issuer::new();
    let identities: Vec<AgentIdentity> = (0..agents)
        .map(|agent| issuer.identity(&format!("host-{agent}")))
        .collect();
    let public_key = issuer.write_public_key(stack.state_dir());
    let worker = common::spawn_worker(&stack, "fleet", stack.database_url(), &public_key);
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", stack.kafka_bootstrap())
        .set("linger.ms", "5")
        .set("batch.num.messages", "1")
        .create()
        .unwrap();
    println!(
        "{agents} agents, one {}-s window each per {} s ({:.0} snapshots/s), for {} s",
        WINDOW.as_secs(),
        WINDOW.as_secs(),
        agents as f64 / WINDOW.as_secs_f64(),
        run_for.as_secs()
    );
    println!(
        "{:>6}  {:>8}  {:>8}  {:>6}  {:>9}",
        "t (s)", "sent", "stored", "lag", "rss (MiB)"
    );

    let started = Instant::now();
    let gap = WINDOW / agents as u32;
    let mut sent = 0u64;
    let mut samples: Vec<(u64, i64, u64)> = Vec::new();
    let mut next_report = started + WINDOW;
    'run: for window in 0.. {
        for (agent, &profile) in profiles.iter().enumerate() {
            let due = started + WINDOW * window + gap * agent as u32;
            tokio::time::sleep_until(due.into()).await;
            if started.elapsed() >= run_for {
                break 'run;
            }
            let payload = snapshot(profile, agent, window);
            let headers =
                odp_plumbing::signed::headers(&identities[agent].sign(Channel::Stacks, &payload));
            // Not awaited: agents do not wait for each other's acks.
            tokio::spawn(send(
                producer.clone(),
                stack.topics().stacks.clone(),
                profile,
                payload,
                headers,
            ));
            sent += 1;
            if Instant::now() >= next_report {
                next_report += WINDOW;
                samples.push(report(&pool, &worker, started, sent).await);
            }
        }
    }
    // Drain: the worker catches up once the agents stop.
    let drain_started = Instant::now();
    while stored(&pool).await < sent as i64 && drain_started.elapsed() < Duration::from_secs(120) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let final_sample = report(&pool, &worker, started, sent).await;
    summarize(&samples, final_sample.1, sent, drain_started.elapsed());
    drop(worker);
}

/// Profile rows for the agents, running, as the api-server would have made
/// them (issue detection then paces them like real profiles): agent `i`'s
/// on `host-{i}`.
async fn running_profiles(pool: &PgPool, agents: usize) -> Vec<Uuid> {
    let profiles: Vec<Uuid> = (0..agents).map(|_| Uuid::new_v4()).collect();
    sqlx::query(
        "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                               requested_by)
         select id, 'host-' || (n - 1), 'svc-' || ((n - 1) % $2), '{\"by\": \"pid\", \"value\": 1}',
                3600000, 99, 'running', 'fleet'
         from unnest($1::uuid[]) with ordinality as p(id, n)",
    )
    .bind(&profiles)
    .bind(SERVICES as i64)
    .execute(pool)
    .await
    .unwrap();
    profiles
}

async fn send(
    producer: FutureProducer,
    topic: String,
    profile: Uuid,
    payload: Vec<u8>,
    headers: OwnedHeaders,
) {
    let key = profile.to_string();
    let record = FutureRecord::to(&topic)
        .key(&key)
        .payload(&payload)
        .headers(headers);
    producer
        .send(record, Duration::from_secs(60))
        .await
        .map_err(|(e, _)| e)
        .expect("produce");
}

/// One agent's window: stacks of its service, shifting slowly with time
/// as real hot paths do, on 4 threads.
fn snapshot(profile: Uuid, agent: usize, window: u32) -> Vec<u8> {
    let service = agent % SERVICES;
    let mut b = SnapshotBuilder::new();
    for i in 0..STACKS_PER_WINDOW {
        let stack = (agent * 3 + window as usize + i * 9) % SERVICE_STACKS;
        let frames = [
            Frame::function(format!("svc{service}::main")),
            Frame::function(format!("svc{service}::handler_{}", stack % 25)),
            Frame::function(format!("svc{service}::work_{stack}")),
        ];
        b.add(&frames, i as u32 % 4 + 1, 1 + (i as u64 * 7) % 30);
    }
    let start = 1_700_000_000_000 + window as i64 * WINDOW.as_millis() as i64;
    b.build(SnapshotHeader {
        profile_id: profile,
        host: format!("host-{agent}"),
        agent_id: format!("agent-{agent}"),
        sequence: window as u64,
        window_start_ms: start,
        window_end_ms: start + WINDOW.as_millis() as i64,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    })
    .encode()
}

async fn stored(pool: &PgPool) -> i64 {
    sqlx::query_scalar("select count(*) from snapshots")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The worker's resident memory in KiB, from /proc.
fn rss_kib(worker: &ServiceProcess) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", worker.pid())).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Prints and returns (sent, stored, rss KiB) now.
async fn report(
    pool: &PgPool,
    worker: &ServiceProcess,
    started: Instant,
    sent: u64,
) -> (u64, i64, u64) {
    let stored = stored(pool).await;
    let rss = rss_kib(worker);
    println!(
        "{:>6.0}  {:>8}  {:>8}  {:>6}  {:>9.1}",
        started.elapsed().as_secs_f64(),
        sent,
        stored,
        sent as i64 - stored,
        rss as f64 / 1024.0
    );
    (sent, stored, rss)
}

fn summarize(samples: &[(u64, i64, u64)], stored: i64, sent: u64, drain: Duration) {
    if samples.len() < 3 {
        println!("run too short to compare thirds");
        return;
    }
    let third = samples.len() / 3;
    let mean = |s: &[(u64, i64, u64)], f: fn(&(u64, i64, u64)) -> f64| {
        s.iter().map(f).sum::<f64>() / s.len() as f64
    };
    let lag = |s: &(u64, i64, u64)| s.0 as f64 - s.1 as f64;
    let rss = |s: &(u64, i64, u64)| s.2 as f64;
    let (first, last) = (&samples[..third], &samples[samples.len() - third..]);
    let max_lag = samples.iter().map(lag).fold(0.0, f64::max);
    println!(
        "stored {stored} of {sent} snapshots; drained in {:.1} s after the agents stopped",
        drain.as_secs_f64()
    );
    println!(
        "lag: max {max_lag:.0} snapshots; mean last third / first third = {:.2}x (bounded: ~1x or less)",
        mean(last, lag) / mean(first, lag).max(1.0)
    );
    println!(
        "worker memory: mean last third / first third = {:.2}x ({:.1} → {:.1} MiB; flat: ~1x)",
        mean(last, rss) / mean(first, rss).max(1.0),
        mean(first, rss) / 1024.0,
        mean(last, rss) / 1024.0
    );
}
