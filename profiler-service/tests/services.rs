//! Which defined services run on the host, as the agent binary reports
//! them through a real broker (Tansu): host labels in every heartbeat, a
//! signed `sync_services` replacing the definitions, a real process listed
//! only while it runs and is defined, forged and inconsistent syncs
//! refused, and definitions kept across a restart in the state directory.
//!
//! Needs the `tansu` binary (`ODP_TANSU_BIN`, `PATH` or `~/.cargo/bin`).

mod support;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use odp_core::command::{generate_keypair, Command as OdpCommand, CommandAction, CommandSigner};
use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::service::{services_digest, ServiceDefinition, SyncServices};
use odp_core::Target;
use uuid::Uuid;

use support::kafka::{Broker, Harness, Seen};
use support::Killed;

/// The fields of a heartbeat this test looks at.
#[derive(Debug)]
struct Beat {
    /// When the agent sent it (its clock, as the events say).
    at_ms: i64,
    started_at_ms: Option<i64>,
    labels: BTreeMap<String, String>,
    services: Vec<String>,
    digest: Option<String>,
}

fn beat(event: &AgentEvent) -> Option<Beat> {
    let AgentEventKind::Heartbeat {
        started_at_ms,
        labels,
        services,
        services_digest,
        ..
    } = &event.kind
    else {
        return None;
    };
    Some(Beat {
        at_ms: event.at_ms,
        started_at_ms: *started_at_ms,
        labels: labels.clone(),
        services: services.clone(),
        digest: services_digest.clone(),
    })
}

/// The first heartbeat sent after `since_ms` that `wanted` accepts.
async fn next_beat(h: &Harness, since_ms: i64, wanted: impl Fn(&Beat) -> bool) -> Beat {
    let seen = h
        .wait(|m| {
            matches!(m, Seen::Event(e) if e.at_ms > since_ms && beat(e).is_some_and(|b| wanted(&b)))
        })
        .await;
    let Seen::Event(event) = seen else {
        unreachable!()
    };
    beat(&event).unwrap()
}

/// The rejection of a command, and when it was sent.
async fn rejected(h: &Harness, id: Uuid) -> (i64, String) {
    let seen = h
        .wait(|m| {
            matches!(m, Seen::Event(e) if matches!(&e.kind,
                AgentEventKind::CommandRejected { command_id, .. } if *command_id == Some(id)))
        })
        .await;
    match seen {
        Seen::Event(AgentEvent {
            at_ms,
            kind: AgentEventKind::CommandRejected { reason, .. },
            ..
        }) => (at_ms, reason),
        _ => unreachable!(),
    }
}

/// A copy of `sleep` under a name no other process has, so a process-name
/// target designates exactly the processes this test starts.
fn unique_sleep() -> (std::path::PathBuf, String) {
    let name = format!("svc-{}", &Uuid::new_v4().simple().to_string()[..8]);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(&name);
    let sleep = which("sleep");
    std::fs::copy(sleep, &path).expect("copy sleep");
    (path, name)
}

fn which(program: &str) -> std::path::PathBuf {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .expect("run sh");
    std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn start(binary: &Path) -> Killed {
    Killed(
        Command::new(binary)
            .arg("120")
            .spawn()
            .expect("start the process"),
    )
}

fn sync_of(services: &[(&str, Target)]) -> SyncServices {
    SyncServices::new(
        services
            .iter()
            .map(|(name, target)| ServiceDefinition {
                name: (*name).to_owned(),
                target: target.clone(),
            })
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_list_the_defined_services_that_run_here() {
    let broker = Broker::start().await.expect("start the broker");
    let h = Harness::new(&broker, 2).await;
    let state = tempfile::tempdir().unwrap();
    let (binary, name) = unique_sleep();
    let flags: Vec<&OsStr> = vec![
        OsStr::new("--state-dir"),
        state.path().as_os_str(),
        OsStr::new("--label"),
        OsStr::new("zone=eu-1"),
        OsStr::new("--label"),
        OsStr::new("version=1.2.3"),
    ];
    // The process runs before the agent starts, but no service names it.
    let mut process = Some(start(&binary));
    let mut agent = h.spawn_agent_with(&flags);

    let empty = services_digest(&[]);
    let first = next_beat(&h, 0, |_| true).await;
    assert_eq!(first.digest.as_deref(), Some(empty.as_str()));
    assert!(first.services.is_empty(), "{first:?}");
    assert_eq!(first.labels["zone"], "eu-1");
    assert_eq!(first.labels["version"], "1.2.3");
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(first.labels["kernel"], release.trim());
    assert!(first.labels["cores"].parse::<u32>().unwrap() >= 1);
    assert!(first.labels.contains_key("arch"));
    if cfg!(target_arch = "x86_64") {
        assert!(first.labels.contains_key("cpu_model"), "{:?}", first.labels);
    }
    eprintln!("labels: {:?}", first.labels);

    // Defined: listed, and only it (the other definition matches nothing).
    let sync = sync_of(&[
        ("sleeper", Target::ProcessName(name.clone())),
        (
            "nobody",
            Target::CommandLine(format!("{name}-never-started")),
        ),
    ]);
    h.send(
        &h.host,
        &h.command(CommandAction::SyncServices(sync.clone())),
    )
    .await;
    let synced = next_beat(&h, first.at_ms, |b| {
        b.digest.as_deref() == Some(sync.digest.as_str())
    })
    .await;
    assert_eq!(synced.services, ["sleeper"]);
    let kept = state.path().join("services.json");
    assert!(kept.exists(), "definitions kept in the state directory");

    // Forged, expired and inconsistent syncs are refused and change nothing.
    let (forger_key, _) = generate_keypair().unwrap();
    let forger = CommandSigner::from_private_pem(&forger_key).unwrap();
    let now = odp_profiler_service::window::unix_ms() / 1000;
    let command = |action: CommandAction, expires_at: i64| OdpCommand {
        id: Uuid::new_v4(),
        host: h.host.clone(),
        issued_at: now - 600,
        expires_at,
        action,
    };
    let wipe = CommandAction::SyncServices(sync_of(&[]));
    let forged = command(wipe.clone(), now + 300);
    h.send(&h.host, &forger.sign(&forged).unwrap()).await;
    let (_, reason) = rejected(&h, forged.id).await;
    eprintln!("forged sync: {reason}");
    let expired = command(wipe, now - 300);
    h.send(&h.host, &h.sign(&expired)).await;
    let (_, reason) = rejected(&h, expired.id).await;
    assert!(reason.contains("expired"), "{reason}");
    let mut lying = sync_of(&[]);
    lying.digest = sync.digest.clone();
    let lie = command(CommandAction::SyncServices(lying), now + 300);
    h.send(&h.host, &h.sign(&lie)).await;
    let (refused_at, reason) = rejected(&h, lie.id).await;
    assert!(reason.contains("digest"), "{reason}");
    let after = next_beat(&h, refused_at, |_| true).await;
    assert_eq!(after.digest.as_deref(), Some(sync.digest.as_str()));
    assert_eq!(after.services, ["sleeper"]);

    // Restarted over the same state directory: the first heartbeat of the
    // new agent already lists the service, with no new sync.
    support::sigterm(&agent);
    let status = support::wait_exit(&mut agent, Duration::from_secs(20));
    assert!(status.success(), "agent exit status {status}");
    let mut agent = h.spawn_agent_with(&flags);
    let restarted = next_beat(&h, after.at_ms, |b| b.started_at_ms != after.started_at_ms).await;
    assert_eq!(restarted.digest.as_deref(), Some(sync.digest.as_str()));
    assert_eq!(restarted.services, ["sleeper"]);

    // The process gone: no longer listed, still defined.
    drop(process.take());
    let gone = next_beat(&h, restarted.at_ms, |b| b.services.is_empty()).await;
    assert_eq!(gone.digest.as_deref(), Some(sync.digest.as_str()));

    // Synced to no definitions (the process back): nothing listed.
    let _process = start(&binary);
    let back = next_beat(&h, gone.at_ms, |b| !b.services.is_empty()).await;
    assert_eq!(back.services, ["sleeper"]);
    h.send(
        &h.host,
        &h.command(CommandAction::SyncServices(sync_of(&[]))),
    )
    .await;
    let cleared = next_beat(&h, back.at_ms, |b| {
        b.digest.as_deref() == Some(empty.as_str())
    })
    .await;
    assert!(cleared.services.is_empty(), "{cleared:?}");

    support::sigterm(&agent);
    let status = support::wait_exit(&mut agent, Duration::from_secs(20));
    assert!(status.success(), "agent exit status {status}");
    let (_, events) = h.assert_signed();
    assert!(events >= 5, "{events} signed events");
    let _ = std::fs::remove_file(binary);
}

/// Bad labels stop the agent at start-up with a message naming the label,
/// from the flag or from `ODP_LABELS`.
#[test]
fn bad_labels_fail_start_up_clearly() {
    let (_, public) = generate_keypair().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("command.pub.pem");
    std::fs::write(&key, public).unwrap();
    let run = |args: &[&str], env: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_odp-profiler-service"));
        command
            .arg("--command-public-key")
            .arg(&key)
            .args(["--host-id", "labels-test"])
            .args(args)
            .env_remove("ODP_LABELS");
        if let Some(labels) = env {
            command.env("ODP_LABELS", labels);
        }
        let out = command.output().expect("run the agent");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let message = run(&[], Some("zone=eu-1,kernel=5.0"));
    assert!(
        message.contains("--label: label \"kernel\" is discovered by the agent"),
        "{message}"
    );
    let message = run(&["--label", "Zone=eu-1"], None);
    assert!(message.contains("label key \"Zone\""), "{message}");
    let message = run(&["--label", "zone"], None);
    assert!(message.contains("\"zone\" is not KEY=VALUE"), "{message}");
}
