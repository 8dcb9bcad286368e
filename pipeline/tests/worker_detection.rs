//! The worker evaluates the profiles a batch touched: a snapshot sent to
//! Kafka ends up as a detection, a `profile_finished` event re-runs the
//! evaluation, and the runtime a `profile_started` event reports is what
//! library-version rules read.

mod support;

use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use odp_core::identity::Channel;
use odp_core::runtime::LibraryKind;
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Language};
use support::harness::{eventually, Harness};
use support::signing::Signing;
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_windows_and_finished_profiles_are_evaluated() {
    let h = Harness::start("t", |_| {}).await;
    let pool = &h.pool;
    let agent = h.issuer.identity("h-1");

    let id = Uuid::new_v4();
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by)
         values ($1, 'h-1', '{\"by\": \"pid\", \"value\": 7}', 60000, 99, 'running', 'test')",
    )
    .bind(id)
    .execute(pool)
    .await
    .unwrap();
    let mut b = SnapshotBuilder::new();
    let hot = [
        Frame::function("main"),
        Frame::function("java.util.Hashtable.get"),
    ];
    b.add(&hot, 1, 40);
    b.add(&[Frame::function("main")], 1, 60);
    let snapshot = b.build(SnapshotHeader {
        profile_id: id,
        host: "h-1".into(),
        agent_id: "agent".into(),
        sequence: 0,
        window_start_ms: 1_700_000_000_000,
        window_end_ms: 1_700_000_010_000,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    });
    let agent = Signing::By(&agent);
    h.send(Channel::Stacks, &id.to_string(), agent, &snapshot.encode())
        .await;
    eventually(
        pool,
        "select count(*) from detections where profile_id = $1 and rule_id = 'jvm-hashtable'",
        id,
    )
    .await;

    let finished = AgentEvent {
        host: "h-1".into(),
        agent_id: "agent".into(),
        at_ms: 1_700_000_020_000,
        kind: AgentEventKind::ProfileFinished {
            profile_id: id,
            reason: FinishReason::DurationElapsed,
            snapshots: 1,
            samples: 100,
            spooled_snapshots: 0,
            spooled_samples: 0,
        },
    };
    h.send(Channel::Events, "h-1", agent, &finished.to_json())
        .await;
    // The evaluation on finish updates the same row.
    eventually(
        pool,
        "select count(*) from detections
         where profile_id = $1 and last_evaluated_at > first_evaluated_at",
        id,
    )
    .await;
    let issues = odp_store::profile_issues(pool, id).await.unwrap();
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].share, 40.0);

    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libraries_reported_in_profile_started_are_evaluated() {
    let h = Harness::start("r", |config| config.detect_interval_secs = 1).await;
    let pool = &h.pool;
    let agent = h.issuer.identity("h-1");

    let id = Uuid::new_v4();
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by)
         values ($1, 'h-1', '{\"by\": \"process_name\", \"value\": \"billing\"}', 60000, 99,
                 'dispatched', 'test')",
    )
    .bind(id)
    .execute(pool)
    .await
    .unwrap();
    // The agent reports its runtime as the profile starts, then windows.
    let started = support::profile_started(
        id,
        Language::Jvm,
        "1.8.0_392",
        &["-Xmx2g"],
        &[(LibraryKind::Jar, "log4j", "1.2.17")],
    );
    h.send(
        Channel::Events,
        "h-1",
        Signing::By(&agent),
        &started.to_json(),
    )
    .await;
    eventually(
        pool,
        "select count(*) from profile_events where profile_id = $1 and kind = 'profile_started'",
        id,
    )
    .await;
    let window = support::snapshot(id, 0, &[(&["main", "work"], 100)]);
    let window = window.encode();
    h.send(
        Channel::Stacks,
        &id.to_string(),
        Signing::By(&agent),
        &window,
    )
    .await;
    eventually(
        pool,
        "select count(*) from detections
         where profile_id = $1 and rule_id = 'jvm-log4j1-library'",
        id,
    )
    .await;
    let issues = odp_store::profile_issues(pool, id).await.unwrap();
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!((issues[0].share, issues[0].samples_total), (100.0, 100));
    assert_eq!(issues[0].detail["libraries"][0]["version"], "1.2.17");

    h.stop().await;
}
