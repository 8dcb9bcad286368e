//! Rules on library versions and runtime options against a real Postgres:
//! agents' `profile_started` events recorded as the worker records them,
//! read back by the detector with the profile's samples.

mod support;

use odp_core::runtime::LibraryKind::{Jar, Python as Wheel};
use odp_core::Language;
use odp_devstack::{Stack, StackOptions};
use odp_pipeline::detect::Detector;
use odp_store::runtime::profile_runtime;
use sqlx::PgPool;
use support::{profile_started, snapshot};
use uuid::Uuid;

/// A running profile with one window of 200 plain samples.
async fn stored_profile(pool: &PgPool) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by)
         values ($1, 'h-1', $2, 60000, 99, 'running', 'test')",
    )
    .bind(id)
    .bind(serde_json::json!({"by": "process_name", "value": id.to_string()}))
    .execute(pool)
    .await
    .unwrap();
    let window = snapshot(id, 0, &[(&["main", "work"], 150), (&["main"], 50)]);
    odp_store::store_snapshots(pool, &[&window]).await.unwrap();
    id
}

/// The rules flagging the profile, sorted.
async fn evaluated(detector: &Detector, pool: &PgPool, id: Uuid) -> Vec<String> {
    detector
        .evaluate_profile(&odp_store::Database::from(pool), id)
        .await
        .unwrap();
    let mut rules: Vec<String> = odp_store::profile_issues(pool, id)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.rule_id)
        .collect();
    rules.sort();
    rules
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_rules_read_what_profile_started_reported() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = odp_store::Database::from(&pool);
    let detector = Detector::start(&db).await.unwrap();

    // A JVM on Log4j 1.2 with C1 only: flagged once its agent says so.
    let jvm = stored_profile(&pool).await;
    assert_eq!(profile_runtime(&pool, jvm).await.unwrap(), None);
    assert!(evaluated(&detector, &pool, jvm).await.is_empty());
    let started = profile_started(
        jvm,
        Language::Jvm,
        "1.8.0_392",
        &["-Xmx1g", "-XX:TieredStopAtLevel=1"],
        &[(Jar, "log4j", "1.2.17"), (Jar, "guava", "33.0.0-jre")],
    );
    odp_store::record_agent_event(&pool, &started)
        .await
        .unwrap();
    let runtime = profile_runtime(&pool, jvm).await.unwrap().unwrap();
    assert_eq!(
        (runtime.language, runtime.runtime_version.as_deref()),
        (Some(Language::Jvm), Some("1.8.0_392"))
    );
    assert_eq!(runtime.runtime.libraries.len(), 2);
    assert_eq!(
        evaluated(&detector, &pool, jvm).await,
        ["jvm-jit-limited", "jvm-log4j1-library"]
    );
    let issues = odp_store::profile_issues(&pool, jvm).await.unwrap();
    let log4j = issues
        .iter()
        .find(|i| i.rule_id == "jvm-log4j1-library")
        .unwrap();
    assert_eq!(
        (log4j.share, log4j.samples_matched, log4j.samples_total),
        (100.0, 200, 200)
    );
    assert!(log4j.stacks.is_empty());
    assert_eq!(
        log4j.detail["libraries"],
        serde_json::json!([{"kind": "jar", "name": "log4j", "version": "1.2.17"}])
    );

    // Python 3.10 in its debug allocator with Pydantic 1.
    let old = stored_profile(&pool).await;
    let started = profile_started(
        old,
        Language::Python,
        "3.10.12",
        &["PYTHONMALLOC=debug"],
        &[
            (Wheel, "pydantic", "1.10.13"),
            (Wheel, "requests", "2.31.0"),
        ],
    );
    odp_store::record_agent_event(&pool, &started)
        .await
        .unwrap();
    assert_eq!(
        evaluated(&detector, &pool, old).await,
        ["py-dev-mode", "py-pydantic-v1", "py-runtime-before-3-11"]
    );

    // A current runtime flags nothing.
    let current = stored_profile(&pool).await;
    let started = profile_started(
        current,
        Language::Python,
        "3.12.1",
        &["-O"],
        &[(Wheel, "pydantic", "2.5.3")],
    );
    odp_store::record_agent_event(&pool, &started)
        .await
        .unwrap();
    assert!(evaluated(&detector, &pool, current).await.is_empty());

    // An agent that predates the runtime contract reports none: nothing to
    // match, and nothing fails.
    let legacy = stored_profile(&pool).await;
    sqlx::query(
        "insert into profile_events (profile_id, host, agent_id, kind, at, body)
         values ($1, 'h-1', 'agent', 'profile_started', now(),
                 jsonb_build_object('type', 'profile_started', 'profile_id', $1::text))",
    )
    .bind(legacy)
    .execute(&pool)
    .await
    .unwrap();
    let runtime = profile_runtime(&pool, legacy).await.unwrap().unwrap();
    assert!(runtime.language.is_none() && runtime.runtime.is_empty());
    assert!(evaluated(&detector, &pool, legacy).await.is_empty());
    assert_eq!(detector.failures(), 0);

    pool.close().await;
    stack.stop().unwrap();
}
