//! What arrives on Kafka from "an agent" is believed only when an enrolled
//! agent of the host it names signed it. Each test performs an attack of
//! the security review against the real stack (broker, Postgres, the three
//! binaries) and checks that it does no harm:
//! - a forged heartbeat does not make the host's real agent exit, nor a
//!   made-up host look live;
//! - forged windows and `profile_finished` do not take over a profile that
//!   no agent acknowledged yet, nor stop a running one;
//! - a validly signed window for a profile that does not exist, or that
//!   runs on another host, is refused;
//! - a revoked identity's windows are refused, and its heartbeats do not
//!   make its host's real agent yield.
//!
//! What is refused goes to the dead-letter topic with the reason.

use std::collections::BTreeMap;
use std::time::Duration;

use odp_client::types::ProfileStatus;
use odp_core::command::{generate_keypair, CommandSigner};
use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use odp_core::identity::{issue_certificate, AgentIdentity, AgentKey, MessageVerifier};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame};
use reqwest::Method;
use serde_json::json;
use uuid::Uuid;

use crate::common::{self, Harness};

/// An identity for `host` certified by a command key that is not the
/// api-server's: what an attacker can make.
fn self_certified(host: &str) -> AgentIdentity {
    let (private, public) = generate_keypair().unwrap();
    let signer = CommandSigner::from_private_pem(&private).unwrap();
    let verifier = MessageVerifier::from_public_pem(&public).unwrap();
    let key = AgentKey::generate().unwrap();
    let now = odp_plumbing::signed::unix_now();
    let (_, token) =
        issue_certificate(&signer, host, &key.public_key(), now - 60, now + 3600).unwrap();
    AgentIdentity::new(key, &token, &verifier, host, now).unwrap()
}

fn window(profile_id: Uuid, host: &str, agent: &str, sequence: u64) -> Vec<u8> {
    let mut builder = SnapshotBuilder::new();
    builder.add(
        &[Frame::function("main"), Frame::function("forged")],
        1,
        1000,
    );
    let start = 1_790_000_000_000 + sequence as i64 * 10_000;
    builder
        .build(SnapshotHeader {
            profile_id,
            host: host.into(),
            agent_id: agent.into(),
            sequence,
            window_start_ms: start,
            window_end_ms: start + 10_000,
            event: EventKind::CpuClock,
            period: 10_101_010,
            frequency_hz: 99,
        })
        .encode()
}

fn event(host: &str, agent: &str, kind: AgentEventKind) -> Vec<u8> {
    AgentEvent {
        host: host.into(),
        agent_id: agent.into(),
        at_ms: odp_plumbing::signed::unix_now() * 1000,
        kind,
    }
    .to_json()
}

fn finished(profile_id: Uuid) -> AgentEventKind {
    AgentEventKind::ProfileFinished {
        profile_id,
        reason: FinishReason::DurationElapsed,
        snapshots: 1,
        samples: 1000,
        spooled_snapshots: 0,
        spooled_samples: 0,
    }
}

/// A heartbeat of an agent on another machine that started long ago: what
/// makes a real agent yield its host when it is believed.
fn older_agents_heartbeat(host: &str) -> Vec<u8> {
    event(
        host,
        "forger",
        AgentEventKind::Heartbeat {
            version: "0.1.0".into(),
            running_profiles: vec![],
            plugins: vec!["native".into()],
            machine_id: Some("another-machine".into()),
            started_at_ms: Some(1_000),
            labels: BTreeMap::new(),
            services: vec![],
            services_digest: None,
        },
    )
}

/// The reasons of the first `count` dead letters keyed `key`.
async fn dead_letters(h: &Harness, key: &str, count: usize) -> Vec<String> {
    common::dead_letters(h, key, count)
        .await
        .into_iter()
        .map(|letter| letter.reason)
        .collect()
}

async fn stored_snapshots(h: &Harness, profile_id: Uuid) -> i64 {
    sqlx::query_scalar("select count(*) from snapshots where profile_id = $1")
        .bind(profile_id)
        .fetch_one(&h.pool().await)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_heartbeats_neither_stop_the_real_agent_nor_make_a_host_live() {
    let mut h = common::start("wirebeat", 2).await;
    let host = h.platform.host_id.clone();
    let admin = h.platform.client();
    wait_live(&h, &host).await;

    let producer = common::producer(h.stack.kafka_bootstrap());
    let events = h.stack.topics().events.clone();
    let forged = older_agents_heartbeat(&host);
    // Unsigned; self-certified; and signed by a real agent of another host
    // but naming this one.
    common::send(&producer, &events, &host, &forged).await;
    let rogue = self_certified(&host);
    common::send_signed(&h, &producer, &rogue, &events, &host, &forged).await;
    let elsewhere = common::agent_identity(&h, "wirebeat-elsewhere");
    common::send_signed(&h, &producer, &elsewhere, &events, &host, &forged).await;
    // A made-up host, unsigned.
    let ghost = event("ghost-host", "ghost", {
        let AgentEvent { kind, .. } =
            AgentEvent::from_json(&older_agents_heartbeat("ghost-host")).unwrap();
        kind
    });
    common::send(&producer, &events, "ghost-host", &ghost).await;

    // The agent reads its host's heartbeats as they come and would yield
    // within a second or two; give it several heartbeat periods.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let agent = h.platform.agent.as_mut().expect("the harness's agent");
    assert!(
        agent.try_status().unwrap().is_none(),
        "the real agent exited on a forged heartbeat:\n{}",
        agent.log_tail(20)
    );
    let reasons = dead_letters(&h, &host, 3).await;
    assert!(
        reasons.iter().all(|r| r.starts_with("unauthenticated")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("unsigned")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("wirebeat-elsewhere")),
        "{reasons:?}"
    );
    let hosts = admin
        .request(Method::GET, "/api/v1/hosts", None)
        .await
        .unwrap();
    assert_eq!(hosts.status, 200, "{}", hosts.text);
    assert!(!hosts.text.contains("ghost-host"), "{}", hosts.text);

    // And the real agent still profiles.
    let demo = h.spawn_demo_for(30);
    let request = json!({"host": host, "pid": demo.pid(), "duration_secs": 3});
    let id = admin.start_profile(&request).await.unwrap().id;
    let ended = admin
        .wait_finished(id, Duration::from_secs(60), |_| {})
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    assert_eq!(ended.status, ProfileStatus::Finished, "{ended:?}");
    assert!(stored_snapshots(&h, id).await > 0, "{ended:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_identity_of_the_host_cannot_make_its_agent_yield() {
    let mut h = common::start("wirepeer", 2).await;
    let host = h.platform.host_id.clone();
    let admin = h.platform.client();
    wait_live(&h, &host).await;
    // An identity enrolled for this very host, then revoked: a stolen one.
    let stolen =
        odp_devstack::agent_identity::issue_identity(&h.platform.signing_key, &host, "e2e")
            .unwrap();
    odp_devstack::agent_identity::record_identity(h.stack.database_url(), &stolen.record)
        .await
        .unwrap();
    let path = format!("/api/v1/agents/identities/{}", stolen.record.id);
    let revoked = admin.request(Method::DELETE, &path, None).await.unwrap();
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    // The api-server syncs every live agent with the new revocations.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let log = common::plain_log(&h.platform.agent.as_mut().unwrap().log_tail(400));
        if log.contains("replaced") && log.contains("revoked=1") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no revocation reached the agent:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let producer = common::producer(h.stack.kafka_bootstrap());
    let events = h.stack.topics().events.clone();
    for _ in 0..4 {
        let forged = older_agents_heartbeat(&host);
        common::send_signed(&h, &producer, &stolen.identity, &events, &host, &forged).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    let agent = h.platform.agent.as_mut().expect("the harness's agent");
    assert!(
        agent.try_status().unwrap().is_none(),
        "the real agent yielded to a revoked identity:\n{}",
        agent.log_tail(30)
    );
    let why = format!("certificate {} was revoked", stolen.record.id);
    assert!(
        common::plain_log(&agent.log_tail(400)).contains(&why),
        "the agent says why it ignored the heartbeats:\n{}",
        agent.log_tail(30)
    );
}

/// Waits until the API lists `host` as live: its real agent is up.
pub(crate) async fn wait_live(h: &Harness, host: &str) {
    let admin = h.platform.client();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let hosts = admin
            .request(Method::GET, "/api/v1/hosts", None)
            .await
            .unwrap();
        let live = hosts.body["agents"].as_array().is_some_and(|list| {
            list.iter()
                .any(|entry| entry["host"] == host && entry["live"] == true)
        });
        if live {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{host} never live: {}\n{}",
            hosts.text,
            h.platform.logs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_windows_and_events_do_not_take_over_or_stop_a_profile() {
    let h = common::start("wiredata", 2).await;
    let host = h.platform.host_id.clone();
    let admin = h.platform.client();
    let producer = common::producer(h.stack.kafka_bootstrap());
    let topics = h.stack.topics().clone();

    // A profile dispatched to a host whose agent never acknowledges it.
    let request = json!({"host": "wiredata-silent", "pid": 1, "duration_secs": 60});
    let dispatched = admin.start_profile(&request).await.unwrap().id;
    let key = dispatched.to_string();
    let rogue = self_certified("wiredata-silent");
    for sign in [false, true] {
        let snapshot = window(dispatched, "wiredata-silent", "forger", u64::from(sign));
        let finish = event("wiredata-silent", "forger", finished(dispatched));
        if sign {
            common::send_signed(&h, &producer, &rogue, &topics.stacks, &key, &snapshot).await;
            common::send_signed(&h, &producer, &rogue, &topics.events, &key, &finish).await;
        } else {
            common::send(&producer, &topics.stacks, &key, &snapshot).await;
            common::send(&producer, &topics.events, &key, &finish).await;
        }
    }
    let reasons = dead_letters(&h, &key, 4).await;
    assert!(
        reasons.iter().all(|r| r.starts_with("unauthenticated")),
        "{reasons:?}"
    );
    assert_eq!(stored_snapshots(&h, dispatched).await, 0);
    let still = admin.profile(dispatched).await.unwrap();
    assert_ne!(still.status, ProfileStatus::Finished, "{still:?}");

    // A running profile of the real agent: an unsigned profile_finished
    // with its owner's agent id (which any viewer can read) is refused.
    let demo = h.spawn_demo_for(60);
    let request = json!({"host": host, "pid": demo.pid(), "duration_secs": 8});
    let running = admin.start_profile(&request).await.unwrap().id;
    let acknowledged = admin
        .wait_for_status(running, ProfileStatus::Running, Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    let owner = acknowledged
        .agent_id
        .clone()
        .expect("an owner once running");
    let running_key = running.to_string();
    let finish = event(&host, &owner, finished(running));
    common::send(&producer, &topics.events, &running_key, &finish).await;
    let reasons = dead_letters(&h, &running_key, 1).await;
    assert!(reasons[0].starts_with("unauthenticated"), "{reasons:?}");
    assert_eq!(
        admin.profile(running).await.unwrap().status,
        ProfileStatus::Running
    );
    let ended = admin
        .wait_finished(running, Duration::from_secs(60), |_| {})
        .await
        .unwrap();
    assert_eq!(ended.status, ProfileStatus::Finished, "{ended:?}");
    assert!(stored_snapshots(&h, running).await > 0, "{ended:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_signatures_speak_only_for_their_own_hosts_profiles() {
    let h = common::start_without_agent("wirehost").await;
    let admin = h.platform.client();
    let producer = common::producer(h.stack.kafka_bootstrap());
    let stacks = h.stack.topics().stacks.clone();
    let on_b = admin
        .start_profile(&json!({"host": "wirehost-b", "pid": 1, "duration_secs": 60}))
        .await
        .unwrap()
        .id;
    let agent_a = common::agent_identity(&h, "wirehost-a");

    // Host a's agent, naming host b in the window.
    let key = on_b.to_string();
    let posing = window(on_b, "wirehost-b", "a", 0);
    common::send_signed(&h, &producer, &agent_a, &stacks, &key, &posing).await;
    // Host a's agent, honest about its host, for host b's profile.
    let honest = window(on_b, "wirehost-a", "a", 1);
    common::send_signed(&h, &producer, &agent_a, &stacks, &key, &honest).await;
    let reasons = dead_letters(&h, &key, 2).await;
    assert!(reasons[0].contains("wirehost-a"), "{reasons:?}");
    assert!(
        reasons[1].contains("runs on host wirehost-b"),
        "{reasons:?}"
    );
    // A profile that does not exist.
    let unknown = Uuid::new_v4();
    let unknown_key = unknown.to_string();
    let made_up = window(unknown, "wirehost-a", "a", 0);
    common::send_signed(&h, &producer, &agent_a, &stacks, &unknown_key, &made_up).await;
    let reasons = dead_letters(&h, &unknown_key, 1).await;
    assert!(reasons[0].contains("no profile"), "{reasons:?}");

    // Host b's own agent is believed: its window is stored.
    let agent_b = common::agent_identity(&h, "wirehost-b");
    let own = window(on_b, "wirehost-b", "b", 2);
    common::send_signed(&h, &producer, &agent_b, &stacks, &key, &own).await;
    let pool = h.pool().await;
    h.wait_count(
        &pool,
        "select count(*) from snapshots where profile_id = $1::uuid",
        &key,
        1,
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(stored_snapshots(&h, on_b).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_identity_is_no_longer_believed() {
    let h = common::start_without_agent("wirerevoke").await;
    let admin = h.platform.client();
    let producer = common::producer(h.stack.kafka_bootstrap());
    let stacks = h.stack.topics().stacks.clone();
    let host = "wirerevoke-a";
    let id = admin
        .start_profile(&json!({"host": host, "pid": 1, "duration_secs": 60}))
        .await
        .unwrap()
        .id;
    let key = id.to_string();
    let issued =
        odp_devstack::agent_identity::issue_identity(&h.platform.signing_key, host, "e2e").unwrap();
    odp_devstack::agent_identity::record_identity(h.stack.database_url(), &issued.record)
        .await
        .unwrap();
    // Believed while it holds.
    let first = window(id, host, "a", 0);
    common::send_signed(&h, &producer, &issued.identity, &stacks, &key, &first).await;
    let pool = h.pool().await;
    h.wait_count(
        &pool,
        "select count(*) from snapshots where profile_id = $1::uuid",
        &key,
        1,
        Duration::from_secs(60),
    )
    .await;

    // Revoked by an admin: refused once the pipeline has heard of it.
    let path = format!("/api/v1/agents/identities/{}", issued.record.id);
    let revoked = admin.request(Method::DELETE, &path, None).await.unwrap();
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert!(revoked.body["revoked_at"].is_string(), "{}", revoked.text);
    // Windows keep coming, a new one every 2 s, until one is refused (the
    // pipeline reloads revocations every 30 s).
    // Sent from a task of its own, which cannot borrow the harness that
    // `common::send_signed` takes, so the record is built here.
    let sender = {
        let (producer, agent, stacks, key) =
            (producer.clone(), issued, stacks.clone(), key.clone());
        async move {
            for sequence in 1..60 {
                let next = window(id, host, "a", sequence);
                let signature = agent
                    .identity
                    .sign(odp_core::identity::Channel::Stacks, &next);
                producer
                    .send(
                        rdkafka::producer::FutureRecord::to(&stacks)
                            .key(&key)
                            .payload(&next)
                            .headers(odp_plumbing::signed::headers(&signature)),
                        Duration::from_secs(15),
                    )
                    .await
                    .map_err(|(e, _)| e)
                    .expect("produce");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    };
    let sending = tokio::spawn(sender);
    let reasons = dead_letters(&h, &key, 1).await;
    sending.abort();
    assert!(reasons[0].starts_with("unauthenticated"), "{reasons:?}");
    assert!(reasons[0].contains("revoked"), "{reasons:?}");
}
