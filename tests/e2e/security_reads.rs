//! Attacks on the running stack: see issue 27. Finding 5: any viewer
//! could exhaust the api-server's memory with large reads (20 concurrent
//! SVGs of a profile of 10^6 frames; a diff of it, unbounded by
//! `max_nodes`). Reads that decode whole profiles now take turns (503 with
//! `Retry-After` when the turns are taken), diffs are cut to `max_nodes`,
//! and imports are refused past the operator's stack and frame limits.

use reqwest::StatusCode;
use serde_json::Value;

use crate::common;

/// Distinct stacks the harness's api-server takes in one import.
const MAX_STACKS: usize = 20_000;
/// Distinct frames it takes.
const MAX_FRAMES: usize = 30_000;

/// `stacks` distinct stacks `main;mod{i % 50};fn_{i}` (so `stacks + 51`
/// distinct frames), with counts varied by `seed`.
fn wide_profile(stacks: usize, seed: usize) -> String {
    let mut out = String::with_capacity(stacks * 32);
    for i in 0..stacks {
        let count = 1 + (i * 7 + seed) % 13;
        out.push_str(&format!("main;mod{};fn_{i} {count}\n", i % 50));
    }
    out
}

async fn import(h: &common::Harness, service: &str, body: String) -> (StatusCode, Value) {
    let response = h
        .platform
        .http()
        .post(format!(
            "{}/api/v1/profiles/import?service={service}&format=folded",
            h.platform.api_url
        ))
        .bearer_auth(&h.platform.token)
        .header("content-type", "text/plain")
        .body(body)
        .send()
        .await
        .expect("send the import");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get(h: &common::Harness, path: &str) -> reqwest::Response {
    h.platform
        .http()
        .get(format!("{}{path}", h.platform.api_url))
        .bearer_auth(&h.platform.token)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

fn count_nodes(node: &Value) -> usize {
    1 + node["children"]
        .as_array()
        .map_or(0, |c| c.iter().map(count_nodes).sum())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_reads_are_bounded_and_take_turns() {
    let h = common::start_configured("secreads", |options| {
        options.with_agent = false;
        options.api_env = vec![
            ("ODP_HEAVY_READS".into(), "1".into()),
            ("ODP_HEAVY_READ_WAIT_MS".into(), "0".into()),
            ("ODP_IMPORT_MAX_STACKS".into(), MAX_STACKS.to_string()),
            ("ODP_IMPORT_MAX_FRAMES".into(), MAX_FRAMES.to_string()),
        ];
    })
    .await;

    // Imports past the operator's limits are refused, and say which.
    let (status, body) = import(&h, "checkout", wide_profile(MAX_STACKS + 1, 0)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["code"], "too_large", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("ODP_IMPORT_MAX_STACKS"), "{message}");
    let many_frames: String = (0..MAX_FRAMES / 3 + 1)
        .map(|i| format!("a{i};b{i};c{i};d{i} 1\n"))
        .collect();
    let (status, body) = import(&h, "checkout", many_frames).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("ODP_IMPORT_MAX_FRAMES")));

    // At the limit, the import is taken.
    let (status, baseline) = import(&h, "checkout", wide_profile(MAX_STACKS, 0)).await;
    assert_eq!(status, StatusCode::CREATED, "{baseline}");
    let (status, target) = import(&h, "checkout", wide_profile(MAX_STACKS, 5)).await;
    assert_eq!(status, StatusCode::CREATED, "{target}");
    let (baseline, target) = (
        baseline["id"].as_str().unwrap().to_owned(),
        target["id"].as_str().unwrap().to_owned(),
    );

    // A diff is cut to `max_nodes`, with every total exact.
    let max_nodes = 100;
    let response = get(
        &h,
        &format!("/api/v1/diff?baseline={baseline}&target={target}&max_nodes={max_nodes}"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let diff: Value = response.json().await.unwrap();
    let nodes = count_nodes(&diff["root"]);
    assert!(
        nodes <= max_nodes + 1,
        "{nodes} nodes for max_nodes={max_nodes}"
    );
    let main = &diff["root"]["children"][0];
    assert_eq!(main["name"], "main");
    assert_eq!(main["baseline_total"], diff["baseline"]["samples"]);
    assert_eq!(main["target_total"], diff["target"]["samples"]);
    let children = main["children"].as_array().unwrap();
    assert_eq!(
        children
            .iter()
            .map(|c| c["baseline_total"].as_u64().unwrap())
            .sum::<u64>(),
        main["baseline_total"].as_u64().unwrap(),
        "cut children add up in `other`s"
    );
    // Without `max_nodes`, the default budget still bounds it (the whole
    // diff would have over 20,000 nodes).
    let response = get(
        &h,
        &format!("/api/v1/diff?baseline={baseline}&target={target}"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let diff: Value = response.json().await.unwrap();
    assert!(count_nodes(&diff["root"]) <= 8192 + 1);

    // One heavy read at a time, and no wait: concurrent SVGs get 503 with
    // `Retry-After` and a JSON error, never a 500; the others succeed.
    let mut saw_busy = false;
    for _round in 0..5 {
        let mut reads = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let (http, token) = (h.platform.http(), h.platform.token.clone());
            let url = format!(
                "{}/api/v1/profiles/{baseline}/flamegraph?format=svg",
                h.platform.api_url
            );
            reads.spawn(async move {
                let response = http.get(url).bearer_auth(token).send().await.unwrap();
                let status = response.status();
                let retry_after = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .map(|v| v.to_str().unwrap().to_owned());
                (status, retry_after, response.text().await.unwrap())
            });
        }
        let answers = reads.join_all().await;
        let mut ok = 0;
        for (status, retry_after, body) in answers {
            match status {
                StatusCode::OK => {
                    ok += 1;
                    assert!(body.contains("<svg"), "an SVG");
                }
                StatusCode::SERVICE_UNAVAILABLE => {
                    saw_busy = true;
                    assert!(retry_after.is_some(), "503 without Retry-After");
                    let error: Value = serde_json::from_str(&body).expect("a JSON error");
                    assert_eq!(error["error"]["code"], "unavailable", "{error}");
                    assert!(
                        error["error"]["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("busy")),
                        "{error}"
                    );
                }
                other => panic!("{other}: {body}"),
            }
        }
        assert!(ok >= 1, "some read had its turn");
        if saw_busy {
            break;
        }
    }
    assert!(
        saw_busy,
        "8 concurrent SVGs with one turn: some must be refused"
    );
}
