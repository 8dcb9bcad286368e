//! The spine: profile the demo workload through the REST API and find its
//! known CPU split in the stored flame graph.

use odp_client::types::ProfileStatus;
use odp_core::EventKind;
use std::time::Duration;

use serde_json::json;

use odp_devstack::DatabaseKind;

use crate::common;
use crate::db::{count, Param};

/// The demo spends CPU in `demo_hot`, `demo_warm` and `demo_cool` in a
/// 6:3:1 ratio of equal-cost iterations (demo/README.md).
const EXPECTED: [(&str, f64); 3] = [("demo_hot", 0.6), ("demo_warm", 0.3), ("demo_cool", 0.1)];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiling_the_demo_finds_its_known_cpu_split() {
    demo_split_on(DatabaseKind::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiling_the_demo_on_mysql_finds_its_known_cpu_split() {
    demo_split_on(DatabaseKind::Mysql).await;
}

async fn demo_split_on(database: DatabaseKind) {
    let h = common::start_on(database, "profile", 2).await;
    let demo = h.spawn_demo();

    let client = h.platform.client();
    let id = client
        .start_profile(&json!({
            "host": h.platform.host_id,
            "pid": demo.pid(),
            "duration_secs": 6,
            "frequency_hz": 499,
        }))
        .await
        .expect("start profile")
        .id;
    let profile = client
        .wait_finished(id, Duration::from_secs(90), |_| {})
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    assert_eq!(
        profile.status,
        ProfileStatus::Finished,
        "{profile:?}\n{}",
        h.platform.logs()
    );
    assert!(
        matches!(profile.event, Some(EventKind::CpuClock | EventKind::Cycles)),
        "the agent says which event it sampled: {profile:?}"
    );

    // The last window lands in the pipeline just after the finish event.
    let db = h.store().await;
    let mut top = client.top(id, 50).await.unwrap();
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let next = client.top(id, 50).await.unwrap();
        if next.samples == top.samples && top.samples > 0 {
            break;
        }
        top = next;
    }
    let snapshots = count(
        &db,
        "select count(*) from snapshots where profile_id = ?",
        &[Param::Uuid(id)],
    )
    .await;
    assert!(
        snapshots >= 2,
        "a 6 s profile with 2 s windows stores several windows, got {snapshots}"
    );
    // Each window's cost report (frequency used, threads pruned) is kept as
    // the profile's timeline.
    let reports = count(
        &db,
        "select count(*) from profile_events where profile_id = ? and kind = 'window_stats'",
        &[Param::Uuid(id)],
    )
    .await;
    assert!(reports >= 2, "window_stats reports stored: {reports}");

    let self_samples = |name: &str| {
        top.functions
            .iter()
            .find(|f| f.function == name)
            .map(|f| f.self_samples)
            .unwrap_or(0)
    };
    let counts: Vec<u64> = EXPECTED
        .iter()
        .map(|(name, _)| self_samples(name))
        .collect();
    let n: u64 = counts.iter().sum();
    assert!(
        n >= 300,
        "too few samples in the demo's functions to judge ({n}): {top:?}"
    );
    // Each share among the three is a binomial estimate with standard error
    // sqrt(p(1-p)/n). Allow 5 standard errors (a false alarm about once in
    // 1.7 million runs) plus 3 points for how closely the demo itself hits
    // its nominal split (measured with `perf record`, demo/README.md).
    for ((name, expected), count) in EXPECTED.iter().zip(&counts) {
        let share = *count as f64 / n as f64;
        let stderr = (expected * (1.0 - expected) / n as f64).sqrt();
        let bound = 5.0 * stderr + 0.03;
        assert!(
            (share - expected).abs() <= bound,
            "{name}: measured {share:.3}, expected {expected} ± {bound:.3} (n = {n})\n{top:?}"
        );
    }

    // Stacks are complete: the hot leaf sits under `main`.
    let folded = client.flamegraph(id, "folded").await.unwrap();
    assert!(
        folded.lines().any(|l| l.contains("main;demo_hot ")),
        "{folded}"
    );
    let tree: serde_json::Value =
        serde_json::from_str(&client.flamegraph(id, "json").await.unwrap()).unwrap();
    assert_eq!(tree["root"]["total"], top.samples);
    let svg = client.flamegraph(id, "svg").await.unwrap();
    assert!(svg.starts_with("<?xml") && svg.contains("demo_hot"));

    // The demo's pure arithmetic trips none of the seed rules.
    let issues = client
        .request(
            reqwest::Method::GET,
            &format!("/api/v1/profiles/{id}/issues"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(issues.status, 200, "{}", issues.text);
    assert_eq!(
        issues.body["issues"].as_array().map(Vec::len),
        Some(0),
        "{}",
        issues.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_profile_flushes_its_last_partial_window() {
    let h = common::start("stop", 30).await;
    let demo = h.spawn_demo();
    let client = h.platform.client();
    // One 30 s window for a 60 s profile: everything sampled before the
    // stop lives only in the partial window the stop must flush.
    let id = client
        .start_profile(&json!({"host": h.platform.host_id, "pid": demo.pid(), "duration_secs": 60, "frequency_hz": 199}))
        .await
        .unwrap()
        .id;
    client
        .wait_for_status(id, ProfileStatus::Running, Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    tokio::time::sleep(Duration::from_secs(2)).await;
    client.stop_profile(id).await.unwrap();
    let profile = client
        .wait_finished(id, Duration::from_secs(60), |_| {})
        .await
        .unwrap();
    assert_eq!(
        profile.status,
        ProfileStatus::Stopped,
        "{profile:?}\n{}",
        h.platform.logs()
    );

    let pool = h.pool().await;
    h.wait_count(
        &pool,
        "select count(*) from snapshots where profile_id = $1::uuid",
        id,
        1,
        Duration::from_secs(30),
    )
    .await;
    let top = client.top(id, 5).await.unwrap();
    assert_eq!(
        top.functions.first().map(|f| f.function.as_str()),
        Some("demo_hot"),
        "{top:?}"
    );
}
