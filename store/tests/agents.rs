//! Agents' events, one behaviour suite run on a real Postgres and a real
//! MariaDB: heartbeats and host liveness, lifecycle events moving their
//! profiles (idempotently, only by the profile's agent), and the runtime
//! a `profile_started` event reported.

use chrono::Utc;
use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use odp_core::runtime::{Library, LibraryKind, ProfileRuntime, RuntimeInfo};
use odp_core::{EventKind, Language};
use odp_store::runtime::profile_runtime;
use odp_store::{
    host_clocks, host_is_live, list_agents, record_agent_event, record_host_clocks, Database,
    ProfileStatus, Profiles,
};
use uuid::Uuid;

mod support;
use support::on_both_backends;

fn heartbeat(host: &str, agent: &str, at_ms: i64, version: &str, running: &[Uuid]) -> AgentEvent {
    AgentEvent {
        host: host.into(),
        agent_id: agent.into(),
        at_ms,
        kind: AgentEventKind::Heartbeat {
            version: version.into(),
            running_profiles: running.to_vec(),
            plugins: vec!["jvm".into(), "python".into()],
            machine_id: None,
            started_at_ms: None,
            labels: Default::default(),
            services: Vec::new(),
            services_digest: None,
        },
    }
}

fn from_agent(agent: &str, kind: AgentEventKind) -> AgentEvent {
    AgentEvent {
        host: "h-1".into(),
        agent_id: agent.into(),
        at_ms: Utc::now().timestamp_millis(),
        kind,
    }
}

fn started(profile_id: Uuid, runtime_version: &str, flags: &[&str]) -> AgentEventKind {
    AgentEventKind::ProfileStarted {
        profile_id,
        event: EventKind::Wall,
        frequency_hz: 99,
        pids: vec![7],
        language: Some(Language::Jvm),
        runtime_version: Some(runtime_version.into()),
        runtime: RuntimeInfo {
            flags: flags.iter().map(|f| f.to_string()).collect(),
            libraries: vec![Library {
                kind: LibraryKind::Jar,
                name: "log4j".into(),
                version: Some("1.2.17".into()),
            }],
            ..RuntimeInfo::default()
        },
    }
}

async fn heartbeats_keep_the_latest_and_tell_live_hosts(db: Database) {
    let now = Utc::now().timestamp_millis();
    let running = [Uuid::new_v4(), Uuid::new_v4()];
    record_agent_event(&db, &heartbeat("h-1", "a", now, "1.0", &running))
        .await
        .unwrap();
    record_agent_event(&db, &heartbeat("h-2", "b", now - 7_200_000, "0.9", &[]))
        .await
        .unwrap();
    // A late heartbeat updates what the agent reports but not when it
    // was last seen.
    record_agent_event(
        &db,
        &heartbeat("h-1", "a", now - 60_000, "1.1", &running[..1]),
    )
    .await
    .unwrap();
    let agents = list_agents(&db).await.unwrap();
    let seen: Vec<(&str, &str, &str, i64)> = agents
        .iter()
        .map(|a| {
            (
                a.host.as_str(),
                a.agent_id.as_str(),
                a.version.as_str(),
                a.last_seen.timestamp_millis(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("h-1", "a", "1.1", now),
            ("h-2", "b", "0.9", now - 7_200_000)
        ]
    );
    assert_eq!(agents[0].running_profiles, running[..1]);
    assert_eq!(agents[0].plugins, ["jvm", "python"]);
    assert!(agents[1].running_profiles.is_empty());

    assert!(host_is_live(&db, "h-1", 60).await.unwrap());
    assert!(!host_is_live(&db, "h-2", 60).await.unwrap());
    assert!(host_is_live(&db, "h-2", 3 * 3600).await.unwrap());
    assert!(!host_is_live(&db, "h-3", 3 * 3600).await.unwrap());
}

/// Hosts by the labels their agent heard from last reports: an older
/// agent's labels of the same host do not count.
async fn hosts_are_found_by_their_labels(db: Database) {
    let now = Utc::now().timestamp();
    for (host, agent, release, at) in [
        ("h-1", "old", "1.0", now - 600),
        ("h-1", "new", "1.1", now),
        ("h-2", "b", "1.0", now),
        ("h-3", "c", "1.1", now),
    ] {
        let event = odp_devstack::fixtures::release_heartbeat(host, agent, release, at);
        record_agent_event(&db, &event).await.unwrap();
    }
    let labelled = |pairs: &[(&str, &str)]| {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let db = db.clone();
        async move { odp_store::hosts_labelled(&db, &pairs).await.unwrap() }
    };
    assert_eq!(labelled(&[("version", "1.1")]).await, ["h-1", "h-3"]);
    assert_eq!(labelled(&[("version", "1.0")]).await, ["h-2"]);
    assert!(labelled(&[("version", "1.0"), ("zone", "a")])
        .await
        .is_empty());
    assert_eq!(labelled(&[]).await, ["h-1", "h-2", "h-3"]);
}

async fn lifecycle_events_move_their_profile_once_and_only_by_its_agent(db: Database) {
    let profiles = Profiles::new(&db);
    let id = support::requested_profile(&db).await;
    let start = from_agent("a", started(id, "17.0.9", &[]));
    record_agent_event(&db, &start).await.unwrap();
    let running = profiles.get(id).await.unwrap().unwrap();
    assert_eq!(
        (running.status, running.agent_id.as_deref(), running.event),
        (ProfileStatus::Running, Some("a"), Some(EventKind::Wall))
    );
    assert!(running.started_at.is_some());
    // A redelivery finds it moved already.
    record_agent_event(&db, &start).await.unwrap();
    let again = profiles.get(id).await.unwrap().unwrap();
    assert_eq!(
        (again.status, again.started_at),
        (ProfileStatus::Running, running.started_at)
    );

    let finished = |reason| AgentEventKind::ProfileFinished {
        profile_id: id,
        reason,
        snapshots: 3,
        samples: 30,
        spooled_snapshots: 0,
        spooled_samples: 0,
    };
    // Another agent cannot end it, nor can a rejected command.
    record_agent_event(
        &db,
        &from_agent("b", finished(FinishReason::DurationElapsed)),
    )
    .await
    .unwrap();
    let rejected = AgentEventKind::CommandRejected {
        command_id: None,
        profile_id: Some(id),
        reason: "bad signature".into(),
    };
    record_agent_event(&db, &from_agent("a", rejected))
        .await
        .unwrap();
    assert_eq!(
        profiles.get(id).await.unwrap().unwrap().status,
        ProfileStatus::Running
    );

    record_agent_event(&db, &from_agent("a", finished(FinishReason::Stopped)))
        .await
        .unwrap();
    let failed = AgentEventKind::ProfileFailed {
        profile_id: id,
        error: "too late".into(),
    };
    record_agent_event(&db, &from_agent("a", failed))
        .await
        .unwrap();
    let ended = profiles.get(id).await.unwrap().unwrap();
    assert_eq!(
        (ended.status, ended.status_reason.as_deref()),
        (ProfileStatus::Stopped, Some("stopped on request"))
    );
    assert!(ended.finished_at.is_some());
    // Every lifecycle event is kept, moved anything or not.
    assert_eq!(profile_events(&db, id).await, 6);

    // A profile that fails before it starts.
    let other = support::requested_profile(&db).await;
    let failed = AgentEventKind::ProfileFailed {
        profile_id: other,
        error: "no such process".into(),
    };
    record_agent_event(&db, &from_agent("c", failed))
        .await
        .unwrap();
    let failed = profiles.get(other).await.unwrap().unwrap();
    assert_eq!(
        (
            failed.status,
            failed.status_reason.as_deref(),
            failed.agent_id.as_deref()
        ),
        (ProfileStatus::Failed, Some("no such process"), Some("c"))
    );
}

async fn profile_events(db: &Database, profile: Uuid) -> i64 {
    match db {
        Database::Postgres(pool) => {
            sqlx::query_scalar("select count(*) from profile_events where profile_id = $1")
                .bind(profile)
                .fetch_one(pool)
                .await
                .unwrap()
        }
        Database::MySql(pool) => {
            sqlx::query_scalar("select count(*) from profile_events where profile_id = ?")
                .bind(profile)
                .fetch_one(pool)
                .await
                .unwrap()
        }
    }
}

async fn the_runtime_is_the_latest_profile_started_reported(db: Database) {
    let id = support::requested_profile(&db).await;
    assert_eq!(profile_runtime(&db, id).await.unwrap(), None);
    let mut first = from_agent("a", started(id, "1.8.0_392", &["-Xmx1g"]));
    first.at_ms -= 1_000;
    record_agent_event(&db, &first).await.unwrap();
    record_agent_event(
        &db,
        &from_agent("a", started(id, "17.0.9", &["-XX:+UseG1GC"])),
    )
    .await
    .unwrap();
    let runtime = profile_runtime(&db, id).await.unwrap().unwrap();
    assert_eq!(
        runtime,
        ProfileRuntime {
            language: Some(Language::Jvm),
            runtime_version: Some("17.0.9".into()),
            runtime: RuntimeInfo {
                flags: vec!["-XX:+UseG1GC".into()],
                libraries: vec![Library {
                    kind: LibraryKind::Jar,
                    name: "log4j".into(),
                    version: Some("1.2.17".into()),
                }],
                ..RuntimeInfo::default()
            },
        }
    );
    // An agent that reports no runtime: the fields are empty, not missing.
    let bare = support::requested_profile(&db).await;
    let kind = AgentEventKind::ProfileStarted {
        profile_id: bare,
        event: EventKind::CpuClock,
        frequency_hz: 99,
        pids: vec![7],
        language: None,
        runtime_version: None,
        runtime: RuntimeInfo::default(),
    };
    record_agent_event(&db, &from_agent("a", kind))
        .await
        .unwrap();
    assert_eq!(
        profile_runtime(&db, bare).await.unwrap(),
        Some(ProfileRuntime::default())
    );
}

/// A pid profile requested without a service: the host's name, until the
/// agent reports the process; then the process's name.
async fn a_pid_profile_is_named_by_its_process_once_started(db: Database) {
    use odp_core::runtime::Executable;
    use odp_store::{Inserted, Labels, NewProfile, ProfileMode};
    let new = |id: Uuid, service: &str| NewProfile {
        id,
        host: "h-1".into(),
        service: service.into(),
        idempotency_key: None,
        target: odp_core::Target::Pid(4242 + id.as_bytes()[0] as u32),
        duration_ms: 60_000,
        frequency_hz: 99,
        requested_by: "ci".into(),
        labels: Labels::new(),
        mode: ProfileMode::of(None),
        options: Default::default(),
        run_id: None,
    };
    let start = |id: Uuid| AgentEventKind::ProfileStarted {
        profile_id: id,
        event: EventKind::CpuClock,
        frequency_hz: 99,
        pids: vec![4242],
        language: None,
        runtime_version: None,
        runtime: RuntimeInfo {
            executable: Some(Executable {
                path: "/usr/bin/python3.11".into(),
                build_id: None,
            }),
            ..RuntimeInfo::default()
        },
    };
    let profiles = Profiles::new(&db);
    let defaulted = Uuid::new_v4();
    let named = Uuid::new_v4();
    for (id, service) in [(defaulted, "h-1"), (named, "checkout")] {
        let Inserted::Created(_) = profiles.insert(&new(id, service)).await.unwrap() else {
            panic!("a new target creates")
        };
        record_agent_event(&db, &from_agent("a", start(id)))
            .await
            .unwrap();
    }
    let service = |id| {
        let profiles = Profiles::new(&db);
        async move { profiles.get(id).await.unwrap().unwrap().service }
    };
    assert_eq!(service(defaulted).await, "python3.11");
    assert_eq!(
        service(named).await,
        "checkout",
        "a service asked for stays"
    );
}

async fn clock_offsets_are_kept_per_host_and_listed_with_its_agents(db: Database) {
    let now = Utc::now();
    record_agent_event(
        &db,
        &heartbeat("h-1", "a-1", now.timestamp_millis(), "1", &[]),
    )
    .await
    .unwrap();
    record_agent_event(
        &db,
        &heartbeat("h-2", "a-2", now.timestamp_millis(), "1", &[]),
    )
    .await
    .unwrap();
    record_host_clocks(&db, &[("h-1".into(), -7_200_000), ("h-3".into(), 40)])
        .await
        .unwrap();
    // Measured again: the latest replaces the last.
    record_host_clocks(&db, &[("h-1".into(), -7_199_000)])
        .await
        .unwrap();
    let clocks = host_clocks(&db, now - chrono::Duration::minutes(1))
        .await
        .unwrap();
    let offsets: Vec<(&str, i64, i64)> = clocks
        .iter()
        .map(|c| (c.host.as_str(), c.offset_ms, c.correction_ms()))
        .collect();
    // Under a second either way is within a heartbeat's delay: not moved.
    assert_eq!(offsets, [("h-1", -7_199_000, -7_199_000), ("h-3", 40, 0)]);
    assert!(host_clocks(&db, Utc::now() + chrono::Duration::minutes(1))
        .await
        .unwrap()
        .is_empty());
    let mut agents: Vec<(String, Option<i64>)> = list_agents(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.host, a.clock_offset_ms))
        .collect();
    agents.sort();
    assert_eq!(
        agents,
        [
            ("h-1".to_owned(), Some(-7_199_000)),
            ("h-2".to_owned(), None)
        ]
    );
}

on_both_backends!(
    clock_offsets_are_kept_per_host_and_listed_with_its_agents,
    hosts_are_found_by_their_labels,
    heartbeats_keep_the_latest_and_tell_live_hosts,
    lifecycle_events_move_their_profile_once_and_only_by_its_agent,
    the_runtime_is_the_latest_profile_started_reported,
    a_pid_profile_is_named_by_its_process_once_started,
);
