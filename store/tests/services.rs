//! Services, one behaviour suite run on a real Postgres and a real
//! MariaDB: defined once by name, changed and deleted; and the live hosts
//! that run one, from what the agents' heartbeats reported.

use std::collections::BTreeMap;
use std::time::Duration;

use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::Target;
use odp_store::{record_agent_event, Database, NewService, ServicePatch, Services, StoreError};

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
    assert_eq!(created.service.name, "checkout");
    assert_eq!(
        created.service.target,
        Target::CommandLine("java .*checkout".into())
    );
    assert_eq!(created.service.owner_team.as_deref(), Some("payments"));
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
        changed.service.target,
        Target::Cgroup("/system.slice/checkout.service".into())
    );
    assert_eq!(changed.service.owner_team, None);
    assert_eq!(
        changed.service.description.as_deref(),
        Some("the shop's checkout")
    );
    assert!(changed.updated_at >= created.updated_at);
    // An empty patch changes nothing but the time.
    let same = services
        .update("checkout", &ServicePatch::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (same.service.target, same.service.description),
        (changed.service.target, changed.service.description)
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
        .map(|s| s.service.name)
        .collect();
    assert_eq!(names, ["cart", "checkout"]);

    assert!(services.delete("checkout").await.unwrap());
    assert!(!services.delete("checkout").await.unwrap());
    assert!(services.get("checkout").await.unwrap().is_none());
}

fn heartbeat(host: &str, ago_secs: i64, zone: &str, services: &[&str]) -> AgentEvent {
    AgentEvent {
        host: host.into(),
        agent_id: format!("agent-{host}"),
        at_ms: chrono::Utc::now().timestamp_millis() - ago_secs * 1000,
        kind: AgentEventKind::Heartbeat {
            version: "0.1.0".into(),
            running_profiles: vec![],
            plugins: vec!["native".into()],
            machine_id: None,
            started_at_ms: None,
            labels: BTreeMap::from([
                ("zone".to_owned(), zone.to_owned()),
                ("kernel".to_owned(), "6.1.0".to_owned()),
            ]),
            services: services.iter().map(|s| s.to_string()).collect(),
            services_digest: Some("d1".into()),
        },
    }
}

async fn the_hosts_of_a_service_are_the_live_ones_reporting_it(db: Database) {
    let beats = [
        heartbeat("h1", 1, "a", &["cart", "checkout"]),
        heartbeat("h2", 1, "b", &["cart"]),
        heartbeat("h3", 1, "b", &["checkout"]),
        // Stopped heartbeating ten minutes ago: not live.
        heartbeat("h4", 600, "a", &["checkout"]),
        // An older heartbeat of h3 redelivered late does not take its
        // service away.
        heartbeat("h3", 30, "b", &[]),
    ];
    for beat in &beats {
        record_agent_event(&db, beat).await.unwrap();
    }
    let services = Services::new(db);
    let hosts = services
        .hosts_running("checkout", Duration::from_secs(60))
        .await
        .unwrap();
    let seen: Vec<(&str, &str)> = hosts
        .iter()
        .map(|h| (h.host.as_str(), h.labels["zone"].as_str()))
        .collect();
    assert_eq!(seen, [("h1", "a"), ("h3", "b")]);
    assert_eq!(hosts[0].labels["kernel"], "6.1.0");
    assert_eq!(hosts[0].agent_id, "agent-h1");
    let cart = services
        .hosts_running("cart", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(cart.len(), 2);
    assert!(services
        .hosts_running("nope", Duration::from_secs(60))
        .await
        .unwrap()
        .is_empty());
}

on_both_backends!(
    a_service_is_defined_once_then_changed_and_deleted,
    the_hosts_of_a_service_are_the_live_ones_reporting_it
);
