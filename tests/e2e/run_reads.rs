//! A run's reads through the real stack: once a run of the demo ends, its
//! flame graph counts exactly its members' samples in every format, its
//! hosts, functions and windows are listed, a run compared with itself
//! moves nothing, and bad parameters are refused with a 422.

use std::time::Duration;

use odp_devstack::ApiClient;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

/// The samples of the run's flame graph and the sum of its members'.
async fn run_and_members(client: &ApiClient, id: &str, members: &[String]) -> (u64, u64) {
    let run = client
        .call(
            Method::GET,
            &format!("/api/v1/runs/{id}/flamegraph?format=json"),
            None,
            200,
        )
        .await
        .expect("the run's flame graph");
    let mut sum = 0;
    for member in members {
        let graph = client
            .call(
                Method::GET,
                &format!("/api/v1/profiles/{member}/flamegraph?format=json"),
                None,
                200,
            )
            .await
            .expect("a member's flame graph");
        sum += graph["samples"].as_u64().unwrap();
    }
    (run["samples"].as_u64().unwrap(), sum)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_aggregate_reads_in_every_format_and_compares_with_itself() {
    let h = common::start_configured("run_reads", |o| {
        o.agent_env
            .push(("ODP_LABELS".into(), "zone=eu-1,version=v1".into()));
    })
    .await;
    let admin = h.platform.client();
    let _demo = h.spawn_demo_for(120);
    common::define_demo_service(&h).await;
    let started = admin
        .call(
            Method::POST,
            "/api/v1/runs",
            Some(&json!({"service": "demo", "duration_secs": 6, "window_secs": 2})),
            202,
        )
        .await
        .unwrap();
    let id = started["id"].as_str().unwrap().to_owned();
    let run = format!("/api/v1/runs/{id}");
    let ended = common::wait_for_body(&admin, &run, Duration::from_secs(60), |b| {
        b["status"] != "running" && b["status"] != "dispatching"
    })
    .await;
    assert_eq!(
        ended["status"],
        "finished",
        "{ended}\n{}",
        h.platform.logs()
    );
    let members: Vec<String> = ended["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["profile_id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(members.len(), 1, "{ended}");

    // The run's total is its members' samples, exactly (read until no
    // late window moves either).
    let mut totals = run_and_members(&admin, &id, &members).await;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let again = run_and_members(&admin, &id, &members).await;
        if again == totals && again.0 == again.1 {
            break;
        }
        totals = again;
    }
    let (samples, members_sum) = totals;
    assert!(samples > 0, "{}", h.platform.logs());
    assert_eq!(samples, members_sum, "the run's total is its members'");
    let graph = admin
        .call(Method::GET, &format!("{run}/flamegraph"), None, 200)
        .await
        .unwrap();
    assert_eq!(graph["run_id"], id.as_str());
    assert_eq!(graph["service"], "demo");
    assert_eq!(graph["samples"].as_u64(), Some(samples));
    assert_eq!(graph["root"]["total"].as_u64(), Some(samples), "{graph}");
    assert_eq!(graph["hosts"][0]["host"], h.platform.host_id.as_str());
    assert_eq!(graph["hosts"][0]["samples"].as_u64(), Some(samples));

    // Every other format, with its content type.
    for (format, content_type) in [
        ("folded", "text/plain; charset=utf-8"),
        ("svg", "image/svg+xml"),
        ("pprof", "application/octet-stream"),
        ("speedscope", "application/json"),
    ] {
        let response = h
            .platform
            .http()
            .get(format!(
                "{}{run}/flamegraph?format={format}",
                h.platform.api_url
            ))
            .bearer_auth(&h.platform.token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{format}");
        assert_eq!(response.headers()["content-type"], content_type, "{format}");
        let body = response.bytes().await.unwrap();
        assert!(!body.is_empty(), "{format}");
        if format == "folded" {
            let text = String::from_utf8(body.to_vec()).unwrap();
            let counted: u64 = text
                .lines()
                .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
                .sum();
            assert_eq!(counted, samples, "folded stacks count every sample");
            assert!(text.contains("demo_hot"), "{text}");
        }
    }

    // Functions, hosts and windows.
    let top = admin
        .call(Method::GET, &format!("{run}/top?limit=3"), None, 200)
        .await
        .unwrap();
    assert_eq!(top["samples"].as_u64(), Some(samples));
    assert_eq!(top["hosts"], 1);
    assert_eq!(top["functions"][0]["function"], "demo_hot", "{top}");
    assert!(top["functions"].as_array().unwrap().len() <= 3);
    let hosts = admin
        .call(Method::GET, &format!("{run}/hosts"), None, 200)
        .await
        .unwrap();
    let listed = hosts["hosts"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{hosts}");
    assert_eq!(listed[0]["host"], h.platform.host_id.as_str());
    assert_eq!(listed[0]["samples"].as_u64(), Some(samples));
    assert_eq!(listed[0]["labels"]["version"], "v1", "{hosts}");
    assert_eq!(listed[0]["profile_id"], members[0].as_str());
    assert_eq!(listed[0]["top"][0]["function"], "demo_hot", "{hosts}");
    // One host has no peers to differ from.
    assert_eq!(listed[0]["df"], 0);
    assert_eq!(listed[0]["outlier"], false);
    assert_eq!(hosts["outliers"], json!([]));
    let timeline = admin
        .call(Method::GET, &format!("{run}/timeline"), None, 200)
        .await
        .unwrap();
    let windows = timeline["windows"].as_array().unwrap();
    assert!(!windows.is_empty(), "{timeline}");
    assert!(windows
        .iter()
        .all(|w| w["host"] == h.platform.host_id.as_str()));
    // The run's coverage sums its members' windows: the native demo's
    // CPU time says what to expect, and nearly all of it was captured.
    let coverage = &timeline["coverage"];
    let window_sum =
        |field: &str| -> i64 { windows.iter().map(|w| w[field].as_i64().unwrap_or(0)).sum() };
    assert_eq!(coverage["captured"].as_i64(), Some(window_sum("samples")));
    assert_eq!(coverage["expected"].as_i64(), Some(window_sum("expected")));
    let expected = coverage["expected"].as_f64().expect("expected samples");
    assert!(
        coverage["captured"].as_f64().unwrap() >= 0.9 * expected,
        "{coverage}"
    );

    // The run against itself, and a stratum of it against the whole:
    // nothing moves.
    for query in [
        format!("baseline_run={id}&target_run={id}"),
        format!("baseline_run={id}&baseline_labels=version:v1&target_run={id}"),
    ] {
        let diff = admin
            .call(Method::GET, &format!("/api/v1/diff?{query}"), None, 200)
            .await
            .unwrap_or_else(|e| panic!("{query}: {e}"));
        assert_eq!(diff["baseline"]["samples"].as_u64(), Some(samples));
        assert_eq!(diff["target"]["samples"].as_u64(), Some(samples));
        let changes = diff["changes"].as_array().unwrap();
        assert!(!changes.is_empty(), "{diff}");
        for change in changes {
            assert_eq!(change["delta_self_points"].as_f64(), Some(0.0), "{change}");
            assert_eq!(change["delta_total_points"].as_f64(), Some(0.0), "{change}");
        }
        assert_eq!(diff["root"]["baseline_total"], diff["root"]["target_total"]);
    }
    let svg = admin
        .request(
            Method::GET,
            &format!("/api/v1/diff?baseline_run={id}&target_run={id}&format=svg"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(svg.status, 200, "{}", svg.text);

    // Bad parameters: 422 with a message; an unknown run: 404.
    let other = uuid::Uuid::new_v4();
    for path in [
        format!("{run}/flamegraph?format=png"),
        format!("{run}/flamegraph?max_nodes=0"),
        format!("{run}/flamegraph?include=("),
        format!("{run}/flamegraph?format=json&format=svg"),
        format!("{run}/flamegraph?since=2026-01-01T00:00:00Z"),
        format!("{run}/top?limit=0"),
        format!("{run}/hosts?alpha=2"),
        format!("{run}/hosts?top_k=0"),
        format!("/api/v1/diff?baseline_labels=version:v1&target_run={id}"),
        format!("/api/v1/diff?baseline_run={id}&baseline={id}&target_run={id}"),
        format!("/api/v1/diff?baseline_run={id}&target_run={id}&target_labels=version"),
        format!("/api/v1/diff?baseline_run={id}&target_run={id}&target_labels=version:v9"),
    ] {
        let reply = admin.request(Method::GET, &path, None).await.unwrap();
        assert_eq!(reply.status, 422, "{path}: {}", reply.text);
        assert!(
            reply.body["error"]["message"].is_string(),
            "{path}: {}",
            reply.text
        );
    }
    for path in [
        format!("/api/v1/runs/{other}/flamegraph"),
        format!("/api/v1/runs/{other}/hosts"),
        format!("/api/v1/runs/{other}/timeline"),
        format!("/api/v1/diff?baseline_run={other}&target_run={id}"),
    ] {
        let reply: Value = admin
            .request(Method::GET, &path, None)
            .await
            .map(|r| json!({"status": r.status, "text": r.text}))
            .unwrap();
        assert_eq!(reply["status"], 404, "{path}: {reply}");
    }
}
