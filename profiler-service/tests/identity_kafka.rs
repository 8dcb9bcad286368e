//! The agent's identity through a real Kafka-compatible broker (Tansu).
//!
//! A heartbeat for the agent's host from "another machine" that "started
//! earlier" makes the agent give the host up (one agent per host), so only
//! agents enrolled for the host may send one: forged heartbeats (unsigned,
//! certified by another key than the api-server's, or signed by an agent
//! of another host) leave it running, and an enrolled agent of the host
//! still makes it yield. An identity given as contents in the environment
//! is used instead of the files, and an agent without a usable identity
//! does not start and says why.
//!
//! Needs the `tansu` binary (`ODP_TANSU_BIN`, `PATH` or `~/.cargo/bin`).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use odp_core::command::{generate_keypair, CommandSigner};
use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::identity::{AgentIdentity, MessageVerifier};
use odp_plumbing::signed::unix_now;
use odp_profiler_service::host_lock::EXIT_HOST_TAKEN;
use odp_profiler_service::window::unix_ms;

use support::kafka::{issue, Broker, Harness, Seen};
use support::Killed;

/// What every forged heartbeat claims: another machine, started a minute
/// before the agent, so that a believed one makes the agent yield.
const OTHER_MACHINE: &str = "another-machine";

fn heartbeat(host: &str, agent_id: &str, started_at_ms: i64) -> AgentEvent {
    AgentEvent {
        host: host.to_owned(),
        agent_id: agent_id.to_owned(),
        at_ms: unix_ms(),
        kind: AgentEventKind::Heartbeat {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            running_profiles: Vec::new(),
            plugins: vec!["native".to_owned()],
            machine_id: Some(OTHER_MACHINE.to_owned()),
            started_at_ms: Some(started_at_ms),
            labels: Default::default(),
            services: Vec::new(),
            services_digest: None,
        },
    }
}

/// Those who can write to the events topic but hold no identity for the
/// harness's host.
struct Forgers {
    /// Certified for the host, but by a key of its own making.
    self_issued: AgentIdentity,
    /// A genuine agent, of another host.
    neighbour: AgentIdentity,
}

impl Forgers {
    fn new(h: &Harness) -> Forgers {
        let (private, public) = generate_keypair().unwrap();
        let rogue = CommandSigner::from_private_pem(&private).unwrap();
        let rogue_verifier = MessageVerifier::from_public_pem(&public).unwrap();
        let (key, token) = issue(&rogue, &h.host);
        let self_issued =
            AgentIdentity::new(key, &token, &rogue_verifier, &h.host, unix_now()).unwrap();
        Forgers {
            self_issued,
            neighbour: h.identity_for("neighbour-host"),
        }
    }

    /// Three heartbeats for the harness's host: unsigned, self-issued and
    /// the neighbour's.
    async fn forge(&self, h: &Harness, started_at_ms: i64) {
        h.send_event(&heartbeat(&h.host, "forger-unsigned", started_at_ms), None)
            .await;
        let event = heartbeat(&h.host, "forger-self-issued", started_at_ms);
        h.send_event(&event, Some(&self.self_issued)).await;
        let event = heartbeat(&h.host, "forger-neighbour", started_at_ms);
        h.send_event(&event, Some(&self.neighbour)).await;
    }
}

/// Waits until `done` holds, failing at once if `agent` exits.
async fn while_running(h: &Harness, agent: &mut Killed, what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        if let Some(status) = agent.0.try_wait().unwrap() {
            panic!(
                "the agent exited ({status}) waiting for {what}:\n{}",
                h.log()
            );
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}:\n{}",
            h.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the agents of the harness's host have logged `count`
/// ignored heartbeats.
async fn ignored(h: &Harness, agent: &mut Killed, count: usize) {
    let what = format!("{count} ignored heartbeats");
    while_running(h, agent, &what, || {
        h.log().matches("heartbeat ignored").count() >= count
    })
    .await;
}

/// Waits for a heartbeat of the harness's agent sent after `after_ms`.
async fn own_heartbeat(h: &Harness, agent: &mut Killed, after_ms: i64) {
    while_running(h, agent, "a heartbeat of the agent", || {
        h.seen().iter().any(|m| {
            matches!(m, Seen::Event(e) if e.agent_id == h.agent_id && e.at_ms > after_ms
                && matches!(e.kind, AgentEventKind::Heartbeat { .. }))
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_agent_enrolled_for_the_host_makes_the_agent_yield() {
    let broker = Broker::start().await.expect("start the broker");
    let h = Harness::new(&broker, 1).await;
    let forgers = Forgers::new(&h);
    let earlier = unix_ms() - 60_000;

    // Before it starts: its start-up check reads them.
    forgers.forge(&h, earlier).await;
    let mut agent = h.spawn_agent();
    own_heartbeat(&h, &mut agent, 0).await;
    ignored(&h, &mut agent, 3).await;

    // While it runs.
    forgers.forge(&h, earlier).await;
    ignored(&h, &mut agent, 6).await;
    own_heartbeat(&h, &mut agent, unix_ms()).await;
    assert!(
        agent.0.try_wait().unwrap().is_none(),
        "the agent gave its host up to a forged heartbeat"
    );

    // An agent enrolled for this host, on another machine, started first:
    // the one-agent-per-host rule decides between enrolled agents, as
    // before.
    let sibling = h.identity_for(&h.host);
    let event = heartbeat(&h.host, "sibling", earlier);
    h.send_event(&event, Some(&sibling)).await;
    let status = support::wait_exit(&mut agent, Duration::from_secs(20));
    assert_eq!(status.code(), Some(EXIT_HOST_TAKEN.into()), "{status}");
    // A new agent of the host hears the sibling at start-up and stays off.
    let mut second = h.spawn_agent();
    let status = support::wait_exit(&mut second, Duration::from_secs(30));
    assert_eq!(status.code(), Some(EXIT_HOST_TAKEN.into()), "{status}");
    let log = h.log();
    let found = format!("agent sibling on machine {OTHER_MACHINE} serves this host id");
    for outcome in [
        format!(
            "{found} and started first; this agent yields the host {}",
            h.host
        ),
        format!(
            "{found} and started first; not starting a second agent for host {}",
            h.host
        ),
    ] {
        assert!(log.contains(&outcome), "{outcome:?} not in:\n{log}");
    }

    // The agent's own heartbeats were its own, signed.
    let (_, events) = h.assert_signed();
    assert!(events >= 2, "{events} signed events");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_in_the_environment_is_used_instead_of_the_files() {
    let broker = Broker::start().await.expect("start the broker");
    let h = Harness::new(&broker, 1).await;
    // The files hold an identity that would not do (another host's).
    let (key, token) = h.enroll("neighbour-host");
    AgentIdentity::save(&key, &token, &h.identity_dir).unwrap();
    // What a deployer passes.
    let (key, token) = h.enroll(&h.host);
    let mut command = h.agent_command(&[]);
    command
        .env("ODP_AGENT_KEY", key.to_pem())
        .env("ODP_AGENT_CERTIFICATE", &token);
    let mut agent = Killed(command.spawn().expect("start the agent"));

    own_heartbeat(&h, &mut agent, 0).await;
    let (_, events) = h.assert_signed();
    assert!(events >= 1);
    let signatures = h.signatures();
    assert!(signatures.iter().all(|s| s
        .certified
        .as_ref()
        .is_ok_and(|c| c.public_key == key.public_key())));
    support::sigterm(&agent);
    let status = support::wait_exit(&mut agent, Duration::from_secs(20));
    assert!(status.success(), "agent exit status {status}");
}

/// Started with no identity, or another host's, the agent exits at once
/// with a message that says what is wrong and how to get one.
#[test]
fn an_agent_without_a_usable_identity_does_not_start() {
    let (private, public) = generate_keypair().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("command.pub.pem");
    std::fs::write(&key, public).unwrap();
    let run = |identity_dir: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_odp-profiler-service"))
            .arg("--command-public-key")
            .arg(&key)
            .args(["--host-id", "identity-test"])
            .arg("--identity-dir")
            .arg(identity_dir)
            .env_remove("ODP_AGENT_KEY")
            .env_remove("ODP_AGENT_CERTIFICATE")
            .output()
            .expect("run the agent");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let how = |dir: &std::path::Path| {
        format!(
            "enroll it with `odpctl agents enroll identity-test --out {}` (admin), \
             start it with a token from `odpctl agents token create identity-test` \
             (--enrollment-token, with --api-url), or let the api-server deploy it",
            dir.display()
        )
    };

    let missing = dir.path().join("identity");
    let message = run(&missing);
    let problem = format!(
        "odp-profiler-service: invalid configuration: no usable identity for this agent of \
         host identity-test: the identity directory {} does not exist",
        missing.display()
    );
    assert!(message.contains(&problem), "{message}");
    assert!(message.contains(&how(&missing)), "{message}");

    let signer = CommandSigner::from_private_pem(&private).unwrap();
    let (agent_key, token) = issue(&signer, "another-host");
    AgentIdentity::save(&agent_key, &token, &missing).unwrap();
    let message = run(&missing);
    assert!(
        message.contains("is for host \"another-host\", not \"identity-test\""),
        "{message}"
    );
    assert!(message.contains(&how(&missing)), "{message}");
}
