//! Queries across profiles against the real stack: a service's flame graph
//! aggregated over hosts and a time range (with host, thread and frame
//! filters), diffs of profiles and aggregates, and a profile's timeline.
//! The data are crafted snapshots published straight to the stacks topic,
//! so every expected count is known exactly.

use std::time::Duration;

use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame};
use odp_devstack::{mint_scoped_token, workspace_binary, ApiClient};
use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use crate::common;

/// 2026-11-01T00:00:00Z: the crafted windows start here.
const T0_MS: i64 = 1_793_491_200_000;
const T0: &str = "2026-11-01T00:00:00Z";
const HOUR_LATER: &str = "2026-11-01T01:00:00Z";

/// One crafted window: `(frames, tid, count)` stacks, thread names.
struct Window<'a> {
    profile: Uuid,
    host: &'a str,
    sequence: u64,
    offset_secs: i64,
    event: EventKind,
    stacks: &'a [(&'a [&'a str], u32, u64)],
}

fn snapshot(w: &Window<'_>) -> Vec<u8> {
    let mut builder = SnapshotBuilder::new();
    for (frames, tid, count) in w.stacks {
        let frames: Vec<Frame> = frames.iter().map(|f| Frame::function(*f)).collect();
        builder.add(&frames, *tid, *count);
    }
    for (tid, name) in [(1, "worker-1"), (2, "gc"), (3, "worker-2")] {
        builder.name_thread(tid, name);
    }
    let start = T0_MS + w.offset_secs * 1000;
    builder
        .build(SnapshotHeader {
            profile_id: w.profile,
            host: w.host.into(),
            agent_id: format!("agent-{}", w.host),
            sequence: w.sequence,
            window_start_ms: start,
            window_end_ms: start + 10_000,
            event: w.event,
            period: 10_101_010,
            frequency_hz: 99,
        })
        .encode()
}

fn odpctl(h: &common::Harness, token: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(workspace_binary("odpctl").expect("odpctl is built"))
        .args(["--api-url", &h.platform.api_url, "--token", token])
        .arg("--cacert")
        .arg(&h.platform.ca_path)
        .args(args)
        .output()
        .expect("run odpctl")
}

async fn create_profile(client: &ApiClient, host: &str, pid: u32, service: &str) -> Uuid {
    let body =
        serde_json::json!({"host": host, "pid": pid, "service": service, "duration_secs": 30});
    client
        .start_profile(&body)
        .await
        .expect("create a profile")
        .id
}

async fn get(client: &ApiClient, path: &str) -> (u16, Value, String) {
    let reply = client.request(Method::GET, path, None).await.unwrap();
    (reply.status, reply.body, reply.text)
}

async fn ok(client: &ApiClient, path: &str) -> Value {
    let (status, body, text) = get(client, path).await;
    assert_eq!(status, 200, "{path}: {text}");
    body
}

fn aggregate_path(query: &str) -> String {
    format!("/api/v1/aggregate?service=checkout&since={T0}&until={HOUR_LATER}{query}")
}

/// `name -> total` of the children of the tree's single `main` node.
fn leaves(root: &Value) -> Vec<(String, u64)> {
    let main = &root["children"][0];
    assert_eq!(main["name"], "main", "{root}");
    main["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["total"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|(n, c)| (n.to_string(), *c)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregates_filters_diffs_and_timelines() {
    let h = common::start_without_agent("aggregate").await;
    let admin = h.platform.client();
    let viewer_token = mint_scoped_token(&h.platform.jwt_secret, "reader", "viewer", &[]).unwrap();
    let viewer = h.platform.client_for(&viewer_token);
    let anonymous = h.platform.client_for("");

    let on_a = create_profile(&admin, "agg-a", 101, "checkout").await;
    let on_b = create_profile(&admin, "agg-b", 102, "checkout").await;
    let late = create_profile(&admin, "agg-a", 103, "checkout").await;
    let other = create_profile(&admin, "agg-a", 104, "search").await;
    let alloc = create_profile(&admin, "agg-a", 105, "heap").await;
    let cpu = EventKind::CpuClock;
    let windows = [
        // host a: hot 60 on worker-1, gc 20 on the gc thread.
        Window {
            profile: on_a,
            host: "agg-a",
            sequence: 0,
            offset_secs: 0,
            event: cpu,
            stacks: &[(&["main", "hot"], 1, 60), (&["main", "gc"], 2, 20)],
        },
        // host b, two windows, the later one published first.
        Window {
            profile: on_b,
            host: "agg-b",
            sequence: 1,
            offset_secs: 20,
            event: cpu,
            stacks: &[(&["main", "warm"], 3, 10)],
        },
        Window {
            profile: on_b,
            host: "agg-b",
            sequence: 0,
            offset_secs: 10,
            event: cpu,
            stacks: &[(&["main", "hot"], 1, 30)],
        },
        // A day later: outside every range queried below.
        Window {
            profile: late,
            host: "agg-a",
            sequence: 0,
            offset_secs: 86_400,
            event: cpu,
            stacks: &[(&["main", "hot"], 1, 1000)],
        },
        // Another service on the same host.
        Window {
            profile: other,
            host: "agg-a",
            sequence: 0,
            offset_secs: 0,
            event: cpu,
            stacks: &[(&["main", "search"], 1, 50)],
        },
        Window {
            profile: alloc,
            host: "agg-a",
            sequence: 0,
            offset_secs: 0,
            event: EventKind::AllocBytes,
            stacks: &[(&["main", "malloc"], 1, 4096)],
        },
    ];
    let producer = common::producer(h.stack.kafka_bootstrap());
    let topic = h.stack.topics().stacks.clone();
    let agents = [
        ("agg-a", common::agent_identity(&h, "agg-a")),
        ("agg-b", common::agent_identity(&h, "agg-b")),
    ];
    for w in &windows {
        let (_, agent) = agents
            .iter()
            .find(|(host, _)| *host == w.host)
            .expect("an agent for each host");
        let key = w.profile.to_string();
        common::send_signed(&h, &producer, agent, &topic, &key, &snapshot(w)).await;
    }
    let pool = h.pool().await;
    h.wait_count(
        &pool,
        "select count(*) from snapshots where host like $1",
        "agg-%",
        windows.len() as i64,
        Duration::from_secs(60),
    )
    .await;

    // The whole service: both hosts, two levels merged.
    let all = ok(&viewer, &aggregate_path("")).await;
    assert_eq!(all["service"], "checkout");
    assert_eq!(all["event"], "cpu-clock");
    assert_eq!(all["samples"], 120, "{all}");
    assert_eq!(all["profiles"], 2, "the late profile is out of range");
    assert_eq!(all["root"]["total"], 120);
    assert_eq!(
        leaves(&all["root"]),
        pairs(&[("gc", 20), ("hot", 90), ("warm", 10)])
    );
    let hosts: Vec<(String, u64, u64)> = all["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["host"].as_str().unwrap().to_owned(),
                h["samples"].as_u64().unwrap(),
                h["profiles"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        hosts,
        [("agg-a".to_owned(), 80, 1), ("agg-b".to_owned(), 40, 1)]
    );

    // The aggregate equals the sum of its hosts, stack by stack.
    let folded = |query: &str| {
        let viewer = viewer.clone();
        let path = aggregate_path(&format!("{query}&format=folded"));
        async move { String::from_utf8(viewer.get_bytes(&path).await.unwrap()).unwrap() }
    };
    let (a, b) = (folded("&host=agg-a").await, folded("&host=agg-b").await);
    let summed = odp_core::folded::to_folded(
        &[
            odp_core::folded::parse_folded(&a).unwrap(),
            odp_core::folded::parse_folded(&b).unwrap(),
        ]
        .concat(),
    );
    assert_eq!(folded("").await, summed);
    assert_eq!(summed, "main;gc 20\nmain;hot 90\nmain;warm 10\n");
    assert_eq!(a, "main;gc 20\nmain;hot 60\n");
    let both = ok(&viewer, &aggregate_path("&host=agg-a,agg-b")).await;
    assert_eq!(both["samples"], 120);
    let only_b = ok(&viewer, &aggregate_path("&host=agg-b")).await;
    assert_eq!(only_b["samples"], 40);
    assert_eq!(only_b["hosts"].as_array().unwrap().len(), 1);

    // Threads by exact name or regex; frames included or excluded.
    for (query, samples) in [
        ("&thread=worker-1", 90),
        ("&thread=%5Eworker-", 100),
        ("&thread=nobody", 0),
        ("&include=%5Ehot%24", 90),
        ("&exclude=gc", 100),
        ("&include=main&exclude=hot%7Cwarm", 20),
        ("&thread=worker-1&host=agg-b", 30),
    ] {
        let body = ok(&viewer, &aggregate_path(query)).await;
        assert_eq!(body["samples"], samples, "{query}: {body}");
    }
    let thread = ok(&viewer, &aggregate_path("&thread=worker-1")).await;
    assert_eq!(leaves(&thread["root"]), pairs(&[("hot", 90)]));
    // Windows overlapping the range only: host b's second window.
    let late_range = ok(
        &viewer,
        &format!(
            "/api/v1/aggregate?service=checkout&since=2026-11-01T00:00:25Z&until={HOUR_LATER}"
        ),
    )
    .await;
    assert_eq!(late_range["samples"], 10);
    assert_eq!(leaves(&late_range["root"]), pairs(&[("warm", 10)]));

    // Every export format of the single-profile endpoint.
    let speedscope = ok(&viewer, &aggregate_path("&format=speedscope")).await;
    assert!(speedscope["profiles"].is_array(), "{speedscope}");
    let pprof = viewer
        .get_bytes(&aggregate_path("&format=pprof"))
        .await
        .unwrap();
    let decoded = odp_core::pprof::decode(&pprof, None).expect("a pprof file");
    assert_eq!(odp_core::folded::to_folded(&decoded.stacks), summed);

    // SVG, and what an empty range gives.
    let svg = viewer
        .request(Method::GET, &aggregate_path("&format=svg"), None)
        .await
        .unwrap();
    assert_eq!(svg.status, 200, "{}", svg.text);
    assert!(svg.text.starts_with("<?xml") && svg.text.contains("warm"));
    let empty =
        "/api/v1/aggregate?service=nothing&since=2026-11-01T00:00:00Z&until=2026-11-02T00:00:00Z";
    let body = ok(&viewer, empty).await;
    assert_eq!(
        (body["samples"].as_u64(), body["event"].is_null()),
        (Some(0), true)
    );
    assert_eq!(get(&viewer, &format!("{empty}&format=svg")).await.0, 404);

    // Diff of two profiles: each side normalized by its own total.
    let diff = ok(
        &viewer,
        &format!("/api/v1/diff?baseline={on_a}&target={on_b}"),
    )
    .await;
    assert_eq!(diff["baseline"]["samples"], 80, "{diff}");
    assert_eq!(diff["target"]["samples"], 40);
    assert_eq!(diff["target"]["event"], "cpu-clock");
    let main = &diff["root"]["children"][0];
    assert_eq!(
        (
            main["baseline_total"].as_u64(),
            main["target_total"].as_u64()
        ),
        (Some(80), Some(40))
    );
    let change = |diff: &Value, function: &str| -> Value {
        diff["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["function"] == function)
            .cloned()
            .unwrap_or_else(|| panic!("{function} in {diff}"))
    };
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-9;
    let order: Vec<&str> = diff["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["function"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["gc", "warm", "hot", "main"]);
    assert!(close(&change(&diff, "gc")["delta_total_points"], -25.0));
    assert!(close(&change(&diff, "warm")["delta_total_points"], 25.0));
    assert!(close(&change(&diff, "warm")["target_self_share"], 0.25));
    let hot = change(&diff, "hot");
    assert!(close(&hot["baseline_total_share"], 0.75) && close(&hot["target_total_share"], 0.75));
    assert!(close(&hot["delta_total_points"], 0.0));
    // Each change carries its error: gc's 25 points out of 80 and 40
    // samples (0.25 and 0) are beyond 3 standard errors; hot did not move.
    let gc = change(&diff, "gc");
    let gc_stderr = 100.0 * (0.25f64 * 0.75 / 80.0).sqrt();
    assert!(close(&gc["delta_total_stderr_points"], gc_stderr), "{gc}");
    assert_eq!(
        (gc["significant"].as_bool(), hot["significant"].as_bool()),
        (Some(true), Some(false))
    );

    // An aggregate side against a profile side.
    let mixed = ok(
        &viewer,
        &format!(
            "/api/v1/diff?baseline_service=checkout&baseline_since={T0}\
             &baseline_until={HOUR_LATER}&target={on_b}&limit=2"
        ),
    )
    .await;
    assert_eq!(mixed["baseline"]["samples"], 120);
    assert_eq!(mixed["changes"].as_array().unwrap().len(), 2);
    assert!(close(
        &change(&mixed, "warm")["delta_total_points"],
        25.0 - 100.0 / 12.0
    ));
    let filtered = ok(
        &viewer,
        &format!("/api/v1/diff?baseline={on_a}&target={on_b}&exclude=gc%7Cwarm"),
    )
    .await;
    assert_eq!(
        (
            filtered["baseline"]["samples"].as_u64(),
            filtered["target"]["samples"].as_u64()
        ),
        (Some(60), Some(30))
    );
    let svg = viewer
        .request(
            Method::GET,
            &format!("/api/v1/diff?baseline={on_a}&target={on_b}&format=svg"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(svg.status, 200, "{}", svg.text);
    // Drawn with the target's widths: gc is gone, warm is new.
    assert!(svg.text.starts_with("<?xml") && svg.text.contains("warm"));
    let (status, body, _) = get(
        &viewer,
        &format!("/api/v1/diff?baseline={on_a}&target={alloc}"),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["error"]["message"],
        "cannot compare cpu-clock with alloc-bytes: their samples measure different things"
    );

    // Timeline: host b's windows in time order.
    let timeline = ok(&viewer, &format!("/api/v1/profiles/{on_b}/timeline")).await;
    assert_eq!(timeline["profile_id"], on_b.to_string());
    let windows: Vec<(String, u64)> = timeline["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            assert_eq!(
                (w["host"].as_str(), w["event"].as_str()),
                (Some("agg-b"), Some("cpu-clock"))
            );
            assert_eq!(w["frequency_hz"], 99);
            (
                w["window_start"].as_str().unwrap().to_owned(),
                w["samples"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        windows,
        [
            ("2026-11-01T00:00:10Z".to_owned(), 30),
            ("2026-11-01T00:00:20Z".to_owned(), 10)
        ]
    );

    // The single-profile endpoints take the same filters.
    for (path, samples) in [
        (format!("/api/v1/profiles/{on_a}/flamegraph?thread=gc"), 20),
        (format!("/api/v1/profiles/{on_a}/flamegraph?exclude=gc"), 60),
        (
            format!("/api/v1/profiles/{on_a}/flamegraph?include=%5Ehot%24&thread=worker-1"),
            60,
        ),
        (
            format!("/api/v1/profiles/{on_b}/flamegraph?window_since=2026-11-01T00:00:20Z"),
            10,
        ),
        (
            format!("/api/v1/profiles/{on_b}/flamegraph?window_until=2026-11-01T00:00:20Z"),
            30,
        ),
        (format!("/api/v1/profiles/{on_a}/flamegraph"), 80),
        (format!("/api/v1/profiles/{on_a}/top?thread=worker-1"), 60),
        (
            format!("/api/v1/profiles/{on_b}/top?exclude=hot&limit=5"),
            10,
        ),
    ] {
        let body = ok(&viewer, &path).await;
        assert_eq!(body["samples"], samples, "{path}: {body}");
    }
    let top = ok(
        &viewer,
        &format!("/api/v1/profiles/{on_a}/top?thread=worker-1"),
    )
    .await;
    assert_eq!(top["functions"][0]["function"], "hot");
    assert_eq!(top["functions"][0]["self_share"], 1.0);
    let gc_only = viewer
        .get_bytes(&format!(
            "/api/v1/profiles/{on_a}/flamegraph?format=folded&thread=gc"
        ))
        .await
        .unwrap();
    assert_eq!(String::from_utf8(gc_only).unwrap(), "main;gc 20\n");
    for path in [
        format!("/api/v1/profiles/{on_a}/flamegraph?include=%28"),
        format!("/api/v1/profiles/{on_a}/flamegraph?window_since=noon"),
        format!("/api/v1/profiles/{on_a}/top?window_since=2026-11-02T00:00:00Z&window_until=2026-11-01T00:00:00Z"),
    ] {
        let (status, _, text) = get(&viewer, &path).await;
        assert_eq!(status, 422, "{path}: {text}");
    }

    // odpctl: the change table, the top functions and files.
    let run = |args: &[&str]| tokio::task::block_in_place(|| odpctl(&h, &viewer_token, args));
    let (a_id, b_id) = (on_a.to_string(), on_b.to_string());
    let out = run(&["diff", &a_id, &b_id]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("gc ") && l.contains("-25.0 ±") && l.ends_with('*')),
        "{stdout}"
    );
    let out = run(&[
        "aggregate",
        "--service",
        "checkout",
        "--since",
        T0,
        "--until",
        HOUR_LATER,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout
            .starts_with("120 cpu-clock samples of 2 profiles on 2 hosts (1.21 s of CPU time): agg-a (80), agg-b (40)"),
        "{stdout}"
    );
    let hot_line = stdout
        .lines()
        .find(|l| l.starts_with("hot "))
        .expect("a hot row");
    assert!(hot_line.contains("75.0%"), "{stdout}");
    let svg_path = h.stack.state_dir().join("diff.svg");
    let svg_arg = svg_path.to_str().unwrap();
    let out = run(&["diff", &a_id, &b_id, "--format", "svg", "-o", svg_arg]);
    assert!(out.status.success(), "{out:?}");
    assert!(std::fs::read_to_string(&svg_path)
        .unwrap()
        .starts_with("<?xml"));
    let folded_path = h.stack.state_dir().join("aggregate.folded");
    let folded_arg = folded_path.to_str().unwrap();
    let out = run(&[
        "aggregate",
        "--service",
        "checkout",
        "--since",
        T0,
        "--until",
        HOUR_LATER,
        "--host",
        "agg-a",
        "--format",
        "folded",
        "-o",
        folded_arg,
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&folded_path).unwrap(), a);
    let unknown_id = Uuid::new_v4().to_string();
    assert_eq!(run(&["diff", &a_id, &unknown_id]).status.code(), Some(4));
    let backwards = run(&[
        "aggregate",
        "--service",
        "checkout",
        "--since",
        HOUR_LATER,
        "--until",
        T0,
    ]);
    assert_eq!(backwards.status.code(), Some(2));

    // Who may ask, and bad input.
    let unknown = Uuid::new_v4();
    for path in [
        aggregate_path(""),
        format!("/api/v1/diff?baseline={on_a}&target={on_b}"),
        format!("/api/v1/profiles/{on_b}/timeline"),
    ] {
        assert_eq!(get(&anonymous, &path).await.0, 401, "{path}");
        assert_eq!(get(&admin, &path).await.0, 200, "{path}");
    }
    for (path, want) in [
        ("/api/v1/aggregate?since=2026-11-01T00:00:00Z&until=2026-11-02T00:00:00Z".to_owned(), 422),
        ("/api/v1/aggregate?service=checkout&since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z".to_owned(), 422),
        ("/api/v1/aggregate?service=checkout&since=2026-01-01T00:00:00Z&until=2026-03-01T00:00:00Z".to_owned(), 422),
        ("/api/v1/aggregate?service=checkout&since=today&until=2026-03-01T00:00:00Z".to_owned(), 422),
        (aggregate_path("&include=%28"), 422),
        (aggregate_path("&format=png"), 422),
        (aggregate_path("&host=bad%20host"), 422),
        (aggregate_path("&service=again"), 422),
        (format!("/api/v1/diff?baseline={on_a}"), 422),
        (format!("/api/v1/diff?baseline={on_a}&target={on_b}&target_service=checkout"), 422),
        (format!("/api/v1/diff?baseline={on_a}&target={on_b}&exclude=%5B"), 422),
        (format!("/api/v1/diff?baseline={on_a}&target={on_b}&limit=0"), 422),
        (format!("/api/v1/diff?baseline={on_a}&target=not-a-uuid"), 400),
        (format!("/api/v1/diff?baseline={on_a}&target={unknown}"), 404),
        (format!("/api/v1/profiles/{unknown}/timeline"), 404),
        ("/api/v1/profiles/nope/timeline".to_owned(), 400),
    ] {
        let (status, body, text) = get(&viewer, &path).await;
        assert_eq!(status, want, "{path}: {text}");
        assert!(body["error"]["message"].is_string(), "{path}: {text}");
    }
}
