//! Services, one behaviour suite run on a real Postgres and a real
//! MariaDB: defined once by name, changed and deleted; and the live hosts
//! that run one, from what the agents' heartbeats reported.

use odp_core::Target;
use odp_store::{Database, NewService, ServicePatch, Services, StoreError};

mod support;
use support::on_both_backends;

fn checkout() -> NewService {
    NewService {
        name: "checkout".into(),
        target: Target::CommandLine("java .*checkout".into()),
        owner_team: Some("payments".into()),
        description: None,
        created_by: "alice".into(),
    }
}

async fn a_service_is_defined_once_then_changed_and_deleted(db: Database) {
    let services = Services::new(db);
    let created = services.create(&checkout()).await.unwrap();
    assert_eq!(created.name, "checkout");
    assert_eq!(
        created.target,
        Target::CommandLine("java .*checkout".into())
    );
    assert_eq!(created.owner_team.as_deref(), Some("payments"));
    let again = services.create(&checkout()).await.unwrap_err();
    assert!(
        matches!(&again, StoreError::Conflict(m) if m.contains("checkout")),
        "{again}"
    );

    let patch = ServicePatch {
        target: Some(Target::Cgroup("/system.slice/checkout.service".into())),
        owner_team: Some(None),
        description: Some(Some("the shop's checkout".into())),
    };
    let changed = services.update("checkout", &patch).await.unwrap().unwrap();
    assert_eq!(
        changed.target,
        Target::Cgroup("/system.slice/checkout.service".into())
    );
    assert_eq!(changed.owner_team, None);
    assert_eq!(changed.description.as_deref(), Some("the shop's checkout"));
    assert!(changed.updated_at >= created.updated_at);
    // An empty patch changes nothing but the time.
    let same = services
        .update("checkout", &ServicePatch::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (same.target, same.description),
        (changed.target, changed.description)
    );
    assert!(services.update("nope", &patch).await.unwrap().is_none());

    let mut other = checkout();
    other.name = "cart".into();
    services.create(&other).await.unwrap();
    let names: Vec<String> = services
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["cart", "checkout"]);

    assert!(services.delete("checkout").await.unwrap());
    assert!(!services.delete("checkout").await.unwrap());
    assert!(services.get("checkout").await.unwrap().is_none());
}

on_both_backends!(a_service_is_defined_once_then_changed_and_deleted);
