//! One agent samples a host, whatever starts agents: a start racing the
//! agent's first heartbeat (the quick start's order), agents started by
//! hand on this machine or "on another machine", racing deploys; and the
//! pipeline stores a profile's samples from the agent that acknowledged it
//! only. Counts are checked against the demo's own CPU time.

use odp_client::types::ProfileStatus;
use std::time::Duration;

use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame};
use odp_devstack::{cpu_seconds, workspace_binary, ServiceProcess, TANSU_KAFKA_OPTIONS};
use reqwest::Method;
use serde_json::json;
use uuid::Uuid;

use crate::common::{self, Harness};

const HZ: u64 = 99;

/// Another agent process for the harness's host, as a second start by hand
/// (or by a deployer) would run it.
fn extra_agent(h: &Harness, name: &str, args: &[&str]) -> ServiceProcess {
    // Each with an identity of its own for the host, as a deployer or an
    // enrolment gives it: the one-agent rule decides between them.
    let identity = odp_devstack::agent_identity::issue_identity(
        &h.platform.signing_key,
        &h.platform.host_id,
        "e2e",
    )
    .unwrap();
    let mut agent =
        ServiceProcess::builder(name, workspace_binary("odp-profiler-service").unwrap());
    for (variable, value) in identity.env() {
        agent = agent.env(variable, value);
    }
    agent
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

/// The demo's CPU time, read every 50 ms while the profile runs, so the
/// CPU it used over exactly the profile's windows is known.
struct CpuTimeline {
    readings: std::sync::Arc<std::sync::Mutex<Vec<(i64, f64)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl CpuTimeline {
    fn start(pid: u32) -> CpuTimeline {
        let readings = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let readings = readings.clone();
            async move {
                while let Some(cpu) = cpu_seconds(pid) {
                    let now = chrono::Utc::now().timestamp_millis();
                    readings.lock().unwrap().push((now, cpu));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        });
        CpuTimeline { readings, task }
    }

    /// CPU seconds used between two unix-ms instants (linear between
    /// readings).
    fn between(&self, from_ms: i64, to_ms: i64) -> f64 {
        let readings = self.readings.lock().unwrap();
        let at = |t: i64| {
            let after = readings
                .partition_point(|&(ms, _)| ms < t)
                .min(readings.len() - 1);
            let before = after.saturating_sub(1);
            let ((t0, c0), (t1, c1)) = (readings[before], readings[after]);
            if t1 == t0 {
                c1
            } else {
                c0 + (c1 - c0) * ((t - t0) as f64 / (t1 - t0) as f64).clamp(0.0, 1.0)
            }
        };
        at(to_ms) - at(from_ms)
    }
}

impl Drop for CpuTimeline {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Profiles the demo for `secs` s; returns (CPU seconds the stored samples
/// stand for, agents whose snapshots were stored, the demo's CPU seconds
/// over the profile's windows).
async fn profile_demo(h: &Harness, demo: &ServiceProcess, secs: u64) -> (f64, i64, f64) {
    let client = h.platform.client();
    let timeline = CpuTimeline::start(demo.pid());
    let request = json!({"host": h.platform.host_id, "pid": demo.pid(),
                         "duration_secs": secs, "frequency_hz": HZ});
    let id = client.start_profile(&request).await.unwrap().id;
    let ended = client
        .wait_finished(id, Duration::from_secs(secs + 90), |_| {})
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    assert_eq!(
        ended.status,
        ProfileStatus::Finished,
        "{ended:?}\n{}",
        h.platform.logs()
    );
    let pool = h.pool().await;
    // Every window the agent's broker acknowledged, stored.
    let (acknowledged,): (i64,) = sqlx::query_as(
        "select (body->>'snapshots')::bigint from profile_events
         where profile_id = $1::uuid and kind = 'profile_finished'",
    )
    .bind(id)
    .fetch_one(&pool)
    .await
    .unwrap();
    let stored = "select count(*) from snapshots where profile_id = $1::uuid";
    h.wait_count(&pool, stored, id, acknowledged, Duration::from_secs(60))
        .await;
    let (sampled_secs, agents, from_ms, to_ms): (f64, i64, i64, i64) = sqlx::query_as(
        "select sum(samples::float8 * period::float8) / 1e9, count(distinct agent_id),
                (extract(epoch from min(window_start)) * 1000)::bigint,
                (extract(epoch from max(window_end)) * 1000)::bigint
         from snapshots where profile_id = $1::uuid",
    )
    .bind(id)
    .fetch_one(&pool)
    .await
    .unwrap();
    (sampled_secs, agents, timeline.between(from_ms, to_ms))
}

/// What one agent records of a single busy thread: samples × their period
/// (the agent may lower the rate to keep within its overhead budget) is
/// the thread's CPU time over the profile's windows, within 20%. Two
/// agents would record twice that. The margin is for a loaded machine:
/// with other tests on both cores the demo gets ~60% of one, and the
/// windows' bounds (stamped by the agent) and the test's CPU readings
/// (every 50 ms, when its task gets to run) drift by a few hundred ms
/// against a 4 s profile; an idle machine stays within 5%.
fn assert_one_agents_worth(sampled_secs: f64, agents: i64, cpu_secs: f64) {
    assert_eq!(agents, 1, "snapshots from {agents} agents");
    println!(
        "samples × period {sampled_secs:.2} s, demo CPU {cpu_secs:.2} s: {:.3}×",
        sampled_secs / cpu_secs
    );
    assert!(
        sampled_secs > 0.8 * cpu_secs && sampled_secs < 1.2 * cpu_secs,
        "samples × period = {sampled_secs:.2} s where the demo used {cpu_secs:.2} s of CPU"
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
    let (sampled, agents, cpu) = profile_demo(&h, &demo, 5).await;
    assert_one_agents_worth(sampled, agents, cpu);
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
    let (sampled, agents, cpu) = profile_demo(&h, &demo, 4).await;
    assert_one_agents_worth(sampled, agents, cpu);
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
    let id = c.unwrap().id;
    client
        .wait_finished(id, Duration::from_secs(90), |_| {})
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
    .bind(id)
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
    let id: Uuid = client.start_profile(&request).await.unwrap().id;
    let topics = h.stack.topics().clone();
    let producer = common::producer(h.stack.kafka_bootstrap());
    let key = id.to_string();
    let host = &h.platform.host_id;
    // Two enrolled agents of the host: both sign validly, the first to
    // send owns the profile.
    let identities = [
        ("first", common::agent_identity(&h, host)),
        ("second", common::agent_identity(&h, host)),
    ];
    for (agent, sequence, start_ms) in [
        ("first", 0, 1_000),
        ("second", 0, 1_500),
        ("first", 1, 2_000),
    ] {
        let snapshot = window(id, host, agent, sequence, start_ms).encode();
        let (_, identity) = identities.iter().find(|(name, _)| *name == agent).unwrap();
        common::send_signed(&h, &producer, identity, &topics.stacks, &key, &snapshot).await;
    }

    let letters = common::dead_letters(&h, &key, 1).await;
    let reason = &letters[0].reason;
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

fn window(
    profile_id: Uuid,
    host: &str,
    agent: &str,
    sequence: u64,
    start_ms: i64,
) -> odp_core::Snapshot {
    let mut builder = SnapshotBuilder::new();
    builder.add(&[Frame::function("main"), Frame::function("work")], 1, 10);
    builder.build(SnapshotHeader {
        profile_id,
        host: host.into(),
        agent_id: agent.into(),
        sequence,
        window_start_ms: start_ms,
        window_end_ms: start_ms + 1_000,
        event: EventKind::CpuClock,
        period: 10_101_010,
        frequency_hz: 99,
    })
}
