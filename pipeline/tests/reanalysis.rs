//! Re-analysis against a real Postgres: a rule created or changed through
//! the store is applied to profiles stored before the change by the
//! pipeline's job, with progress recorded and no alerts on history.

mod support;

use odp_core::runtime::LibraryKind;
use odp_core::Language;
use odp_devstack::{Stack, StackOptions};
use odp_pipeline::detect::Detector;
use odp_pipeline::reanalysis::run_next;
use odp_rules::RuleDef;
use sqlx::PgPool;
use uuid::Uuid;

/// A finished profile of `service` whose samples are `hot_pct`% in `hot`.
async fn store_profile(pool: &PgPool, service: &str, hot_pct: u64) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query(
        "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                               requested_by)
         values ($1, 'h-1', $2, $3, 60000, 99, 'finished', 'test')",
    )
    .bind(id)
    .bind(service)
    .bind(serde_json::json!({"by": "process_name", "value": service}))
    .execute(pool)
    .await
    .unwrap();
    let snapshot = support::snapshot(
        id,
        0,
        &[
            (&["main", "handler", "hot"], hot_pct),
            (&["main", "handler"], 100 - hot_pct),
        ],
    );
    odp_store::store_snapshots(pool, &[&snapshot])
        .await
        .unwrap();
    id
}

fn hot_rule(threshold_pct: f64, enabled: bool) -> RuleDef {
    RuleDef {
        id: "custom-hot".into(),
        title: "hot".into(),
        explanation: "hot is slow".into(),
        fix: "cool it".into(),
        link: "https://example.invalid/hot".into(),
        kind: "stack_share".into(),
        spec: serde_json::json!({"function": "^hot$", "leaf_only": true}),
        threshold_pct,
        service_thresholds: Default::default(),
        enabled,
    }
}

async fn flagged(pool: &PgPool, rule: &str) -> Vec<Uuid> {
    sqlx::query_scalar("select profile_id from detections where rule_id = $1 order by profile_id")
        .bind(rule)
        .fetch_all(pool)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_rules_are_applied_to_past_profiles_without_alerts() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = odp_store::Database::from(&pool);
    let detector = Detector::start(&db).await.unwrap();
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    // A channel for every service: a live detection would queue an alert.
    support::add_catch_all_channel(&pool).await;

    // 120 past profiles (more than one batch): 30% or 5% in `hot`.
    let mut hot = Vec::new();
    for n in 0..120 {
        let pct = if n % 3 == 0 { 30 } else { 5 };
        let id = store_profile(&pool, &format!("svc-{}", n % 4), pct).await;
        if pct == 30 {
            hot.push(id);
        }
    }
    hot.sort();
    assert!(
        !run_next(&db, &detector, &stopped).await.unwrap(),
        "no job yet"
    );

    let (row, job) = odp_store::create_user_rule(&pool, &hot_rule(10.0, true), "alice")
        .await
        .unwrap()
        .expect("a new rule");
    assert_eq!(
        (row.source.as_str(), job.status.as_str()),
        ("user", "pending")
    );
    assert_eq!(job.requested_by, "alice");
    assert!(
        odp_store::create_user_rule(&pool, &hot_rule(1.0, true), "bob")
            .await
            .unwrap()
            .is_none(),
        "the id is taken"
    );
    // A profile stored after the change is left to live evaluation.
    let later = store_profile(&pool, "svc-0", 30).await;

    assert!(run_next(&db, &detector, &stopped).await.unwrap());
    let done = odp_store::get_reanalysis(&pool, job.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.status, odp_store::ReanalysisStatus::Finished);
    assert_eq!((done.profiles_total, done.profiles_done), (Some(120), 120));
    assert!(done.finished_at.is_some());
    assert_eq!(flagged(&pool, "custom-hot").await, hot);
    assert!(!flagged(&pool, "custom-hot").await.contains(&later));
    assert_eq!(
        support::count(&pool, "select count(*) from alert_deliveries").await,
        0
    );

    // Raising the threshold past 30% clears the past detections.
    let (_, raised) = odp_store::update_user_rule(&pool, &hot_rule(40.0, true), "alice")
        .await
        .unwrap()
        .unwrap();
    assert!(run_next(&db, &detector, &stopped).await.unwrap());
    assert!(flagged(&pool, "custom-hot").await.is_empty());
    // Disabled, then lowered and enabled again: found again, once each.
    odp_store::update_user_rule(&pool, &hot_rule(1.0, false), "alice")
        .await
        .unwrap();
    odp_store::update_user_rule(&pool, &hot_rule(1.0, true), "alice")
        .await
        .unwrap();
    assert!(run_next(&db, &detector, &stopped).await.unwrap());
    assert!(run_next(&db, &detector, &stopped).await.unwrap());
    assert!(!run_next(&db, &detector, &stopped).await.unwrap());
    assert_eq!(flagged(&pool, "custom-hot").await.len(), 121);
    let latest = odp_store::latest_reanalysis(&pool, "custom-hot")
        .await
        .unwrap()
        .unwrap();
    assert_ne!(latest.id, raised.id);
    assert_eq!(
        (latest.status.as_str(), latest.profiles_done),
        ("finished", 121)
    );
    assert_eq!(
        support::count(&pool, "select count(*) from alert_deliveries").await,
        0
    );
    assert!(odp_store::update_user_rule(
        &pool,
        &RuleDef {
            id: "nope".into(),
            ..hot_rule(1.0, true)
        },
        "a"
    )
    .await
    .unwrap()
    .is_none());

    pool.close().await;
    stack.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_left_by_a_stopped_worker_resumes_from_its_cursor() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = odp_store::Database::from(&pool);
    let detector = Detector::start(&db).await.unwrap();
    for _ in 0..60 {
        store_profile(&pool, "svc", 30).await;
    }
    let (_, job) = odp_store::create_user_rule(&pool, &hot_rule(10.0, true), "alice")
        .await
        .unwrap()
        .unwrap();

    // A worker that is told to stop after its first batch leaves the job
    // running with its cursor after that batch...
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let claimed = odp_store::claim_reanalysis(&pool, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.id, job.id);
    let mut held = claimed.clone();
    let first = odp_store::reanalysis_batch(&pool, &held, 50).await.unwrap();
    assert_eq!(first.len(), 50);
    let moved =
        odp_store::record_reanalysis_progress(&pool, &mut held, *first.last().unwrap(), 50, 0)
            .await
            .unwrap();
    assert!(moved);
    // ...a stale holder (the old cursor) can no longer record progress...
    let mut stale = claimed;
    assert!(
        !odp_store::record_reanalysis_progress(&pool, &mut stale, first[0], 1, 60)
            .await
            .unwrap()
    );
    // ...and once the lease lapsed, another worker finishes the rest.
    stop.send(true).unwrap();
    assert!(
        run_next(&db, &detector, &stopping).await.unwrap(),
        "stopped before any batch"
    );
    let (_keep, running) = tokio::sync::watch::channel(false);
    assert!(run_next(&db, &detector, &running).await.unwrap());
    let done = odp_store::get_reanalysis(&pool, job.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            done.status.as_str(),
            done.profiles_total,
            done.profiles_done
        ),
        ("finished", Some(60), 60)
    );

    pool.close().await;
    stack.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_library_rule_flags_past_profiles_by_their_reported_runtime() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = odp_store::Database::from(&pool);
    let detector = Detector::start(&db).await.unwrap();
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    support::add_catch_all_channel(&pool).await;

    // Past profiles: two on an old jackson-databind, one on a fixed one,
    // one whose agent reported no runtime.
    let mut old = Vec::new();
    for version in ["2.9.10.8", "2.9.10.8", "2.15.2", ""] {
        let id = store_profile(&pool, "svc", 5).await;
        if version.is_empty() {
            continue;
        }
        let libraries = [(LibraryKind::Jar, "jackson-databind", version)];
        let started = support::profile_started(id, Language::Jvm, "17.0.15", &[], &libraries);
        odp_store::record_agent_event(&pool, &started)
            .await
            .unwrap();
        if version.starts_with("2.9.") {
            old.push(id);
        }
    }
    old.sort();
    let rule = RuleDef {
        id: "jackson-old".into(),
        kind: "library_version".into(),
        spec: serde_json::json!({
            "library": "^jackson-databind$", "kind": "jar", "versions": "<2.10"
        }),
        ..hot_rule(0.0, true)
    };
    odp_store::create_user_rule(&pool, &rule, "alice")
        .await
        .unwrap()
        .expect("a new rule");
    assert!(run_next(&db, &detector, &stopped).await.unwrap());
    assert_eq!(flagged(&pool, "jackson-old").await, old);
    let issues = odp_store::profile_issues(&pool, old[0]).await.unwrap();
    let issue = issues.iter().find(|i| i.rule_id == "jackson-old").unwrap();
    assert_eq!((issue.share, issue.threshold_pct), (100.0, 0.0));
    assert_eq!(issue.detail["libraries"][0]["version"], "2.9.10.8");
    assert_eq!(
        support::count(&pool, "select count(*) from alert_deliveries").await,
        0,
        "no alerts on history"
    );

    pool.close().await;
    stack.stop().unwrap();
}
