//! Control requests, one behaviour suite run on a real Postgres and a real
//! MariaDB: one open deploy per host, moves only out of open states, list
//! filters, and resolution from what the database shows (heartbeats,
//! ended profiles, deadlines).

use odp_core::command::UndeployMode;
use odp_core::cost::StartOptions;
use odp_core::Target;
use odp_store::{
    resolve_open_requests, Database, Labels, NewProfile, NewRequest, ProfileMode, ProfileStatus,
    Profiles, RequestDeadlines, RequestFilter, RequestKind, RequestStatus, Requests,
};
use uuid::Uuid;

mod support;
use support::{execute, on_both_backends};

fn request(kind: RequestKind, host: &str) -> NewRequest {
    NewRequest {
        kind,
        host: host.into(),
        profile_id: None,
        mode: None,
        requested_by: "ops".into(),
    }
}

async fn one_open_deploy_per_host_and_ended_requests_stay_ended(db: Database) {
    let requests = Requests::new(db);
    let first = requests
        .insert(&request(RequestKind::Deploy, "h1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (first.request.kind, first.status),
        (RequestKind::Deploy, RequestStatus::Requested)
    );
    // A second deploy while the first is open is answered with the first.
    let again = requests
        .insert(&request(RequestKind::Deploy, "h1"))
        .await
        .unwrap();
    assert_eq!(again.map(|r| r.id).map_err(|r| r.id), Err(first.id));
    requests
        .insert(&request(RequestKind::Deploy, "h2"))
        .await
        .unwrap()
        .unwrap();
    let undeploy = NewRequest {
        mode: Some(UndeployMode::Now),
        ..request(RequestKind::Undeploy, "h1")
    };
    let undeploy = requests.insert(&undeploy).await.unwrap().unwrap();
    let read = requests.get(undeploy.id).await.unwrap().unwrap();
    assert_eq!(read.request.mode, Some(UndeployMode::Now));
    assert_eq!(first.request.mode, None);

    let command = Uuid::new_v4();
    assert!(requests
        .transition(first.id, RequestStatus::Dispatched, None, Some(command))
        .await
        .unwrap());
    assert!(requests
        .transition(first.id, RequestStatus::Failed, Some("no agent"), None)
        .await
        .unwrap());
    assert!(!requests
        .transition(first.id, RequestStatus::Running, None, None)
        .await
        .unwrap());
    let ended = requests.get(first.id).await.unwrap().unwrap();
    assert_eq!(
        (
            ended.status,
            ended.status_reason.as_deref(),
            ended.command_id
        ),
        (RequestStatus::Failed, Some("no agent"), Some(command))
    );
    // Once it ended, the host may be deployed to again.
    let second = requests
        .insert(&request(RequestKind::Deploy, "h1"))
        .await
        .unwrap()
        .unwrap();

    let deploys_to_h1 = RequestFilter {
        kind: Some(RequestKind::Deploy),
        host: Some("h1".into()),
        open_only: false,
        limit: 10,
    };
    let ids: Vec<Uuid> = requests
        .list(&deploys_to_h1)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, [second.id, first.id], "newest first");
    let open = RequestFilter {
        open_only: true,
        ..deploys_to_h1
    };
    assert_eq!(requests.list(&open).await.unwrap().len(), 1);
    let everything = RequestFilter {
        limit: 10,
        ..RequestFilter::default()
    };
    assert_eq!(requests.list(&everything).await.unwrap().len(), 4);
}

async fn requests_end_from_heartbeats_profiles_and_deadlines(db: Database) {
    let requests = Requests::new(db.clone());
    let profiles = Profiles::new(db.clone());
    let dispatched = |kind, host: &'static str| {
        let requests = requests.clone();
        async move {
            let row = requests
                .insert(&request(kind, host))
                .await
                .unwrap()
                .unwrap();
            requests
                .transition(row.id, RequestStatus::Dispatched, None, None)
                .await
                .unwrap();
            row.id
        }
    };
    // A deploy ends when its host heartbeats after it was asked for.
    let deployed = dispatched(RequestKind::Deploy, "h-up").await;
    execute(
        &db,
        "insert into agents (host, agent_id, version, last_seen)
         values (?, 'agent-1', '1', current_timestamp(6))",
        &["h-up"],
    )
    .await;
    // An undeploy ends when its host stops heartbeating; a drain of a live
    // host waits.
    let undeployed = dispatched(RequestKind::Undeploy, "h-gone").await;
    let draining = requests
        .insert(&NewRequest {
            mode: Some(UndeployMode::Drain),
            ..request(RequestKind::Undeploy, "h-up")
        })
        .await
        .unwrap()
        .unwrap();
    requests
        .transition(draining.id, RequestStatus::Dispatched, None, None)
        .await
        .unwrap();
    // A stop ends when its profile does.
    let profile = NewProfile {
        id: Uuid::new_v4(),
        host: "h-up".into(),
        service: "svc".into(),
        idempotency_key: None,
        target: Target::Pid(1),
        duration_ms: 1000,
        frequency_hz: 99,
        requested_by: "ops".into(),
        labels: Labels::new(),
        mode: ProfileMode::Cpu,
        options: StartOptions::default(),
        run_id: None,
    };
    profiles.insert(&profile).await.unwrap();
    let stop = requests
        .insert(&NewRequest {
            profile_id: Some(profile.id),
            ..request(RequestKind::Stop, "h-up")
        })
        .await
        .unwrap()
        .unwrap();
    requests
        .transition(stop.id, RequestStatus::Dispatched, None, None)
        .await
        .unwrap();
    profiles
        .transition(profile.id, ProfileStatus::Stopped, None)
        .await
        .unwrap();
    // A deploy nobody answers fails at its deadline.
    let unanswered = dispatched(RequestKind::Deploy, "h-silent").await;

    let deadlines = RequestDeadlines {
        live_within_secs: 60,
        deploy_secs: 0,
        command_secs: 3600,
        drain_secs: 3600,
    };
    let ended = resolve_open_requests(db.clone(), deadlines).await.unwrap();
    assert_eq!(ended, 4);
    let state = |id| {
        let requests = requests.clone();
        async move {
            let row = requests.get(id).await.unwrap().unwrap();
            (row.status, row.status_reason.unwrap_or_default())
        }
    };
    let finished = |reason: &str| (RequestStatus::Finished, reason.to_owned());
    assert_eq!(state(deployed).await, finished("the agent is live"));
    assert_eq!(state(undeployed).await, finished("the agent stopped"));
    assert_eq!(state(stop.id).await, finished("the profile ended stopped"));
    assert_eq!(
        state(unanswered).await,
        (
            RequestStatus::Failed,
            "no heartbeat from the host in time".to_owned()
        )
    );
    assert_eq!(state(draining.id).await.0, RequestStatus::Dispatched);
    assert_eq!(resolve_open_requests(db, deadlines).await.unwrap(), 0);
}

on_both_backends!(
    one_open_deploy_per_host_and_ended_requests_stay_ended,
    requests_end_from_heartbeats_profiles_and_deadlines,
);
