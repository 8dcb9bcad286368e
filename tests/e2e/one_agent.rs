//! One agent samples a host, whatever starts agents: a start racing the
//! agent's first heartbeat (the quick start's order), agents started by
//! hand on this machine or "on another machine", racing deploys; and the
//! pipeline stores a profile's samples from the agent that acknowledged it
//! only. Counts are checked against the demo's own CPU time.

use std::time::Duration;

use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame};
use odp_devstack::{cpu_seconds, workspace_binary, ServiceProcess, TANSU_KAFKA_OPTIONS};
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::{Headers, Message};
use reqwest::Method;
use serde_json::json;
use uuid::Uuid;

use crate::common::{self, Harness};

const HZ: u64 = 99;

/// Another agent process for the harness's host, as a second start by hand
/// (or by a deployer) would run it.
fn extra_agent(h: &Harness, name: &str, args: &[&str]) -> ServiceProcess {
    ServiceProcess::builder(name, workspace_binary("odp-profiler-service").unwrap())
        .args(["--kafka-bootstrap", h.stack.kafka_bootstrap()])
        .args(h.stack.topics().cli_args())
        .args(["--host-id", &h.platform.host_id])
        .arg("--command-public-key")
        .arg(&h.platform.public_key)
        .args(["--heartbeat-secs", "2"])
        .args(args.iter().copied())
        .env("ODP_KAFKA_OPTIONS", TANSU_KAFKA_OPTIONS)
        .log_dir(h.stack.log_dir())
        .spawn()
        .unwrap()
}

/// Waits for `agent` to exit; returns its exit code.
async fn exit_code(agent: &mut ServiceProcess, timeout: Duration) -> i32 {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(status) = agent.try_status().unwrap() {
            return status.code().unwrap_or(-1);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} still runs:\n{}",
            agent.name(),
            agent.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Profiles the demo for `secs` s and returns (samples stored, agents
/// whose snapshots were stored, the demo's CPU seconds meanwhile).
async fn profile_demo(h: &Harness, demo: &ServiceProcess, secs: u64) -> (i64, i64, f64) {
    let client = h.platform.client();
    let request = json!({"host": h.platform.host_id, "pid": demo.pid(),
                         "duration_secs": secs, "frequency_hz": HZ});
    let id = client.start_profile(&request).await.unwrap();
    client
        .wait_for_status(&id, "running", Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    let cpu_before = cpu_seconds(demo.pid()).unwrap();
    let ended = client
        .wait_finished(&id, Duration::from_secs(secs + 60), |_| {})
        .await
        .unwrap();
    let cpu = cpu_seconds(demo.pid()).unwrap() - cpu_before;
    assert_eq!(
        ended["status"],
        "finished",
        "{ended}\n{}",
        h.platform.logs()
    );
    let pool = h.pool().await;
    // The last window lands a moment after the profile ends.
    let mut last = (-1, 0);
    for _ in 0..40 {
        let counts: (i64, i64) = sqlx::query_as(
            "select coalesce(sum(samples), 0)::bigint, count(distinct agent_id)
             from snapshots where profile_id = $1::uuid",
        )
        .bind(&id)
        .fetch_one(&pool)
        .await
        .unwrap();
        if counts == last && counts.0 > 0 {
            break;
        }
        last = counts;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    (last.0, last.1, cpu)
}

/// The samples one agent takes of a single busy thread: its CPU time ×
/// the rate, within 15% (windows cut at the profile's edges, scheduling).
fn assert_one_agents_worth(samples: i64, agents: i64, cpu_secs: f64) {
    let expected = cpu_secs * HZ as f64;
    assert_eq!(agents, 1, "snapshots from {agents} agents");
    assert!(
        (samples as f64) > 0.85 * expected && (samples as f64) < 1.15 * expected,
        "{samples} samples where one agent takes about {expected:.0} ({cpu_secs:.2} s of CPU × {HZ} Hz)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_racing_the_agents_first_heartbeat_is_sampled_once() {
    // The quick start's order: an agent started, a deployer configured,
    // and a profile started before the pipeline stored any heartbeat.
    let h = common::start_configured("race", |options| {
        options.local_deployer = true;
        options.window_secs = 1;
    })
    .await;
    let demo = h.spawn_demo();
    let (samples, agents, cpu) = profile_demo(&h, &demo, 5).await;
    assert_one_agents_worth(samples, agents, cpu);
    let pool = h.pool().await;
    let (heartbeating,): (i64,) =
        sqlx::query_as("select count(distinct agent_id) from agents where host = $1")
            .bind(&h.platform.host_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(heartbeating, 1, "{}", h.platform.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_agent_of_a_host_exits_here_and_on_another_machine() {
    let h = common::start("second-agent", 1).await;
    // Wait until the first agent heartbeats, so the one "on another
    // machine" has something to find.
    let pool = h.pool().await;
    h.wait_count(
        &pool,
        "select count(*) from agents where host = $1",
        &h.platform.host_id,
        1,
        Duration::from_secs(60),
    )
    .await;

    let mut same_machine = extra_agent(&h, "agent-by-hand", &[]);
    assert_eq!(
        exit_code(&mut same_machine, Duration::from_secs(30)).await,
        3
    );
    let said = same_machine.log_tail(5);
    assert!(said.contains("already serves host"), "{said}");

    let lock_dir = tempfile::tempdir().unwrap();
    let lock_dir = lock_dir.path().to_str().unwrap().to_owned();
    let mut elsewhere = extra_agent(
        &h,
        "agent-elsewhere",
        &["--lock-dir", &lock_dir, "--machine-id", "another-machine"],
    );
    assert_eq!(exit_code(&mut elsewhere, Duration::from_secs(60)).await, 3);
    let said = elsewhere.log_tail(5);
    assert!(said.contains("started first"), "{said}");

    let demo = h.spawn_demo();
    let (samples, agents, cpu) = profile_demo(&h, &demo, 4).await;
    assert_one_agents_worth(samples, agents, cpu);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_deploys_and_starts_leave_one_agent() {
    let h = common::start_configured("deploy-race", |options| {
        options.with_agent = false;
        options.local_deployer = true;
        options.window_secs = 1;
    })
    .await;
    let client = h.platform.client();
    let path = format!("/api/v1/hosts/{}/deploy", h.platform.host_id);
    let demo = h.spawn_demo();
    let start = json!({"host": h.platform.host_id, "pid": demo.pid(), "duration_secs": 3,
                       "frequency_hz": HZ});
    let (a, b, c, d) = tokio::join!(
        client.request(Method::POST, &path, None),
        client.request(Method::POST, &path, None),
        client.start_profile(&start),
        client.request(Method::POST, &path, None),
    );
    for reply in [a, b, d] {
        let reply = reply.unwrap();
        assert!(matches!(reply.status, 200 | 202), "{}", reply.text);
    }
    let id = c.unwrap();
    client
        .wait_finished(&id, Duration::from_secs(90), |_| {})
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    // Agents heartbeat every 2 s; give any second one time to show up.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let pool = h.pool().await;
    let (heartbeating, sampling): (i64, i64) = sqlx::query_as(
        "select (select count(distinct agent_id) from agents where host = $1),
                (select count(distinct agent_id) from snapshots where profile_id = $2::uuid)",
    )
    .bind(&h.platform.host_id)
    .bind(&id)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((heartbeating, sampling), (1, 1), "{}", h.platform.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_stores_only_the_samples_of_the_agent_that_acknowledged_it() {
    let h = common::start_without_agent("owner").await;
    let client = h.platform.client();
    let request = json!({"host": h.platform.host_id, "pid": 1, "duration_secs": 60});
    let id: Uuid = client
        .start_profile(&request)
        .await
        .unwrap()
        .parse()
        .unwrap();
    let topics = h.stack.topics().clone();
    let producer = common::producer(h.stack.kafka_bootstrap());
    let key = id.to_string();
    for (agent, sequence, start_ms) in [
        ("first", 0, 1_000),
        ("second", 0, 1_500),
        ("first", 1, 2_000),
    ] {
        let snapshot = window(id, agent, sequence, start_ms).encode();
        common::send(&producer, &topics.stacks, &key, &snapshot).await;
    }

    let consumer: StreamConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", h.stack.kafka_bootstrap())
        .set("group.id", format!("test-{}", Uuid::new_v4()))
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    consumer.subscribe(&[&topics.dead_letter]).unwrap();
    let message = tokio::time::timeout(Duration::from_secs(60), consumer.recv())
        .await
        .unwrap_or_else(|_| panic!("no dead letter\n{}", h.platform.logs()))
        .unwrap();
    let reason = message
        .headers()
        .and_then(|headers| headers.iter().find(|h| h.key == "odp-reason"))
        .and_then(|h| h.value)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .expect("a reason header");
    assert!(
        reason.contains("belongs to agent first") && reason.contains("from agent second"),
        "{reason}"
    );

    let pool = h.pool().await;
    h.wait_count(
        &pool,
        "select count(*) from snapshots where profile_id = $1::uuid",
        &key,
        2,
        Duration::from_secs(30),
    )
    .await;
    let stored: Vec<(String, i64)> = sqlx::query_as(
        "select agent_id, sequence from snapshots where profile_id = $1 order by sequence",
    )
    .bind(id)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(stored, [("first".into(), 0), ("first".into(), 1)]);
    let (owner,): (Option<String>,) = sqlx::query_as("select agent_id from profiles where id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(owner.as_deref(), Some("first"));
}

fn window(profile_id: Uuid, agent: &str, sequence: u64, start_ms: i64) -> odp_core::Snapshot {
    let mut builder = SnapshotBuilder::new();
    builder.add(&[Frame::function("main"), Frame::function("work")], 1, 10);
    builder.build(SnapshotHeader {
        profile_id,
        host: "owner-host".into(),
        agent_id: agent.into(),
        sequence,
        window_start_ms: start_ms,
        window_end_ms: start_ms + 1_000,
        event: EventKind::CpuClock,
        period: 10_101_010,
        frequency_hz: 99,
    })
}
