//! Profile requests in a real Postgres: one live profile per target and
//! mode, a client's retry answered with what it created, the lifecycle's
//! allowed moves, label filters, and the row as the API shows it.

use odp_api_types::Profile;
use odp_core::command::UndeployMode;
use odp_core::cost::StartOptions;
use odp_core::{EventKind, Target};
use odp_devstack::{Stack, StackOptions};
use odp_store::{
    Inserted, Labels, NewProfile, NewRequest, ProfileFilter, ProfileMode, ProfileStatus, Profiles,
    RequestKind, Requests,
};
use uuid::Uuid;

fn request(host: &str, target: Target, event: Option<EventKind>, key: Option<&str>) -> NewProfile {
    NewProfile {
        id: Uuid::new_v4(),
        host: host.into(),
        service: "checkout".into(),
        idempotency_key: key.map(str::to_owned),
        target,
        duration_ms: 30_000,
        frequency_hz: 99,
        requested_by: "ci".into(),
        labels: Labels::from([("env".into(), "prod".into())]),
        mode: ProfileMode::of(event),
        options: StartOptions {
            event,
            ..StartOptions::default()
        },
    }
}

#[tokio::test]
async fn one_live_profile_per_target_and_mode_and_retries_replay() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let profiles = Profiles::new(stack.connect().await.unwrap());
    let java = Target::ProcessName("java".into());

    let first = request("h1", java.clone(), None, Some("retry-1"));
    let Inserted::Created(created) = profiles.insert(&first).await.unwrap() else {
        panic!("the first request creates")
    };
    assert_eq!(created.id, first.id);
    assert_eq!(created.status, ProfileStatus::Requested);

    // The same client retrying gets its profile back, not a second one.
    let retry = request("h1", java.clone(), None, Some("retry-1"));
    let Inserted::Replayed(replayed) = profiles.insert(&retry).await.unwrap() else {
        panic!("a retry replays")
    };
    assert_eq!(replayed.id, first.id);

    // Another client asking for the same target and mode is told which
    // profile is live; another mode of the same target, or another host,
    // is a profile of its own.
    let other = request("h1", java.clone(), None, None);
    let Inserted::Duplicate(live) = profiles.insert(&other).await.unwrap() else {
        panic!("a second live CPU profile of one target is refused")
    };
    assert_eq!(live.id, first.id);
    let off_cpu = request("h1", java.clone(), Some(EventKind::OffCpu), None);
    assert!(matches!(
        profiles.insert(&off_cpu).await.unwrap(),
        Inserted::Created(row) if row.mode == ProfileMode::OffCpu
    ));
    let elsewhere = request("h2", java.clone(), None, None);
    assert!(matches!(
        profiles.insert(&elsewhere).await.unwrap(),
        Inserted::Created(_)
    ));

    // Once it ends, the target is free again.
    for status in [
        ProfileStatus::Dispatched,
        ProfileStatus::Running,
        ProfileStatus::Finished,
    ] {
        assert!(profiles.transition(first.id, status, None).await.unwrap());
    }
    assert!(matches!(
        profiles.insert(&other).await.unwrap(),
        Inserted::Created(_)
    ));
}

#[tokio::test]
async fn lifecycle_moves_only_forward_and_rows_map_to_the_api() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let profiles = Profiles::new(stack.connect().await.unwrap());
    let new = request("h1", Target::Pid(42), Some(EventKind::Wall), None);
    profiles.insert(&new).await.unwrap();

    assert!(profiles
        .transition(new.id, ProfileStatus::Running, None)
        .await
        .unwrap());
    assert!(profiles
        .transition(new.id, ProfileStatus::Failed, Some("agent lost"))
        .await
        .unwrap());
    // A terminal profile stays as it ended.
    for status in [ProfileStatus::Running, ProfileStatus::Finished] {
        assert!(!profiles.transition(new.id, status, None).await.unwrap());
    }
    let row = profiles.get(new.id).await.unwrap().unwrap();
    assert!(row.started_at.is_some() && row.finished_at.is_some());

    let shown = Profile::from(row);
    assert_eq!(shown.id, new.id);
    assert_eq!(shown.status, ProfileStatus::Failed);
    assert_eq!(shown.status_reason.as_deref(), Some("agent lost"));
    assert_eq!(shown.mode, ProfileMode::Wall);
    assert_eq!(shown.target, Target::Pid(42));
    assert_eq!(shown.options.event, Some(EventKind::Wall));
    assert_eq!(shown.labels, new.labels);
    assert_eq!(shown.runtime, None);
    assert_eq!(shown.links.this, format!("/api/v1/profiles/{}", new.id));
    assert_eq!(
        shown.links.folded,
        format!("/api/v1/profiles/{}/flamegraph?format=folded", new.id)
    );

    let labelled = ProfileFilter {
        labels: Labels::from([("env".into(), "prod".into())]),
        limit: 10,
        ..ProfileFilter::default()
    };
    assert_eq!(profiles.list(&labelled).await.unwrap().len(), 1);
    let other_env = ProfileFilter {
        labels: Labels::from([("env".into(), "staging".into())]),
        ..labelled
    };
    assert!(profiles.list(&other_env).await.unwrap().is_empty());
}

/// Events, modes and undeploy modes are text columns read into their
/// enums: a name no version of ODP wrote fails the read instead of
/// reaching the API as a string.
#[tokio::test]
async fn wire_names_read_back_as_their_enums() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let profiles = Profiles::new(pool.clone());
    let new = request("h1", Target::Pid(7), Some(EventKind::OffCpu), None);
    profiles.insert(&new).await.unwrap();
    let row = profiles.get(new.id).await.unwrap().unwrap();
    assert_eq!((row.mode, row.event), (ProfileMode::OffCpu, None));

    let set_event = |event: &'static str| {
        sqlx::query("update profiles set event = $1 where id = $2")
            .bind(event)
            .bind(new.id)
            .execute(&pool)
    };
    set_event("off-cpu").await.unwrap();
    let row = profiles.get(new.id).await.unwrap().unwrap();
    assert_eq!(row.event, Some(EventKind::OffCpu));
    set_event("off_cpu").await.unwrap();
    let err = profiles.get(new.id).await.unwrap_err().to_string();
    assert!(err.contains("off_cpu"), "{err}");

    let requests = Requests::new(pool.clone());
    let drain = NewRequest {
        kind: RequestKind::Undeploy,
        host: "h1".into(),
        profile_id: None,
        mode: Some(UndeployMode::Drain),
        requested_by: "ops".into(),
    };
    let created = requests.insert(&drain).await.unwrap().unwrap();
    let read = requests.get(created.id).await.unwrap().unwrap();
    assert_eq!(read.mode, Some(UndeployMode::Drain));
    let stop = NewRequest {
        kind: RequestKind::Stop,
        profile_id: Some(new.id),
        mode: None,
        ..drain
    };
    let created = requests.insert(&stop).await.unwrap().unwrap();
    assert_eq!(requests.get(created.id).await.unwrap().unwrap().mode, None);
}
