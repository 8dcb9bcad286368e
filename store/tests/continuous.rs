//! Continuous profiles, one behaviour suite run on a real Postgres and a
//! real MariaDB: one configuration per service, changed and turned off;
//! the enabled ones as agents are sent them; and each host's hourly
//! segment opened once, as a running profile beside an on-demand profile
//! of the same process; and a segment's baselines (earlier weeks, the
//! release before).

use std::time::Duration;

use odp_core::continuous::{segment_profile_id, segment_start, ContinuousAssignment, SEGMENT_SECS};
use odp_core::cost::StartOptions;
use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use odp_core::{EventKind, ProfileStatus, Target};
use odp_store::{record_agent_event, store_snapshots, Configuration as _};
use odp_store::{
    ContinuousPatch, ContinuousProfiles, Database, Inserted, NewContinuous, NewProfile, NewService,
    ProfileMode, Profiles, Segment, Services, StoreError, CONTINUOUS_LABEL,
};
use uuid::Uuid;

mod support;
use support::on_both_backends;

fn now_s() -> i64 {
    chrono::Utc::now().timestamp()
}

fn checkout_service() -> NewService {
    NewService {
        name: "checkout".into(),
        target: Target::ProcessName("checkout".into()),
        owner_team: None,
        description: None,
        created_by: "alice".into(),
    }
}

fn always(service: &str) -> NewContinuous {
    NewContinuous {
        service: service.into(),
        event: EventKind::CpuClock,
        frequency_hz: 19,
        cpu_budget_ppm: 5_000,
        hosts: None,
        created_by: "alice".into(),
    }
}

async fn a_service_has_one_configuration_changed_and_turned_off(db: Database) {
    Services::new(db.clone())
        .create(&checkout_service())
        .await
        .unwrap();
    let continuous = ContinuousProfiles::new(db.clone());
    let created = continuous.create(&always("checkout")).await.unwrap();
    assert_eq!(
        (
            created.frequency_hz,
            created.cpu_budget_ppm,
            created.enabled
        ),
        (19, 5_000, true)
    );
    assert_eq!(created.hosts, None);
    let again = continuous.create(&always("checkout")).await.unwrap_err();
    assert!(
        matches!(&again, StoreError::Conflict(m) if m.contains("checkout")),
        "{again}"
    );
    assert_eq!(
        continuous.assignments().await.unwrap(),
        [created.assignment()]
    );

    let patch = ContinuousPatch {
        frequency_hz: Some(49),
        hosts: Some(Some(vec!["web-1".into(), "web-2".into()])),
        ..ContinuousPatch::default()
    };
    let changed = continuous
        .update(created.id, &patch, "bob")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed.frequency_hz, 49);
    assert_eq!(changed.cpu_budget_ppm, 5_000, "left as it was");
    assert_eq!(
        changed.hosts.as_deref(),
        Some(&["web-1".to_owned(), "web-2".to_owned()][..])
    );
    assert_eq!(
        (changed.created_by.as_str(), changed.updated_by.as_str()),
        ("alice", "bob")
    );
    // Back to every host, then off: agents are sent nothing.
    let every_host = ContinuousPatch {
        hosts: Some(None),
        enabled: Some(false),
        ..ContinuousPatch::default()
    };
    let off = continuous
        .update(created.id, &every_host, "bob")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((off.hosts, off.enabled), (None, false));
    assert!(continuous.assignments().await.unwrap().is_empty());
    assert!(continuous
        .update(Uuid::new_v4(), &every_host, "bob")
        .await
        .unwrap()
        .is_none());

    // Deleting the service deletes its configuration.
    assert!(Services::new(db).delete("checkout").await.unwrap());
    assert!(continuous.get(created.id).await.unwrap().is_none());
    assert!(!continuous.delete(created.id).await.unwrap());
}

/// Service `checkout`, profiled always: its assignment.
async fn always_checkout(db: &Database) -> (ContinuousProfiles, ContinuousAssignment) {
    Services::new(db.clone())
        .create(&checkout_service())
        .await
        .unwrap();
    let continuous = ContinuousProfiles::new(db.clone());
    let assignment = continuous
        .create(&always("checkout"))
        .await
        .unwrap()
        .assignment();
    (continuous, assignment)
}

/// Host web-1's segment of `assignment` from `start`, opened by agent-a.
fn web_1_segment(assignment: &ContinuousAssignment, start: i64) -> Segment<'_> {
    Segment {
        profile_id: segment_profile_id(assignment.id, "web-1", start),
        assignment,
        host: "web-1",
        segment_start_s: start,
        agent_id: "agent-a",
    }
}

/// A window of `agent` for `profile` from `start_s`, 10 s, 3 samples.
fn window(profile: Uuid, agent: &str, sequence: u64, start_s: i64) -> odp_core::Snapshot {
    let mut b = odp_core::snapshot::SnapshotBuilder::new();
    b.add(&[odp_core::Frame::function("main")], 1, 3);
    b.build(odp_core::snapshot::SnapshotHeader {
        profile_id: profile,
        host: "web-1".into(),
        agent_id: agent.into(),
        sequence,
        window_start_ms: start_s * 1000,
        window_end_ms: (start_s + 10) * 1000,
        event: EventKind::CpuClock,
        period: 52_631_578,
        frequency_hz: 19,
    })
}

/// A restarted agent takes its host's segment over once the old owner's
/// windows have ended, never while they overlap its own; an on-demand
/// profile keeps its first owner.
async fn a_restarted_agent_takes_its_segment_over(db: Database) {
    let (continuous, assignment) = always_checkout(&db).await;
    let start = segment_start(now_s());
    let segment = web_1_segment(&assignment, start);
    let profile_id = segment.profile_id;
    assert!(continuous.open_segment(&segment).await.unwrap());
    let store = |w: odp_core::Snapshot| {
        let db = db.clone();
        async move { store_snapshots(db, &[&w]).await.unwrap() }
    };
    assert_eq!(
        store(window(profile_id, "agent-a", 0, start)).await.stored,
        1
    );
    // A window of another agent overlapping the owner's: refused.
    let overlapping = store(window(profile_id, "agent-b", 0, start + 5)).await;
    assert_eq!((overlapping.stored, overlapping.foreign.len()), (0, 1));
    // After the owner's last window: the new agent owns the segment.
    let after = store(window(profile_id, "agent-b", 0, start + 10)).await;
    assert_eq!((after.stored, after.foreign.len()), (1, 0));
    let row = Profiles::new(db.clone())
        .get(profile_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.agent_id.as_deref(), Some("agent-b"));
    // The old agent's late window is now the foreign one.
    let late = store(window(profile_id, "agent-a", 1, start + 10)).await;
    assert_eq!((late.stored, late.foreign.len()), (0, 1));
}

async fn a_segment_opens_once_beside_an_on_demand_profile(db: Database) {
    let (continuous, assignment) = always_checkout(&db).await;
    let start = 1_800_000_000 / SEGMENT_SECS * SEGMENT_SECS;
    let segment = web_1_segment(&assignment, start);
    let profile_id = segment.profile_id;
    assert!(continuous.open_segment(&segment).await.unwrap());
    assert!(
        !continuous.open_segment(&segment).await.unwrap(),
        "a second window of the segment opens nothing"
    );
    let profiles = Profiles::new(db.clone());
    let row = profiles
        .get(profile_id)
        .await
        .unwrap()
        .expect("the segment");
    assert_eq!(
        (row.host.as_str(), row.service.as_str(), row.status),
        ("web-1", "checkout", ProfileStatus::Running)
    );
    assert_eq!(row.target, Target::ProcessName("checkout".into()));
    assert_eq!(
        (row.frequency_hz, row.duration_ms),
        (19, SEGMENT_SECS * 1000)
    );
    assert_eq!(row.event, Some(EventKind::CpuClock));
    assert_eq!(row.agent_id.as_deref(), Some("agent-a"));
    assert_eq!(row.created_at.timestamp(), start);
    assert_eq!(
        row.labels.get(CONTINUOUS_LABEL),
        Some(&assignment.id.to_string())
    );
    assert_eq!(row.options.overhead_budget, Some(0.005));

    // An on-demand CPU profile of the same process is not its duplicate.
    let on_demand = NewProfile {
        id: Uuid::new_v4(),
        host: "web-1".into(),
        service: "checkout".into(),
        idempotency_key: None,
        target: Target::ProcessName("checkout".into()),
        duration_ms: 30_000,
        frequency_hz: 99,
        requested_by: "ci".into(),
        labels: Default::default(),
        mode: ProfileMode::Cpu,
        options: StartOptions::default(),
        run_id: None,
    };
    let inserted = profiles.insert(&on_demand).await.unwrap();
    assert!(matches!(inserted, Inserted::Created(_)), "{inserted:?}");
    // ... but a second on-demand one still is.
    let second = NewProfile {
        id: Uuid::new_v4(),
        ..on_demand.clone()
    };
    let duplicate = profiles.insert(&second).await.unwrap();
    assert!(
        matches!(&duplicate, Inserted::Duplicate(row) if row.id == on_demand.id),
        "{duplicate:?}"
    );

    // The host's agent restarted under a new id ends the segment, and owns
    // it; another profile's first agent still keeps its own.
    let finished_by = |agent: &str, profile_id| AgentEvent {
        host: "web-1".into(),
        agent_id: agent.into(),
        at_ms: (start + SEGMENT_SECS) * 1000 + 500,
        kind: AgentEventKind::ProfileFinished {
            profile_id,
            reason: FinishReason::DurationElapsed,
            snapshots: 1,
            samples: 3,
            spooled_snapshots: 0,
            spooled_samples: 0,
        },
    };
    record_agent_event(db.clone(), &finished_by("agent-b", profile_id))
        .await
        .unwrap();
    let ended = profiles.get(profile_id).await.unwrap().unwrap();
    assert_eq!(
        (ended.status, ended.agent_id.as_deref()),
        (ProfileStatus::Finished, Some("agent-b"))
    );

    // Its process came back within the hour: another part of the segment
    // runs it again.
    let started = AgentEvent {
        host: "web-1".into(),
        agent_id: "agent-b".into(),
        at_ms: start * 1000 + 60_000,
        kind: AgentEventKind::ProfileStarted {
            profile_id,
            event: EventKind::CpuClock,
            frequency_hz: 19,
            pids: vec![42],
            language: None,
            runtime_version: None,
            runtime: Default::default(),
        },
    };
    record_agent_event(db.clone(), &started).await.unwrap();
    let again = profiles.get(profile_id).await.unwrap().unwrap();
    assert_eq!(again.status, ProfileStatus::Running);
    assert_eq!(again.finished_at, None);

    // A segment whose agent went away for good is closed after its hour.
    let stale_start = segment_start(now_s()) - 3 * SEGMENT_SECS;
    let stale = Segment {
        profile_id: segment_profile_id(assignment.id, "web-3", stale_start),
        host: "web-3",
        segment_start_s: stale_start,
        ..segment.clone()
    };
    assert!(continuous.open_segment(&stale).await.unwrap());
    let current = Segment {
        profile_id: segment_profile_id(assignment.id, "web-3", segment_start(now_s())),
        host: "web-3",
        segment_start_s: segment_start(now_s()),
        ..segment.clone()
    };
    assert!(continuous.open_segment(&current).await.unwrap());
    let closed = continuous
        .close_overdue_segments(Duration::from_secs(600))
        .await
        .unwrap();
    assert_eq!(closed, 1);
    assert_eq!(
        profiles
            .get(stale.profile_id)
            .await
            .unwrap()
            .unwrap()
            .status,
        ProfileStatus::Finished
    );
    assert_eq!(
        profiles
            .get(current.profile_id)
            .await
            .unwrap()
            .unwrap()
            .status,
        ProfileStatus::Running,
        "this hour's segment runs on"
    );

    // A configuration deleted meanwhile opens nothing.
    assert!(continuous.delete(assignment.id).await.unwrap());
    let later = Segment {
        profile_id: segment_profile_id(assignment.id, "web-1", start + SEGMENT_SECS),
        segment_start_s: start + SEGMENT_SECS,
        ..segment
    };
    assert!(!continuous.open_segment(&later).await.unwrap());
    assert!(profiles.get(later.profile_id).await.unwrap().is_none());
}

/// A segment's baseline for `share_regression`: the same host's segments
/// of the same hour in earlier weeks that ended, most recent first; not
/// the day before, another host's, or one still running.
async fn a_segment_is_compared_with_the_same_hour_of_earlier_weeks(db: Database) {
    let (continuous, assignment) = always_checkout(&db).await;
    let profiles = Profiles::new(db.clone());
    let week = odp_store::SEGMENT_BASELINE_PERIOD.num_seconds();
    let now = 1_800_000_000 / SEGMENT_SECS * SEGMENT_SECS;
    let open = |start: i64, host: &'static str| {
        let segment = Segment {
            profile_id: segment_profile_id(assignment.id, host, start),
            host,
            ..web_1_segment(&assignment, start)
        };
        let continuous = continuous.clone();
        async move {
            assert!(continuous.open_segment(&segment).await.unwrap());
            segment.profile_id
        }
    };
    let this = open(now, "web-1").await;
    let last_week = open(now - week, "web-1").await;
    let two_weeks = open(now - 2 * week, "web-1").await;
    let yesterday = open(now - 86_400, "web-1").await;
    let other_host = open(now - week, "web-2").await;
    let three_weeks_running = open(now - 3 * week, "web-1").await;
    for id in [last_week, two_weeks, yesterday, other_host] {
        profiles
            .transition(id, ProfileStatus::Finished, Some("segment ended"))
            .await
            .unwrap();
    }
    let previous = |limit| {
        let db = db.clone();
        async move {
            odp_store::segment_baselines(db, this, limit)
                .await
                .unwrap()
                .same_hour
        }
    };
    assert_eq!(previous(10).await, [last_week, two_weeks]);
    assert_eq!(previous(1).await, [last_week]);
    assert!(!previous(10).await.contains(&three_weeks_running));
    // An on-demand profile has no baseline of this kind.
    let on_demand = Uuid::new_v4();
    let inserted = profiles
        .insert(&NewProfile {
            id: on_demand,
            host: "web-1".into(),
            service: "checkout".into(),
            idempotency_key: None,
            target: Target::ProcessName("checkout".into()),
            duration_ms: 30_000,
            frequency_hz: 99,
            requested_by: "ci".into(),
            labels: Default::default(),
            mode: ProfileMode::Cpu,
            options: StartOptions::default(),
            run_id: None,
        })
        .await
        .unwrap();
    assert!(matches!(inserted, Inserted::Created(_)));
    assert_eq!(
        odp_store::segment_baselines(db.clone(), on_demand, 10)
            .await
            .unwrap(),
        odp_store::SegmentBaselines::default()
    );
}

/// A heartbeat of web-1's `agent` labelling its host's release.
async fn runs_release(db: &Database, agent: &str, release: &str, at_s: i64) {
    let event = odp_devstack::fixtures::release_heartbeat("web-1", agent, release, at_s);
    record_agent_event(db.clone(), &event).await.unwrap();
}

/// A segment keeps its host's release label, and is compared with the
/// host's latest ended segments of the release before it: not those of
/// its own release, of older releases, or of an unlabelled host.
async fn a_segment_is_compared_with_the_release_before(db: Database) {
    let (continuous, assignment) = always_checkout(&db).await;
    let profiles = Profiles::new(db.clone());
    let now = 1_800_000_000 / SEGMENT_SECS * SEGMENT_SECS;
    let hour = SEGMENT_SECS;
    // Hours -6.. -5 on 1.0 (agent-a), -4.. -2 on 1.1 (agent-b), -1 and
    // now on 1.2 (agent-c); the agents' labels as their heartbeats said.
    let mut ids = Vec::new();
    for (back, agent, release) in [
        (6, "agent-a", "1.0"),
        (5, "agent-a", "1.0"),
        (4, "agent-b", "1.1"),
        (3, "agent-b", "1.1"),
        (2, "agent-b", "1.1"),
        (1, "agent-c", "1.2"),
        (0, "agent-c", "1.2"),
    ] {
        let start = now - back * hour;
        runs_release(&db, agent, release, start).await;
        let segment = Segment {
            agent_id: agent,
            ..web_1_segment(&assignment, start)
        };
        assert!(continuous.open_segment(&segment).await.unwrap());
        let row = profiles.get(segment.profile_id).await.unwrap().unwrap();
        assert_eq!(row.labels.get("version").map(String::as_str), Some(release));
        if back > 0 {
            profiles
                .transition(segment.profile_id, ProfileStatus::Finished, None)
                .await
                .unwrap();
        }
        ids.push(segment.profile_id);
    }
    let before = |id, limit| {
        let db = db.clone();
        async move {
            odp_store::segment_baselines(db, id, limit)
                .await
                .unwrap()
                .previous_release
        }
    };
    // Now (1.2): the last 1.1 hours, most recent first; not hour -1 (1.2).
    assert_eq!(before(ids[6], 10).await, [ids[4], ids[3], ids[2]]);
    assert_eq!(before(ids[6], 2).await, [ids[4], ids[3]]);
    // Hour -3 (1.1): the 1.0 hours.
    assert_eq!(before(ids[3], 10).await, [ids[1], ids[0]]);
    // The first release has none before it.
    assert!(before(ids[1], 10).await.is_empty());
    // An unlabelled host's segment has no release to compare with.
    let unlabelled = Segment {
        agent_id: "agent-quiet",
        ..web_1_segment(&assignment, now + hour)
    };
    assert!(continuous.open_segment(&unlabelled).await.unwrap());
    assert!(before(unlabelled.profile_id, 10).await.is_empty());
}

on_both_backends!(
    a_segment_is_compared_with_the_release_before,
    a_segment_is_compared_with_the_same_hour_of_earlier_weeks,
    a_restarted_agent_takes_its_segment_over,
    a_service_has_one_configuration_changed_and_turned_off,
    a_segment_opens_once_beside_an_on_demand_profile
);
