//! Agent identities, one behaviour suite run on a real Postgres and a real
//! MariaDB: recorded when issued, listed by host, revoked once; and the
//! hosts of profiles, which the pipeline checks agent data against.

use chrono::{Duration, SubsecRound, Utc};
use odp_core::cost::StartOptions;
use odp_core::Target;
use odp_store::{Database, Identities, Labels, NewIdentity, NewProfile, ProfileMode, Profiles};
use uuid::Uuid;

mod support;
use support::on_both_backends;

fn issued(host: &str, days: i64) -> NewIdentity {
    let now = Utc::now().trunc_subsecs(6);
    NewIdentity {
        id: Uuid::new_v4(),
        host: host.into(),
        public_key: "MCowBQYDK2VwAyEA1234567890abcdefghijklmnopqrstuvwxy".into(),
        issued_at: now,
        expires_at: now + Duration::days(days),
        issued_by: "alice".into(),
    }
}

async fn identities_are_listed_by_host_and_revoked_once(db: Database) {
    let identities = Identities::new(db);
    let web1 = identities.record(&issued("web-1", 365)).await.unwrap();
    let web2 = identities.record(&issued("web-2", 365)).await.unwrap();
    let expired = identities.record(&issued("web-1", -1)).await.unwrap();
    assert_eq!(identities.get(web1.issued.id).await.unwrap().unwrap(), web1);
    assert_eq!(identities.get(Uuid::new_v4()).await.unwrap(), None);

    let of_web1: Vec<Uuid> = identities
        .list(Some("web-1"), 10)
        .await
        .unwrap()
        .iter()
        .map(|i| i.issued.id)
        .collect();
    assert_eq!(of_web1.len(), 2);
    assert!(of_web1.contains(&web1.issued.id) && of_web1.contains(&expired.issued.id));
    assert_eq!(identities.list(None, 10).await.unwrap().len(), 3);
    assert_eq!(identities.list(None, 1).await.unwrap().len(), 1);

    assert!(identities.revoked().await.unwrap().is_empty());
    let revoked = identities
        .revoke(web1.issued.id, "bob")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(revoked.revocation.revoked_by.as_deref(), Some("bob"));
    let first = revoked.revocation.revoked_at.unwrap();
    // Revoking again keeps the first revocation.
    let again = identities
        .revoke(web1.issued.id, "carol")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            again.revocation.revoked_at,
            again.revocation.revoked_by.as_deref()
        ),
        (Some(first), Some("bob"))
    );
    assert_eq!(
        identities.revoke(Uuid::new_v4(), "bob").await.unwrap(),
        None
    );
    // An expired identity, revoked, is not worth listing as revoked: its
    // certificate is refused anyway.
    identities.revoke(expired.issued.id, "bob").await.unwrap();
    let listed = identities.revoked().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed.get(&web1.issued.id).map(String::as_str),
        Some("web-1")
    );
    assert!(!listed.contains_key(&web2.issued.id));
}

async fn profiles_name_the_host_they_were_started_on(db: Database) {
    let profiles = Profiles::new(db);
    let mut ids = Vec::new();
    for host in ["web-1", "web-2"] {
        let id = Uuid::new_v4();
        profiles
            .insert(&NewProfile {
                id,
                host: host.into(),
                service: "checkout".into(),
                idempotency_key: None,
                target: Target::ProcessName("java".into()),
                duration_ms: 30_000,
                frequency_hz: 99,
                requested_by: "ci".into(),
                labels: Labels::new(),
                mode: ProfileMode::of(None),
                options: StartOptions::default(),
                run_id: None,
            })
            .await
            .unwrap();
        ids.push(id);
    }
    let unknown = Uuid::new_v4();
    let hosts = profiles.hosts(&[ids[0], ids[1], unknown]).await.unwrap();
    assert_eq!(hosts.len(), 2);
    assert_eq!(hosts[&ids[0]], "web-1");
    assert_eq!(hosts[&ids[1]], "web-2");
    assert!(profiles.hosts(&[]).await.unwrap().is_empty());
}

on_both_backends!(
    identities_are_listed_by_host_and_revoked_once,
    profiles_name_the_host_they_were_started_on
);
