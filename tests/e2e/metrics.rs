//! Prometheus `/metrics` on all three services reflects real work: the
//! api-server counts requests per route template, the agent counts what it
//! published, the pipeline what it stored and its consumer lag.

use std::time::Duration;

use serde_json::json;

use crate::common;

/// The value of the first sample of `name` whose labels contain every one
/// of `labels` (`key="value"` strings).
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .find(|line| labels.iter().all(|label| line.contains(label)))
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
}

async fn scrape(url: &str) -> String {
    let response = reqwest::get(url).await.expect("scrape");
    assert_eq!(response.status(), 200, "{url}");
    response.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_service_exposes_metrics_of_its_work() {
    let h = common::start("metrics", 1).await;
    let demo = h.spawn_demo();
    let client = h.platform.client();
    let request = json!({"host": h.platform.host_id, "pid": demo.pid(), "duration_secs": 2});
    let id = client.start_profile(&request).await.unwrap().id;
    let missing = client.profile("00000000-0000-0000-0000-000000000000").await;
    assert!(missing.is_err());
    client
        .wait_finished(id, Duration::from_secs(60), |_| {})
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));

    let api = h
        .platform
        .http()
        .get(format!("{}/metrics", h.platform.api_url))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), 200);
    let api = api.text().await.unwrap();
    let route = r#"route="/api/v1/profiles""#;
    assert_eq!(
        sample(
            &api,
            "odp_api_requests_total",
            &[route, r#"method="POST""#, r#"status="202""#]
        ),
        Some(1.0),
        "{api}"
    );
    let by_id = [r#"route="/api/v1/profiles/{id}""#, r#"status="404""#];
    assert_eq!(
        sample(&api, "odp_api_requests_total", &by_id),
        Some(1.0),
        "{api}"
    );
    let published = [r#"action="start""#, r#"outcome="published""#];
    assert_eq!(
        sample(&api, "odp_api_commands_total", &published),
        Some(1.0)
    );
    assert!(sample(&api, "process_resident_memory_bytes", &[]).unwrap() > 0.0);
    // The service block cache: on at its default 256 MiB, nothing read yet.
    assert_eq!(
        sample(&api, "odp_block_cache_capacity_bytes", &[]),
        Some(f64::from(256u32 << 20)),
        "{api}"
    );
    assert_eq!(sample(&api, "odp_block_cache_hits_total", &[]), Some(0.0));

    let agent_url = h.platform.agent_metrics_url.clone().expect("agent runs");
    let agent = scrape(&agent_url).await;
    let accepted = sample(
        &agent,
        "odp_agent_commands_total",
        &[r#"outcome="accepted""#],
    );
    assert_eq!(accepted, Some(1.0), "{agent}");
    let snapshots = sample(&agent, "odp_agent_snapshots_published_total", &[]).unwrap();
    assert!(snapshots >= 1.0, "{agent}");
    assert!(sample(&agent, "odp_agent_samples_published_total", &[]).unwrap() > 0.0);

    // The pipeline stores the last window just after the profile ends, and
    // librdkafka reports lag every 5 s.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let pipeline = scrape(&h.platform.pipeline_metrics_url).await;
        let stored = sample(&pipeline, "odp_pipeline_snapshots_stored_total", &[]);
        let lag = sample(&pipeline, "odp_pipeline_consumer_lag", &[]);
        if stored == Some(snapshots) && lag.is_some() {
            assert!(sample(&pipeline, "odp_pipeline_samples_stored_total", &[]).unwrap() > 0.0);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "pipeline stored {stored:?} of {snapshots} snapshots, lag {lag:?}:\n{pipeline}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[test]
fn samples_are_found_by_name_and_labels() {
    let text = "# TYPE a counter\na_total{x=\"1\"} 2\na_total{x=\"2\"} 5\nab_total 9\n";
    assert_eq!(sample(text, "a_total", &["x=\"2\""]), Some(5.0));
    assert_eq!(sample(text, "a_total", &[]), Some(2.0));
    assert_eq!(sample(text, "ab_total", &[]), Some(9.0));
    assert_eq!(sample(text, "a", &[]), None);
}
