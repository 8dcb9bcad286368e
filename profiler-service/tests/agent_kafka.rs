//! The agent binary against a real Kafka-compatible broker (Tansu): signed
//! commands in on its own partition, snapshots and events out, stop,
//! undeploy, committed offsets across a restart, and SIGTERM; every
//! snapshot and event signed by the agent's identity.
//!
//! Needs the `tansu` binary (`ODP_TANSU_BIN`, `PATH` or `~/.cargo/bin`) and
//! perf_event access (root here and in CI); fails with a message otherwise.

mod support;

use std::time::Duration;

use odp_core::command::{CommandAction, StartProfile, UndeployMode};
use odp_core::event::{AgentEventKind, FinishReason};
use odp_core::partition::partition_for_key;
use odp_core::{EventKind, Snapshot, Target};
use uuid::Uuid;

use support::kafka::{Broker, Harness, Seen};

const COMMAND_PARTITIONS: i32 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_serves_commands_through_kafka() {
    let broker = Broker::start().await.expect("start the broker");
    let h = Harness::new(&broker, COMMAND_PARTITIONS).await;
    let burner = support::spawn_burner("burn-kafka");
    let pid = burner.id();

    let mut agent = h.spawn_agent();

    // A garbage message under our key: rejected, reported, dead-lettered.
    h.send_raw(&h.host, b"definitely not a JWS").await;
    let rejected = h
        .wait_event(|k| {
            matches!(
                k,
                AgentEventKind::CommandRejected {
                    command_id: None,
                    ..
                }
            )
        })
        .await;
    assert!(
        matches!(rejected, AgentEventKind::CommandRejected { reason, .. } if reason.contains("signature"))
    );
    let dead = h.wait(|m| matches!(m, Seen::DeadLetter { .. })).await;
    let Seen::DeadLetter {
        key,
        payload,
        reason,
    } = dead
    else {
        unreachable!()
    };
    assert_eq!(key.as_deref(), Some(h.host.as_bytes()));
    assert_eq!(payload.as_deref(), Some(&b"definitely not a JWS"[..]));
    assert!(reason.is_some());

    // Another host that shares our partition: its (valid) command must be
    // neither run nor rejected by us.
    let neighbour = (0..)
        .map(|i| format!("neighbour-{i}"))
        .find(|n| {
            partition_for_key(n.as_bytes(), COMMAND_PARTITIONS as u32)
                == partition_for_key(h.host.as_bytes(), COMMAND_PARTITIONS as u32)
        })
        .unwrap();
    let foreign_profile = Uuid::new_v4();
    let foreign = h.command_for(
        &neighbour,
        CommandAction::Start(start(foreign_profile, pid)),
    );
    h.send(&neighbour, &foreign).await;

    // Our own start.
    let profile_id = Uuid::new_v4();
    h.send(
        &h.host,
        &h.command(CommandAction::Start(start(profile_id, pid))),
    )
    .await;
    let started = h
        .wait_event(|k| matches!(k, AgentEventKind::ProfileStarted { .. }))
        .await;
    let AgentEventKind::ProfileStarted {
        profile_id: got,
        event,
        frequency_hz,
        pids,
        language,
        ..
    } = started
    else {
        unreachable!()
    };
    assert_eq!((got, frequency_hz, pids), (profile_id, 199, vec![pid]));
    // The C burner is detected as native code.
    assert_eq!(language, Some(odp_core::Language::Native));
    eprintln!("profile started with event {event}");
    assert!(matches!(event, EventKind::Cycles | EventKind::CpuClock));

    // Two one-second windows arrive, decodable and labelled.
    let mut snapshots = Vec::new();
    while snapshots.len() < 2 {
        if let Seen::Stacks { key, snapshot } = h.wait(|m| matches!(m, Seen::Stacks { .. })).await {
            assert_eq!(key, profile_id.to_string());
            snapshots.push(snapshot);
        }
    }
    for (i, s) in snapshots.iter().enumerate() {
        assert_eq!(
            (s.profile_id, s.sequence, s.event),
            (profile_id, i as u64, event)
        );
        assert_eq!(
            (s.host.as_str(), s.agent_id.as_str()),
            (h.host.as_str(), h.agent_id.as_str())
        );
        assert!(s.total_samples() > 0);
        assert!(s.frames.iter().any(|f| f.function == "burn_hot"));
    }

    // A heartbeat names the running profile.
    h.wait_event(|k| {
        matches!(k, AgentEventKind::Heartbeat { running_profiles, plugins, .. }
            if running_profiles.contains(&profile_id) && plugins == &["native", "python", "jvm"])
    })
    .await;

    // Stop: the last partial window is flushed and the counts add up.
    h.send(&h.host, &h.command(CommandAction::Stop { profile_id }))
        .await;
    let finished = h
        .wait_event(|k| matches!(k, AgentEventKind::ProfileFinished { .. }))
        .await;
    let AgentEventKind::ProfileFinished {
        reason,
        snapshots: sent,
        samples,
        ..
    } = finished
    else {
        unreachable!()
    };
    assert_eq!(reason, FinishReason::Stopped);
    let all = h.wait_snapshots(profile_id, sent as usize).await;
    assert_eq!(all.len() as u64, sent);
    assert!(all.iter().enumerate().all(|(i, s)| s.sequence == i as u64));
    assert_eq!(
        all.iter().map(Snapshot::total_samples).sum::<u64>(),
        samples
    );

    // Undeploy now: the agent exits cleanly.
    h.send(
        &h.host,
        &h.command(CommandAction::Undeploy {
            mode: UndeployMode::Now,
        }),
    )
    .await;
    let status = support::wait_exit(&mut agent, Duration::from_secs(20));
    assert!(status.success(), "agent exit status {status}");
    assert!(
        !h.seen()
            .iter()
            .any(|m| matches!(m, Seen::Event(e) if e.profile_id() == Some(foreign_profile))),
        "the neighbour's command was acted on"
    );

    // Restarted, the agent resumes after its committed offset (it does not
    // undeploy again) and SIGTERM stops its profile cleanly.
    let mut agent = h.spawn_agent();
    let second = Uuid::new_v4();
    h.send(
        &h.host,
        &h.command(CommandAction::Start(start(second, pid))),
    )
    .await;
    h.wait_event(
        |k| matches!(k, AgentEventKind::ProfileStarted { profile_id, .. } if *profile_id == second),
    )
    .await;
    support::sigterm(&agent);
    let finished = h
        .wait_event(|k| matches!(k, AgentEventKind::ProfileFinished { profile_id, .. } if *profile_id == second))
        .await;
    assert!(matches!(
        finished,
        AgentEventKind::ProfileFinished {
            reason: FinishReason::Stopped,
            snapshots: 1..,
            ..
        }
    ));
    let status = support::wait_exit(&mut agent, Duration::from_secs(20));
    assert!(status.success(), "agent exit status {status}");

    // A missing target fails the profile; draining refuses new starts and
    // exits once the running profile's duration is over.
    let mut agent = h.spawn_agent();
    let missing = Uuid::new_v4();
    // Cost-control options are validated: a bad one refuses the start.
    let bad_options = Uuid::new_v4();
    let mut bad = start(bad_options, pid);
    bad.options.fsp_share = Some(1.5);
    h.send(&h.host, &h.command(CommandAction::Start(bad))).await;
    let rejected = h
        .wait_event(|k| matches!(k, AgentEventKind::CommandRejected { profile_id: Some(p), .. } if *p == bad_options))
        .await;
    assert!(
        matches!(rejected, AgentEventKind::CommandRejected { reason, .. } if reason.contains("fsp_share"))
    );

    let mut nothing = start(missing, pid);
    nothing.target = Target::ProcessName("no-such-process-odp".into());
    h.send(&h.host, &h.command(CommandAction::Start(nothing)))
        .await;
    let failed = h
        .wait_event(|k| matches!(k, AgentEventKind::ProfileFailed { profile_id, .. } if *profile_id == missing))
        .await;
    assert!(
        matches!(failed, AgentEventKind::ProfileFailed { error, .. } if error.contains("no process matches"))
    );

    let short = Uuid::new_v4();
    let mut brief = start(short, pid);
    brief.duration_ms = 2000;
    h.send(&h.host, &h.command(CommandAction::Start(brief)))
        .await;
    h.send(
        &h.host,
        &h.command(CommandAction::Undeploy {
            mode: UndeployMode::Drain,
        }),
    )
    .await;
    let refused = Uuid::new_v4();
    h.send(
        &h.host,
        &h.command(CommandAction::Start(start(refused, pid))),
    )
    .await;
    let rejected = h
        .wait_event(|k| matches!(k, AgentEventKind::CommandRejected { profile_id: Some(p), .. } if *p == refused))
        .await;
    assert!(
        matches!(rejected, AgentEventKind::CommandRejected { reason, .. } if reason.contains("draining"))
    );
    let finished = h
        .wait_event(|k| matches!(k, AgentEventKind::ProfileFinished { profile_id, .. } if *profile_id == short))
        .await;
    assert!(matches!(
        finished,
        AgentEventKind::ProfileFinished {
            reason: FinishReason::DurationElapsed,
            snapshots: 1..,
            ..
        }
    ));
    let status = support::wait_exit(&mut agent, Duration::from_secs(20));
    assert!(status.success(), "agent exit status {status}");

    // Everything the agent published carries its certificate and a
    // signature that verify with the api-server's key and name its host.
    let (snapshots, events) = h.assert_signed();
    eprintln!("signed: {snapshots} snapshots, {events} events");
    assert!(
        snapshots >= 4 && events >= 10,
        "{snapshots} snapshots, {events} events"
    );
}

fn start(profile_id: Uuid, pid: u32) -> StartProfile {
    StartProfile {
        profile_id,
        target: Target::Pid(pid),
        duration_ms: 60_000,
        frequency_hz: 199,
        window_ms: Some(1000),
        options: Default::default(),
    }
}
