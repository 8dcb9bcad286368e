//! Runs, one behaviour suite run on a real Postgres and a real MariaDB:
//! recorded with what they asked and chose, their members found by run,
//! ended once (the first end wins), their progress kept while running.

use odp_core::ProfileStatus;
use odp_core::Target;
use std::time::Duration;

use odp_rules::run::{HostShare, RunFinding};
use odp_store::{
    AlertSubject, Database, Inserted, Labels, NewProfile, NewRun, ProfileMode, Profiles, RunEnd,
    RunHost, RunState, Runs,
};
use serde_json::json;
use uuid::Uuid;

mod detect_fixtures;
mod support;
use detect_fixtures::{detection, seed, webhook};
use support::on_both_backends;

fn run(service: &str) -> NewRun<serde_json::Value, serde_json::Value, serde_json::Value> {
    NewRun {
        id: Uuid::new_v4(),
        service: service.into(),
        selection: json!({"selection": {"count": 2}, "stratify_by": ["zone"], "seed": 7, "strict": false}),
        chosen: json!({"hosts": ["h1", "h2"], "eligible": 3}),
        stop_rule: Some(json!({"top": 3, "max_stderr": 0.01})),
        max_duration_ms: 60_000,
        requested_by: "alice".into(),
    }
}

async fn member(db: &Database, run: Uuid, host: &str) -> Uuid {
    let id = Uuid::new_v4();
    let new = NewProfile {
        id,
        host: host.into(),
        service: "checkout".into(),
        idempotency_key: None,
        // One live profile per host and target: each run profiles its own.
        target: Target::ProcessName(format!("checkout-{run}")),
        duration_ms: 60_000,
        frequency_hz: 99,
        requested_by: "alice".into(),
        labels: Labels::from([("run".to_owned(), run.to_string())]),
        mode: ProfileMode::of(None),
        options: Default::default(),
        run_id: Some(run),
    };
    let Inserted::Created(row) = Profiles::new(db).insert(&new).await.unwrap() else {
        panic!("a new target creates")
    };
    assert_eq!(row.run_id, Some(run));
    id
}

async fn a_run_is_recorded_with_its_members_and_ends_once(db: Database) {
    let runs = Runs::new(&db);
    let first = run("checkout");
    let created = runs.create(&first).await.unwrap();
    assert_eq!(created.status, RunState::Running);
    assert_eq!(created.selection.0["seed"], 7);
    assert_eq!(created.chosen.0["hosts"], json!(["h1", "h2"]));
    assert_eq!(created.stop_rule.as_ref().unwrap().0["top"], 3);
    let second = run("cart");
    runs.create(&NewRun {
        stop_rule: None,
        ..second.clone()
    })
    .await
    .unwrap();

    let (a, b) = (
        member(&db, first.id, "h2").await,
        member(&db, first.id, "h1").await,
    );
    let c = member(&db, second.id, "h1").await;
    let hosts: Vec<(String, Uuid)> = runs
        .members(first.id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.host, m.id))
        .collect();
    assert_eq!(hosts, [("h1".to_owned(), b), ("h2".to_owned(), a)]);
    let both = runs.members_of(&[first.id, second.id]).await.unwrap();
    assert_eq!(both.len(), 3);
    assert!(both
        .iter()
        .any(|m| m.id == c && m.run_id == Some(second.id)));
    assert!(runs.members_of(&[]).await.unwrap().is_empty());

    runs.progress(first.id, Some(0.02), 900).await.unwrap();
    let read = runs.get(first.id).await.unwrap().unwrap();
    assert_eq!(
        (read.reached_epsilon, read.samples_used),
        (Some(0.02), Some(900))
    );

    let precise = RunEnd {
        state: RunState::Precise,
        reason: "stop rule met",
        reached_epsilon: Some(0.009),
        samples_used: Some(2441),
    };
    assert!(runs.end(first.id, &precise).await.unwrap());
    let stopped = RunEnd {
        state: RunState::Stopped,
        reason: "stopped by bob",
        reached_epsilon: None,
        samples_used: None,
    };
    assert!(
        !runs.end(first.id, &stopped).await.unwrap(),
        "the first end wins"
    );
    let ended = runs.get(first.id).await.unwrap().unwrap();
    assert_eq!(ended.status, RunState::Precise);
    assert_eq!(ended.status_reason.as_deref(), Some("stop rule met"));
    assert_eq!(ended.samples_used, Some(2441));
    assert!(ended.ended_at.is_some());

    let running: Vec<Uuid> = runs
        .running()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(running, [second.id]);
    let listed: Vec<String> = runs
        .list(Some("checkout"), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.service)
        .collect();
    assert_eq!(listed, ["checkout"]);
    assert_eq!(runs.list(None, 10).await.unwrap().len(), 2);
}

/// Each chosen host's start is recorded once, with why a member was not
/// started; a user's live members are counted across their running runs;
/// a run with hosts lacking a profile ends partial.
async fn host_starts_are_recorded_and_live_members_counted(db: Database) {
    let runs = Runs::new(&db);
    let first = run("checkout");
    runs.create(&first).await.unwrap();
    let h1 = member(&db, first.id, "h1").await;
    let blocker = Uuid::new_v4();
    let started = RunHost {
        host: "h1".into(),
        profile_id: Some(h1),
        started: true,
        reason: None,
        blocked_by: None,
    };
    let busy = RunHost {
        host: "h2".into(),
        profile_id: None,
        started: false,
        reason: Some(format!("the target already has a live profile {blocker}")),
        blocked_by: Some(blocker),
    };
    runs.record_host(first.id, &started).await.unwrap();
    runs.record_host(first.id, &busy).await.unwrap();
    // A host recorded again keeps its first record.
    runs.record_host(
        first.id,
        &RunHost {
            reason: Some("later".into()),
            ..busy.clone()
        },
    )
    .await
    .unwrap();
    let recorded = runs.hosts_of(&[first.id]).await.unwrap();
    let seen: Vec<RunHost> = recorded.iter().map(|r| r.outcome.clone()).collect();
    assert_eq!(seen, [started, busy]);
    assert!(recorded.iter().all(|r| r.run_id == first.id));
    assert!(runs.hosts_of(&[]).await.unwrap().is_empty());

    // alice: one live member in a running run; a second run's member and
    // bob's run do not change her count until they are hers and live.
    assert_eq!(runs.live_members_for("alice").await.unwrap(), 1);
    let second = run("cart");
    runs.create(&second).await.unwrap();
    let cart = member(&db, second.id, "h1").await;
    assert_eq!(runs.live_members_for("alice").await.unwrap(), 2);
    let bobs = NewRun {
        requested_by: "bob".into(),
        ..run("search")
    };
    runs.create(&bobs).await.unwrap();
    member(&db, bobs.id, "h3").await;
    assert_eq!(runs.live_members_for("alice").await.unwrap(), 2);
    assert_eq!(runs.live_members_for("bob").await.unwrap(), 1);
    assert_eq!(runs.live_members_for("carol").await.unwrap(), 0);
    // An ended member no longer counts, nor do an ended run's members.
    Profiles::new(&db)
        .transition(cart, ProfileStatus::Failed, Some("the agent lost it"))
        .await
        .unwrap();
    assert_eq!(runs.live_members_for("alice").await.unwrap(), 1);
    let running: Vec<Uuid> = runs
        .running_for("alice")
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(running, [first.id, second.id]);

    let partial = RunEnd {
        state: RunState::Partial,
        reason: "every member ended; 1 of 2 host(s) have no profile to show",
        reached_epsilon: None,
        samples_used: Some(0),
    };
    assert!(runs.end(first.id, &partial).await.unwrap());
    let ended = runs.get(first.id).await.unwrap().unwrap();
    assert_eq!(ended.status, RunState::Partial);
    assert_eq!(ended.status_reason.as_deref(), Some(partial.reason));
    assert_eq!(runs.live_members_for("alice").await.unwrap(), 0);
    assert_eq!(runs.running_for("alice").await.unwrap().len(), 1);
}

fn host_share(host: &str, profile_id: Uuid, share: f64) -> HostShare {
    HostShare {
        host: host.into(),
        profile_id,
        share,
        samples: 100,
    }
}

async fn an_ended_run_is_judged_once_and_alerts_under_its_hottest_host(db: Database) {
    seed(&db).await;
    let channel = odp_store::create_channel(&db, &webhook("ops", "check*", true))
        .await
        .unwrap();
    let runs = Runs::new(&db);
    let asked = run("checkout");
    runs.create(&asked).await.unwrap();
    let (cool, hot) = (
        member(&db, asked.id, "h1").await,
        member(&db, asked.id, "h2").await,
    );
    let settled = Duration::ZERO;
    assert!(
        runs.awaiting_detection(settled, 10)
            .await
            .unwrap()
            .is_empty(),
        "still running"
    );
    let end = RunEnd {
        state: RunState::Finished,
        reason: "every member ended",
        reached_epsilon: None,
        samples_used: Some(200),
    };
    assert!(runs.end(asked.id, &end).await.unwrap());
    let due: Vec<Uuid> = runs
        .awaiting_detection(settled, 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(due, [asked.id]);
    let long = Duration::from_secs(3600);
    assert!(
        runs.awaiting_detection(long, 10).await.unwrap().is_empty(),
        "not settled yet"
    );

    let finding = RunFinding {
        detection: detection("jvm-stringbuffer", 90, Vec::new()),
        hosts: vec![host_share("h2", hot, 70.0), host_share("h1", cool, 20.0)],
    };
    assert!(runs
        .save_detections(asked.id, "checkout", std::slice::from_ref(&finding))
        .await
        .unwrap());
    assert!(
        !runs
            .save_detections(asked.id, "checkout", &[finding])
            .await
            .unwrap(),
        "a run is judged once"
    );
    assert!(runs
        .awaiting_detection(settled, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(runs
        .get(asked.id)
        .await
        .unwrap()
        .unwrap()
        .detected_at
        .is_some());

    let issues = runs.issues(asked.id).await.unwrap();
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].issue.rule_id, "jvm-stringbuffer");
    assert_eq!(issues[0].issue.rule.title, "java.lang.StringBuffer");
    let named: Vec<&str> = issues[0].hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(named, ["h2", "h1"]);

    // A member leaves the run's rules to the run: nothing more is queued.
    let subject = AlertSubject {
        service: "checkout",
        host: "h1",
        except_rules: &["jvm-stringbuffer".to_owned()],
    };
    let own = detection("jvm-stringbuffer", 20, Vec::new());
    odp_store::save_detections(&db, cool, Some(subject), &[own])
        .await
        .unwrap();

    let due = odp_store::claim_due_deliveries(&db, 10, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(due.len(), 1, "one alert for the run: {due:?}");
    let alert = &due[0];
    assert_eq!(alert.channel_id, channel.id);
    assert_eq!(alert.run_id, Some(asked.id));
    assert_eq!((alert.profile_id, alert.host.as_str()), (hot, "h2"));
    assert_eq!(alert.service, "checkout");
    assert_eq!(alert.hosts.len(), 2);
    assert_eq!(alert.hosts[0].share, 70.0);
}

on_both_backends!(
    a_run_is_recorded_with_its_members_and_ends_once,
    host_starts_are_recorded_and_live_members_counted,
    an_ended_run_is_judged_once_and_alerts_under_its_hottest_host,
);
