//! A profile says what its target earned and why it lacks what it lacks:
//! the agent reads the target's CPU time as it samples and reports, per
//! window, the samples expected and those lost with the reason; the API
//! sums them per profile and warns past 2% missing, and `odpctl status`
//! shows both.

use std::time::Duration;

use odp_client::types::{ProfileStatus, SampleCoverage};
use odp_devstack::{build_demo, ServiceProcess};
use serde_json::json;
use uuid::Uuid;

use crate::common::{self, odpctl, Harness};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duty_cycled_profile_reports_its_pauses_and_warns() {
    let h = common::start("coverage-duty", 2).await;
    let demo = h.spawn_demo_for(120);
    // Sampling is on 2 s of every 4: half of what the demo earns is paused.
    let request = json!({"host": h.platform.host_id, "pid": demo.pid(),
        "duration_secs": 12, "frequency_hz": 99,
        "options": {"duty_cycle": {"on_secs": 2, "period_secs": 4}}});
    let (id, coverage) = profile_to_the_end(&h, &request).await;
    let expected = coverage.expected.expect("a native CPU profile expects") as f64;
    let paused = coverage.lost.paused as f64;
    println!("duty cycle 2 s of 4: {coverage:?}");
    // Half of it, the last window's (all pause, so without samples) too.
    assert!(
        (0.42..=0.58).contains(&(paused / expected)),
        "{paused} paused of {expected} expected"
    );
    // What was captured and what was paused make up what was expected.
    let accounted = (coverage.captured as f64 + paused) / expected;
    assert!((0.95..=1.05).contains(&accounted), "{coverage:?}");
    let warning = coverage
        .warning
        .clone()
        .expect("half the samples are missing");
    assert!(warning.contains("paused by cost control"), "{warning}");

    let output =
        tokio::task::block_in_place(|| odpctl(&h, &h.platform.token, &["status", &id.to_string()]));
    let status = String::from_utf8_lossy(&output.stdout);
    assert!(
        status.contains("expected from its CPU time") && status.contains("paused by cost control"),
        "{status}"
    );
    assert!(status.contains(&warning), "{status}");

    // An aggregate over the service sums the same windows.
    let client = h.platform.client();
    let service = client.profile(id).await.expect("the profile").service;
    let now = chrono::Utc::now();
    let range =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let aggregate: odp_client::types::AggregateJson = client
        .get(&format!(
            "/api/v1/aggregate?service={service}&since={}&until={}",
            range(now - chrono::Duration::hours(1)),
            range(now + chrono::Duration::minutes(1))
        ))
        .await
        .expect("the aggregate");
    assert_eq!(aggregate.coverage, coverage);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_found_late_are_counted_as_undiscovered() {
    let h = common::start("coverage-late", 2).await;
    let binary = build_demo(&h.stack.state_dir().join("demo")).expect("build the demo");
    // A demo that lives for the whole profile, and a loop of one-second
    // runs of it: each is found at the agent's next re-scan (once a
    // second), after part of its run.
    let resident = h.spawn_demo_for(120);
    let script = format!(
        "for i in $(seq 40); do {} --seconds 1; done",
        binary.display()
    );
    let _loop = ServiceProcess::builder("demo-loop", "sh")
        .args(["-c", &script])
        .log_dir(h.stack.log_dir())
        .spawn()
        .expect("start the loop");
    let request = json!({"host": h.platform.host_id, "process_name": "cpu-split",
        "duration_secs": 12, "frequency_hz": 99});
    let (_, coverage) = profile_to_the_end(&h, &request).await;
    drop(resident);
    println!("a loop of 1 s processes: {coverage:?}");
    let expected = coverage.expected.expect("a native CPU profile expects") as f64;
    assert!(
        coverage.lost.undiscovered > 0,
        "no process was found late: {coverage:?}"
    );
    // The resident demo alone earns about 99 × 12 samples.
    assert!(coverage.captured > 900, "{coverage:?}");
    // What the agent sampled of each run and what it missed before finding
    // it are both in what it expected, but for the CPU a run used between
    // the agent's last reading and its exit (at most 100 ms of each 1 s
    // run) and the runs it never found.
    let found = (coverage.captured + coverage.lost.undiscovered) as f64;
    assert!(expected >= 0.9 * found, "{coverage:?}");
}

/// Starts a profile, waits for it to finish, and returns its coverage.
async fn profile_to_the_end(h: &Harness, request: &serde_json::Value) -> (Uuid, SampleCoverage) {
    let client = h.platform.client();
    let id = client
        .start_profile(request)
        .await
        .unwrap_or_else(|e| panic!("start {request}: {e}"))
        .id;
    let ended = client
        .wait_finished(id, Duration::from_secs(120), |_| {})
        .await
        .unwrap();
    assert_eq!(
        ended.status,
        ProfileStatus::Finished,
        "{ended:?}\n{}",
        h.platform.logs()
    );
    // The last window may still be on its way when the status changes.
    let mut coverage = None;
    for _ in 0..50 {
        let profile = client.profile(id).await.expect("the profile");
        let c = profile
            .coverage
            .expect("GET /profiles/{id} reports coverage");
        if coverage.as_ref() == Some(&c) && c.captured > 0 {
            break;
        }
        coverage = Some(c);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    (id, coverage.expect("read at least once"))
}
