//! Profile requests, one behaviour suite run on a real Postgres and a real
//! MariaDB: one live profile per target and mode, a client's retry
//! answered with what it created, the lifecycle's allowed moves, pages,
//! label and other filters, expiry, and the row as the API shows it.

use odp_core::cost::StartOptions;
use odp_core::{EventKind, Target};
use odp_store::{
    Database, Inserted, Labels, NewProfile, ProfileFilter, ProfileMode, ProfileStatus, Profiles,
};
use uuid::Uuid;

mod support;
use support::on_both_backends;

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
        run_id: None,
    }
}

async fn one_live_profile_per_target_and_mode_and_retries_replay(db: Database) {
    let profiles = Profiles::new(db);
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

async fn lifecycle_moves_only_forward_and_rows_map_to_the_api(db: Database) {
    let profiles = Profiles::new(db);
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

    assert_eq!(row.id, new.id);
    assert_eq!(row.status, ProfileStatus::Failed);
    assert_eq!(row.status_reason.as_deref(), Some("agent lost"));
    assert_eq!(row.mode, ProfileMode::Wall);
    assert_eq!(row.target, Target::Pid(42));
    assert_eq!(row.options.event, Some(EventKind::Wall));
    assert_eq!(row.labels, new.labels);

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

/// Events and modes are text columns read into their enums: a name no
/// version of ODP wrote fails the read instead of reaching the API as a
/// string.
async fn wire_names_read_back_as_their_enums(db: Database) {
    let profiles = Profiles::new(db.clone());
    let new = request("h1", Target::Pid(7), Some(EventKind::OffCpu), None);
    profiles.insert(&new).await.unwrap();
    let row = profiles.get(new.id).await.unwrap().unwrap();
    assert_eq!((row.mode, row.event), (ProfileMode::OffCpu, None));

    set_event(&db, new.id, "off-cpu").await;
    let row = profiles.get(new.id).await.unwrap().unwrap();
    assert_eq!(row.event, Some(EventKind::OffCpu));
    set_event(&db, new.id, "off_cpu").await;
    let err = profiles.get(new.id).await.unwrap_err().to_string();
    assert!(err.contains("off_cpu"), "{err}");
}

/// Writes what an agent's start report would, bypassing the store.
async fn set_event(db: &Database, id: Uuid, event: &str) {
    match db {
        Database::Postgres(pool) => {
            sqlx::query("update profiles set event = $1 where id = $2")
                .bind(event)
                .bind(id)
                .execute(pool)
                .await
                .unwrap();
        }
        Database::MySql(pool) => {
            sqlx::query("update profiles set event = ? where id = ?")
                .bind(event)
                .bind(id)
                .execute(pool)
                .await
                .unwrap();
        }
    }
}

/// Pages run newest first and continue after the last row shown; filters
/// narrow them; requests no agent acknowledged in time expire.
async fn pages_filters_and_expiry(db: Database) {
    let profiles = Profiles::new(db);
    let mut ids = Vec::new();
    for host in ["h1", "h2", "h3"] {
        let new = request(host, Target::ProcessName("java".into()), None, None);
        profiles.insert(&new).await.unwrap();
        ids.push(new.id);
        // Distinct creation times, so the order is the insertion order.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let first_page = ProfileFilter {
        limit: 2,
        ..ProfileFilter::default()
    };
    let page: Vec<Uuid> = profiles
        .list(&first_page)
        .await
        .unwrap()
        .iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(page, [ids[2], ids[1]]);
    let last = profiles.get(ids[1]).await.unwrap().unwrap();
    let next_page = ProfileFilter {
        after: Some((last.created_at, last.id)),
        ..first_page.clone()
    };
    let rest: Vec<Uuid> = profiles
        .list(&next_page)
        .await
        .unwrap()
        .iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(rest, [ids[0]]);
    let on_h2 = ProfileFilter {
        host: Some("h2".into()),
        status: Some(ProfileStatus::Requested),
        service: Some("checkout".into()),
        ..first_page.clone()
    };
    assert_eq!(profiles.list(&on_h2).await.unwrap().len(), 1);

    assert!(profiles
        .transition(ids[0], ProfileStatus::Running, None)
        .await
        .unwrap());
    let expired = profiles
        .expire_unacknowledged(std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(expired, 2, "the running one was acknowledged");
    assert_eq!(
        profiles.get(ids[2]).await.unwrap().unwrap().status,
        ProfileStatus::Expired
    );
    let later = profiles
        .expire_unacknowledged(std::time::Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(later, 0);
}

on_both_backends!(
    one_live_profile_per_target_and_mode_and_retries_replay,
    lifecycle_moves_only_forward_and_rows_map_to_the_api,
    wire_names_read_back_as_their_enums,
    pages_filters_and_expiry,
);
