//! The agent binary profiling the Python and Java test programs at once
//! through a real Kafka-compatible broker (Tansu): each start is sampled by
//! the plugin the agent detects, its start event names the runtime, its
//! snapshots rank the known hot function first, a heap-bytes start on the
//! JVM yields one class histogram, and a plugin forced onto the wrong
//! process fails only its own profile.
//!
//! Needs the `tansu` binary, py-spy and a JDK; fails with a message
//! otherwise.

mod support;

use std::time::Duration;

use odp_core::command::{CommandAction, StartProfile, UndeployMode};
use odp_core::cost::StartOptions;
use odp_core::event::{AgentEventKind, FinishReason};
use odp_core::runtime::LibraryKind;
use odp_core::{EventKind, Language, Target};
use uuid::Uuid;

use support::kafka::{Broker, Harness};
use support::{first_of, ranked_functions};

fn start(profile_id: Uuid, pid: u32) -> StartProfile {
    StartProfile {
        profile_id,
        target: Target::Pid(pid),
        duration_ms: 4_000,
        frequency_hz: 99,
        window_ms: Some(1000),
        options: StartOptions::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_profiles_python_and_java_with_their_plugins() {
    let broker = Broker::start().await.expect("start the broker");
    let h = Harness::new(&broker, 1).await;
    let python = support::start_python(60);
    let classes = support::build_java();
    let java = support::start_java(&classes, 60);
    let mut agent = h.spawn_agent();

    let py_profile = Uuid::new_v4();
    let java_profile = Uuid::new_v4();
    let wrong_plugin = Uuid::new_v4();
    h.send(
        &h.host,
        &h.command(CommandAction::Start(start(py_profile, python.id()))),
    )
    .await;
    h.send(
        &h.host,
        &h.command(CommandAction::Start(start(java_profile, java.id()))),
    )
    .await;
    // The JVM's live heap by class, asked for with the start's options.
    let heap_profile = Uuid::new_v4();
    let heap = StartProfile {
        options: StartOptions {
            event: Some(EventKind::HeapBytes),
            ..StartOptions::default()
        },
        ..start(heap_profile, java.id())
    };
    h.send(&h.host, &h.command(CommandAction::Start(heap)))
        .await;
    // The JVM plugin forced onto the Python process: refused, alone.
    let forced = StartProfile {
        options: StartOptions {
            plugin: Some(Language::Jvm),
            ..StartOptions::default()
        },
        ..start(wrong_plugin, python.id())
    };
    h.send(&h.host, &h.command(CommandAction::Start(forced)))
        .await;

    for (profile, language) in [
        (py_profile, Language::Python),
        (java_profile, Language::Jvm),
    ] {
        let started = h
            .wait_event(|k| matches!(k, AgentEventKind::ProfileStarted { profile_id, .. } if *profile_id == profile))
            .await;
        let AgentEventKind::ProfileStarted {
            event,
            language: got,
            runtime_version,
            runtime,
            ..
        } = started
        else {
            unreachable!()
        };
        assert_eq!((event, got), (EventKind::CpuClock, Some(language)));
        assert!(runtime_version.is_some(), "{language}: no version");
        // What the target runs with travels in the event: the JVM's own
        // flags; the distributions of the interpreter's prefix (the test
        // Python is a plain interpreter, whose site-packages hold pip).
        assert!(
            runtime
                .executable
                .as_ref()
                .is_some_and(|e| e.build_id.is_some()),
            "{language}"
        );
        let wanted = match language {
            Language::Jvm => runtime.flags.iter().any(|f| f.starts_with("-XX:")),
            _ => runtime
                .libraries
                .iter()
                .any(|l| l.kind == LibraryKind::Python && l.name == "pip"),
        };
        assert!(wanted, "{language}: {runtime:?}");
    }
    let failed = h
        .wait_event(|k| matches!(k, AgentEventKind::ProfileFailed { profile_id, .. } if *profile_id == wrong_plugin))
        .await;
    assert!(
        matches!(&failed, AgentEventKind::ProfileFailed { error, .. } if error.contains("JFR failed")),
        "{failed:?}"
    );

    for (profile, hot, cold) in [
        (py_profile, "crunch_numbers", "light_work"),
        (java_profile, "HotTable.fillTable", "HotTable.sumSquares"),
    ] {
        let finished = h
            .wait_event(|k| matches!(k, AgentEventKind::ProfileFinished { profile_id, .. } if *profile_id == profile))
            .await;
        let AgentEventKind::ProfileFinished {
            reason, snapshots, ..
        } = finished
        else {
            unreachable!()
        };
        assert_eq!(reason, FinishReason::DurationElapsed);
        let all = h.wait_snapshots(profile, snapshots as usize).await;
        let (ranked, total) = ranked_functions(&all);
        eprintln!(
            "{hot}: {total} samples, top {:?}",
            &ranked[..ranked.len().min(5)]
        );
        assert!(all.iter().all(|s| s.event == EventKind::CpuClock));
        assert_eq!(first_of(&ranked, &[hot, cold]), Some(hot), "{ranked:?}");
    }

    // The heap: one snapshot at the end, in bytes per class.
    let finished = h
        .wait_event(|k| matches!(k, AgentEventKind::ProfileFinished { profile_id, .. } if *profile_id == heap_profile))
        .await;
    assert!(
        matches!(
            finished,
            AgentEventKind::ProfileFinished {
                reason: FinishReason::DurationElapsed,
                snapshots: 1,
                ..
            }
        ),
        "{finished:?}"
    );
    let all = h.wait_snapshots(heap_profile, 1).await;
    let (ranked, bytes) = ranked_functions(&all);
    eprintln!(
        "heap: {bytes} bytes, top {:?}",
        &ranked[..ranked.len().min(5)]
    );
    assert_eq!(all[0].event, EventKind::HeapBytes);
    assert!(ranked.iter().any(|(class, _)| class == "java.lang.String"));

    h.send(
        &h.host,
        &h.command(CommandAction::Undeploy {
            mode: UndeployMode::Now,
        }),
    )
    .await;
    let status = support::wait_exit(&mut agent, Duration::from_secs(20));
    assert!(status.success(), "agent exit status {status}");
}
