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
#[path = "common/paced.rs"]
mod paced;

use std::time::Duration;

use common::signing::Issuer;
use odp_core::identity::{AgentIdentity, Channel};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame};
use odp_devstack::{Stack, StackOptions};
use odp_plumbing::Topics;
use paced::{env_or, Message, Paced, WINDOW};
use rdkafka::producer::FutureProducer;
use rdkafka::ClientConfig;
use sqlx::PgPool;
use uuid::Uuid;

/// Distinct stacks per service; an agent's window holds some of them.
const SERVICE_STACKS: usize = 400;
const SERVICES: usize = 20;
const STACKS_PER_WINDOW: usize = 40;

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
    let paced = Paced {
        pool: &pool,
        worker: &worker,
        producer: &producer,
        topic: &stack.topics().stacks,
        agents,
        run_for,
        stored_before: 0,
    };
    paced
        .run(|agent, window| {
            let profile = profiles[agent];
            let payload = snapshot(profile, agent, window);
            let headers =
                odp_plumbing::signed::headers(&identities[agent].sign(Channel::Stacks, &payload));
            Message {
                key: profile.to_string(),
                payload,
                headers,
            }
        })
        .await;
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
