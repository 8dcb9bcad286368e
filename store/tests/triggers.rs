//! Triggers, one behaviour suite run on a real Postgres and a real
//! MariaDB: a trigger created, changed and turned off; what agents are
//! sent; and the ledger of firings, which starts a profile once per report,
//! holds a host to its cooldown and the fleet to the cap, frees the cap as
//! profiles end, decides racing reports one at a time, and reports being
//! held back once.

use odp_core::cost::StartOptions;
use odp_core::trigger::TriggerCondition;
use odp_core::{EventKind, ProfileStatus, Target};
use odp_store::{
    Claim, Configuration as _, Database, FiringReport, HeldBack, NewProfile, NewService,
    NewTrigger, ProfileMode, Profiles, Services, Settled, TriggerPatch, Triggers,
};
use uuid::Uuid;

mod support;
use support::on_both_backends;

const HOT: TriggerCondition = TriggerCondition::CpuAbove {
    percent: 80,
    for_secs: 30,
};

async fn checkout_trigger(db: &Database, max_concurrent: u32) -> Triggers {
    Services::new(db.clone())
        .create(&NewService {
            name: "checkout".into(),
            target: Target::ProcessName("checkout".into()),
            owner_team: None,
            description: None,
            created_by: "alice".into(),
        })
        .await
        .unwrap();
    let triggers = Triggers::new(db.clone());
    triggers
        .create(&NewTrigger {
            service: "checkout".into(),
            condition: HOT,
            duration_secs: 30,
            event: EventKind::CpuClock,
            frequency_hz: 99,
            cooldown_secs: 600,
            max_concurrent,
            hosts: None,
            created_by: "alice".into(),
        })
        .await
        .unwrap();
    triggers
}

fn report(trigger_id: Uuid, host: &str, held_since_ms: i64) -> FiringReport {
    FiringReport {
        trigger_id,
        host: host.into(),
        held_since_ms,
        observed: 97.5,
    }
}

/// Starts the profile a claim allows, as the api-server does, and settles
/// its firing.
async fn start(db: &Database, triggers: &Triggers, claim: Claim, host: &str) -> Uuid {
    let Claim::Start { firing, trigger } = claim else {
        panic!("not a start: {claim:?}");
    };
    let id = Uuid::new_v4();
    Profiles::new(db.clone())
        .insert(&NewProfile {
            id,
            host: host.into(),
            service: trigger.service.clone(),
            idempotency_key: None,
            target: Target::ProcessName("checkout".into()),
            duration_ms: 30_000,
            frequency_hz: 99,
            requested_by: format!("trigger {}", trigger.id),
            labels: Default::default(),
            mode: ProfileMode::Cpu,
            options: StartOptions::default(),
            run_id: None,
        })
        .await
        .unwrap();
    triggers.settle(firing, Settled::Started(id)).await.unwrap();
    id
}

async fn a_trigger_is_created_changed_and_turned_off(db: Database) {
    let triggers = checkout_trigger(&db, 3).await;
    let created = triggers.list().await.unwrap().remove(0);
    assert_eq!(
        (created.condition, created.cooldown_secs, created.enabled),
        (HOT, 600, true)
    );
    assert_eq!(
        triggers.assignments().await.unwrap(),
        [created.assignment()]
    );
    let growth = TriggerCondition::RssGrowth {
        mib_per_min: 50,
        for_secs: 120,
    };
    let patch = TriggerPatch {
        condition: Some(growth),
        hosts: Some(Some(vec!["web-1".into()])),
        enabled: Some(false),
        ..TriggerPatch::default()
    };
    let changed = triggers
        .update(created.id, &patch, "bob")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            changed.condition,
            changed.hosts.clone(),
            changed.updated_by.as_str(),
            changed.max_concurrent
        ),
        (growth, Some(vec!["web-1".to_owned()]), "bob", 3)
    );
    assert!(triggers.assignments().await.unwrap().is_empty(), "off");
    assert_eq!(
        triggers
            .claim(&report(created.id, "web-1", 1))
            .await
            .unwrap(),
        Claim::Disabled
    );
    assert_eq!(
        triggers
            .claim(&report(Uuid::new_v4(), "web-1", 1))
            .await
            .unwrap(),
        Claim::Unknown
    );
    assert!(triggers.delete(created.id).await.unwrap());
    assert!(triggers.get(created.id).await.unwrap().is_none());
}

async fn firings_keep_the_cooldown_and_the_cap_and_report_once(db: Database) {
    let triggers = checkout_trigger(&db, 2).await;
    let id = triggers.list().await.unwrap()[0].id;
    let first = triggers.claim(&report(id, "web-1", 1_000)).await.unwrap();
    let profile = start(&db, &triggers, first, "web-1").await;
    // The same report again (another replica, a redelivery).
    assert_eq!(
        triggers.claim(&report(id, "web-1", 1_000)).await.unwrap(),
        Claim::Seen
    );
    // web-1 again within its cooldown.
    let cooled = triggers.claim(&report(id, "web-1", 5_000)).await.unwrap();
    assert!(
        matches!(
            cooled,
            Claim::HeldBack {
                why: HeldBack::Cooldown,
                first: true,
                ..
            }
        ),
        "{cooled:?}"
    );
    // A second host starts (which ends the held-back state); a third and
    // a fourth reach the cap of 2: reported once, with the first.
    let second = triggers.claim(&report(id, "web-2", 2_000)).await.unwrap();
    start(&db, &triggers, second, "web-2").await;
    for (host, first) in [("web-3", true), ("web-4", false)] {
        let capped = triggers.claim(&report(id, host, 3_000)).await.unwrap();
        assert!(
            matches!(capped, Claim::HeldBack { why: HeldBack::Capped, first: f, .. } if f == first),
            "{host}: {capped:?}"
        );
    }
    let row = triggers.get(id).await.unwrap().unwrap();
    assert_eq!((row.fired, row.held_back), (2, 3));
    assert_eq!(row.held_back_reason.as_deref(), Some("capped"));
    assert!(row.held_back_since.is_some());

    // The first profile ends: web-3 may start, and the held-back state
    // clears.
    Profiles::new(db.clone())
        .transition(profile, ProfileStatus::Finished, Some("duration elapsed"))
        .await
        .unwrap();
    let third = triggers.claim(&report(id, "web-3", 4_000)).await.unwrap();
    start(&db, &triggers, third, "web-3").await;
    let row = triggers.get(id).await.unwrap().unwrap();
    assert_eq!((row.fired, row.held_back_since), (3, None));
    // web-1 one cooldown after its first firing by its agent's clock
    // (its period began 100 ms early) is past its cooldown, however soon
    // it arrives here: only the cap holds it back.
    let again = triggers
        .claim(&report(id, "web-1", 1_000 + 600_000 - 100))
        .await
        .unwrap();
    assert!(
        matches!(
            again,
            Claim::HeldBack {
                why: HeldBack::Capped,
                ..
            }
        ),
        "{again:?}"
    );

    let firings = triggers.firings(id, 10).await.unwrap();
    let mut outcomes: Vec<(&str, &str)> = firings
        .iter()
        .map(|f| (f.host.as_str(), f.outcome.as_str()))
        .collect();
    outcomes.sort_unstable();
    assert_eq!(
        outcomes,
        [
            ("web-1", "capped"),
            ("web-1", "cooldown"),
            ("web-1", "started"),
            ("web-2", "started"),
            ("web-3", "capped"),
            ("web-3", "started"),
            ("web-4", "capped"),
        ]
    );
}

/// Claims every report at once, each on a task of its own.
async fn all(reports: Vec<FiringReport>, triggers: &Triggers) -> Vec<odp_store::Result<Claim>> {
    let tasks: Vec<_> = reports
        .into_iter()
        .map(|r| {
            let triggers = triggers.clone();
            tokio::spawn(async move { triggers.claim(&r).await })
        })
        .collect();
    let mut claims = Vec::new();
    for task in tasks {
        claims.push(task.await.expect("claim task"));
    }
    claims
}

async fn racing_reports_are_decided_one_at_a_time(db: Database) {
    let triggers = checkout_trigger(&db, 1).await;
    let id = triggers.list().await.unwrap()[0].id;
    // Eight hosts at once, cap 1: exactly one may start, the rest are
    // capped (the claim to start holds its place before its profile is
    // named).
    let claims = all(
        (0..8).map(|i| report(id, &format!("web-{i}"), 1)).collect(),
        &triggers,
    )
    .await;
    let starts = claims
        .iter()
        .filter(|c| matches!(c, Ok(Claim::Start { .. })))
        .count();
    let capped = claims
        .iter()
        .filter(|c| {
            matches!(
                c,
                Ok(Claim::HeldBack {
                    why: HeldBack::Capped,
                    ..
                })
            )
        })
        .count();
    assert_eq!((starts, capped), (1, 7), "{claims:?}");
    // One report read by two replicas at once: claimed once.
    let same = all(
        vec![report(id, "web-9", 7), report(id, "web-9", 7)],
        &triggers,
    )
    .await;
    let seen = same.iter().filter(|c| matches!(c, Ok(Claim::Seen))).count();
    assert_eq!(seen, 1, "{same:?}");
}

on_both_backends!(
    a_trigger_is_created_changed_and_turned_off,
    firings_keep_the_cooldown_and_the_cap_and_report_once,
    racing_reports_are_decided_one_at_a_time
);
