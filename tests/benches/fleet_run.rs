//! A run over a simulated fleet: `ODP_FLEET_HOSTS` (default 1,000)
//! simulated hosts ([`odp_devstack::fleet::FleetSim`]: real heartbeats,
//! signed commands verified per host, real captured windows) beside the
//! stack (Tansu, Postgres, the api-server and pipeline binaries of this
//! build profile: release under `cargo bench`), one service on every host,
//! and one run over all of them, `ODP_FLEET_SECS` (default 30) s at 99 Hz
//! with 10 s windows. Prints:
//!
//! - the time to publish every start command (the run's `POST`, which
//!   returns once the broker has them all, and the last command's
//!   publish time as its record says);
//! - command receive latency percentiles (the record's Kafka timestamp to
//!   its arrival at the simulated host);
//! - acknowledgement latency percentiles (the run's start to each
//!   member's `running` status as `GET /api/v1/runs/{id}` reports it,
//!   polled every 250 ms);
//! - the run's end, its samples against what the hosts sent, and the read
//!   time of its aggregate (`/precision`) and of the service's aggregate
//!   with per-host breakdown (`/api/v1/aggregate`).
//!
//! Run by hand after `cargo build --release --bins`: `cargo bench -p
//! odp-tests --bench fleet_run`; a quick check in debug mode:
//! `ODP_FLEET_HOSTS=100 cargo test -p odp-tests --bench fleet_run`.
//! Prints figures, asserts nothing about time.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use odp_devstack::fleet::{FleetOptions, FleetSim, SimHost};
use odp_devstack::{ApiClient, Platform, PlatformOptions, Stack, StackEndpoints, StackOptions};
use reqwest::Method;
use serde_json::{json, Value};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// p50, p90, p99 and max of `values` (ms), as one line.
fn percentiles(mut values: Vec<f64>) -> String {
    if values.is_empty() {
        return "no values".into();
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    format!(
        "n={} p50={:.0} ms p90={:.0} ms p99={:.0} ms max={:.0} ms",
        values.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        values[values.len() - 1]
    )
}

fn urlencode(text: &str) -> String {
    text.replace('+', "%2B").replace(':', "%3A")
}

async fn get(client: &ApiClient, path: &str) -> Value {
    client
        .call(Method::GET, path, None, 200)
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// Times one GET (the best of three).
async fn timed(client: &ApiClient, path: &str) -> (Duration, Value) {
    let mut best = Duration::MAX;
    let mut body = Value::Null;
    for _ in 0..3 {
        let started = Instant::now();
        body = get(client, path).await;
        best = best.min(started.elapsed());
    }
    (best, body)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let hosts = env_number("ODP_FLEET_HOSTS", 1000) as usize;
    let secs = env_number("ODP_FLEET_SECS", 30);
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("fleet run: {hosts} simulated hosts, {secs} s at 99 Hz, 10 s windows ({profile})");
    let stack = Stack::start(StackOptions::ephemeral())
        .await
        .expect("start the stack (is tansu installed? see README)");
    let endpoints = StackEndpoints {
        kafka_bootstrap: stack.kafka_bootstrap().to_owned(),
        database_url: stack.database_url().to_owned(),
        topics: stack.topics().clone(),
    };
    let mut options = PlatformOptions::new(stack.state_dir(), "bench-host");
    options.with_agent = false;
    // Commands live long enough for a slow machine to deliver all of them.
    options.start_ack_timeout_secs = Some(300);
    let platform = Platform::start(&endpoints, options)
        .await
        .expect("start the services");
    let admin = platform.client();
    let pem = std::fs::read_to_string(&platform.signing_key).expect("the command signing key");
    let fleet = FleetOptions::new(
        stack.kafka_bootstrap(),
        stack.topics(),
        &pem,
        SimHost::numbered("bench-", hosts, &["checkout"]),
    )
    .expect("the fleet fixtures");
    let sim = FleetSim::start(fleet).await.expect("start the simulator");

    admin
        .call(
            Method::POST,
            "/api/v1/services",
            Some(&json!({"name": "checkout", "process_name": "checkout"})),
            201,
        )
        .await
        .expect("define the service");
    let waiting = Instant::now();
    loop {
        let found = get(&admin, "/api/v1/services/checkout/hosts").await;
        let live = found["hosts"].as_array().map_or(0, Vec::len);
        if live >= hosts {
            break;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(300),
            "{live} of {hosts} hosts live after 5 min: {:?}\n{}",
            sim.stats(),
            platform.logs()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!(
        "all {hosts} hosts live (synced and heartbeating) {:.1} s after the service was defined",
        waiting.elapsed().as_secs_f64()
    );

    let before = sim.command_latencies().len();
    let started_ms = chrono::Utc::now().timestamp_millis();
    let started = Instant::now();
    let post = tokio::spawn({
        let admin = admin.clone();
        let body = json!({
            "service": "checkout", "hosts": "all", "duration_secs": secs,
            "frequency_hz": 99, "window_secs": 10,
        });
        async move {
            let run = admin
                .call(Method::POST, "/api/v1/runs", Some(&body), 202)
                .await
                .expect("start the run");
            (run, started.elapsed())
        }
    });

    // Acknowledgements: when each member first shows `running`, polled
    // while the POST still publishes (the run is listed, with the members
    // started so far, from its first command on).
    let mut running_at: HashMap<String, i64> = HashMap::new();
    let mut post = Some(post);
    let mut id = None;
    let mut run_view;
    loop {
        if post.as_ref().is_some_and(|p| p.is_finished()) {
            let (run, posted) = post.take().unwrap().await.expect("the POST task");
            let members = run["members"].as_array().map_or(0, Vec::len);
            println!(
                "POST /api/v1/runs (every start command published): {:.2} s for {members} members",
                posted.as_secs_f64()
            );
            id = Some(run["id"].as_str().unwrap().to_owned());
        }
        run_view = match &id {
            Some(id) => get(&admin, &format!("/api/v1/runs/{id}")).await,
            None => {
                let listed = get(&admin, "/api/v1/runs?service=checkout&limit=1").await;
                listed["runs"].get(0).cloned().unwrap_or(Value::Null)
            }
        };
        let now_ms = chrono::Utc::now().timestamp_millis();
        for member in run_view["members"].as_array().into_iter().flatten() {
            let status = member["status"].as_str().unwrap_or("");
            if matches!(status, "running" | "finished" | "stopped") {
                let host = member["host"].as_str().unwrap_or("").to_owned();
                running_at.entry(host).or_insert(now_ms);
            }
        }
        // Ended, and recorded so by the run watcher.
        let ended = id.is_some() && !run_view["ended_at"].is_null();
        if ended || started.elapsed() > Duration::from_secs(secs + 600) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let path = format!("/api/v1/runs/{}", id.expect("the run's id"));
    let run_took = started.elapsed();

    let starts: Vec<_> = sim.command_latencies()[before..]
        .iter()
        .filter(|c| c.kind == "start")
        .cloned()
        .collect();
    let last_published = starts.iter().map(|c| c.published_ms).max().unwrap_or(0);
    println!(
        "last start command published {:.2} s after the POST began ({} received)",
        (last_published - started_ms) as f64 / 1000.0,
        starts.len()
    );
    println!(
        "command receive latency (published → received): {}",
        percentiles(
            starts
                .iter()
                .map(|c| c.latency().as_secs_f64() * 1000.0)
                .collect()
        )
    );
    println!(
        "command arrival after the POST began: {}",
        percentiles(
            starts
                .iter()
                .map(|c| (c.received_ms - started_ms) as f64)
                .collect()
        )
    );
    let sim_acks: Vec<f64> = sim
        .profiles()
        .iter()
        .filter_map(|p| p.acked_ms)
        .filter(|at| *at >= started_ms)
        .map(|at| (at - started_ms) as f64)
        .collect();
    println!(
        "profile_started acknowledged by the broker, after the POST began: {}",
        percentiles(sim_acks)
    );
    println!(
        "acknowledgement latency (POST began → member `running` in the API, 250 ms polls): {}",
        percentiles(
            running_at
                .values()
                .map(|at| (at - started_ms) as f64)
                .collect()
        )
    );
    let published: HashMap<&str, i64> = starts
        .iter()
        .map(|c| (c.host.as_str(), c.published_ms))
        .collect();
    println!(
        "acknowledgement latency (member's start published → `running` in the API): {}",
        percentiles(
            running_at
                .iter()
                .filter_map(|(host, at)| Some((at - published.get(host.as_str())?) as f64))
                .collect()
        )
    );
    println!(
        "run ended `{}` (recorded) {:.1} s after the POST began ({})",
        run_view["status"].as_str().unwrap_or("?"),
        run_took.as_secs_f64(),
        run_view["status_reason"].as_str().unwrap_or("")
    );

    // Let the last windows land before reading.
    let sent = sim.stats();
    let mut read_samples = 0;
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_secs(120) {
        let precision = get(&admin, &format!("{path}/precision")).await;
        read_samples = precision["decision"]["samples_used"].as_u64().unwrap_or(0);
        if read_samples >= sent.samples_sent {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!(
        "samples: sent {} in {} windows, the run recorded {}, its aggregate reads {read_samples}",
        sent.samples_sent, sent.snapshots_sent, run_view["samples_used"]
    );
    let (took, precision) = timed(&admin, &format!("{path}/precision")).await;
    println!(
        "run aggregate read (GET /api/v1/runs/{{id}}/precision, {} hosts): {:.0} ms",
        precision["decision"]["hosts"],
        took.as_secs_f64() * 1000.0
    );
    // The run's own reads, where this build serves them.
    for read in ["flamegraph", "hosts"] {
        let read_path = format!("{path}/{read}");
        let answer = admin.request(Method::GET, &read_path, None).await;
        if !matches!(&answer, Ok(a) if a.status == 200) {
            println!("GET /api/v1/runs/{{id}}/{read}: not served here");
            continue;
        }
        let (took, body) = timed(&admin, &read_path).await;
        println!(
            "run {read} read (GET /api/v1/runs/{{id}}/{read}, {} samples): {:.0} ms",
            body["samples"],
            took.as_secs_f64() * 1000.0
        );
    }
    let since = chrono::DateTime::from_timestamp_millis(started_ms - 60_000)
        .unwrap()
        .to_rfc3339();
    let until = (chrono::Utc::now() + chrono::Duration::minutes(1)).to_rfc3339();
    let aggregate = format!(
        "/api/v1/aggregate?service=checkout&since={}&until={}",
        urlencode(&since),
        urlencode(&until)
    );
    let (took, body) = timed(&admin, &aggregate).await;
    println!(
        "service aggregate read (GET /api/v1/aggregate, per-host breakdown of {} hosts, {} samples): {:.0} ms",
        body["hosts"].as_array().map_or(0, Vec::len),
        body["samples"],
        took.as_secs_f64() * 1000.0
    );
    println!("simulator: {:?}", sim.stats());
    sim.stop();
    drop(platform);
    stack.stop().expect("stop the stack");
}
