//! The api-server's memory under a burst of large reads (issue 27,
//! finding 5): a profile as large as the import limits allow (200,000
//! distinct stacks, ~404,000 distinct frames by default) is imported twice,
//! then 20 concurrent SVG flame graphs and 20 concurrent diffs of the two
//! are asked for. Prints the api-server's RSS (`/proc/PID/status` VmRSS,
//! and VmHWM, its peak) before the burst, at its peak, and 10 s after,
//! with the answers' statuses. Prints, asserts nothing.
//!
//! Run by hand: `cargo build --release --bins && cargo bench -p odp-tests
//! --bench read_memory`. The api-server's limits come from this process'
//! environment (`ODP_HEAVY_READS`, `ODP_HEAVY_READ_WAIT_MS`,
//! `ODP_READ_MAX_NODES`, `ODP_READ_MAX_OUTPUT_BYTES`,
//! `ODP_IMPORT_MAX_STACKS`, `ODP_IMPORT_MAX_FRAMES`), so e.g.
//! `ODP_HEAVY_READS=1024 ODP_HEAVY_READ_WAIT_MS=60000` shows the burst
//! without the concurrency limit.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use odp_devstack::{Platform, PlatformOptions, Stack, StackEndpoints, StackOptions};

const KNOBS: [&str; 6] = [
    "ODP_HEAVY_READS",
    "ODP_HEAVY_READ_WAIT_MS",
    "ODP_READ_MAX_NODES",
    "ODP_READ_MAX_OUTPUT_BYTES",
    "ODP_IMPORT_MAX_STACKS",
    "ODP_IMPORT_MAX_FRAMES",
];
const CONCURRENT: usize = 20;

/// `stacks` distinct stacks of 4 frames, two of them unique to the stack:
/// `2 * stacks + 4,160` distinct frames.
fn folded(stacks: usize, seed: usize) -> String {
    let mut out = String::with_capacity(stacks * 90);
    for i in 0..stacks {
        let count = 1 + (i * 7 + seed) % 13;
        out.push_str(&format!(
            "svc::mod{}::handler;svc::mid{}::step;leaf_fn_{i}_a;leaf_fn_{i}_b {count}\n",
            i % 64,
            i % 4096
        ));
    }
    out
}

/// VmRSS and VmHWM of `pid`, in MiB.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Sends `CONCURRENT` GETs of `path` at once while sampling the RSS every
/// 50 ms; prints statuses, bytes, time and the peak.
async fn burst(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    pid: u32,
    what: &str,
    path: &str,
) {
    let (rss_before, _) = memory(pid);
    let peak = Arc::new(AtomicU64::new(rss_before));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn({
        let (peak, done) = (peak.clone(), done.clone());
        async move {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(memory(pid).0, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    let started = Instant::now();
    let mut reads = tokio::task::JoinSet::new();
    for _ in 0..CONCURRENT {
        let (client, url, token) = (client.clone(), format!("{base}{path}"), token.to_owned());
        reads.spawn(async move {
            let t = Instant::now();
            match client.get(url).bearer_auth(token).send().await {
                Ok(r) => {
                    let status = r.status().as_u16().to_string();
                    let bytes = r.bytes().await.map_or(0, |b| b.len());
                    (status, bytes, t.elapsed())
                }
                Err(e) => (format!("error ({e})"), 0, t.elapsed()),
            }
        });
    }
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    let (mut bytes, mut slowest) = (0, Duration::ZERO);
    for (status, b, took) in reads.join_all().await {
        *statuses.entry(status).or_default() += 1;
        bytes = bytes.max(b);
        slowest = slowest.max(took);
    }
    done.store(true, Ordering::Relaxed);
    sampler.await.unwrap();
    let (rss_after, hwm) = memory(pid);
    println!(
        "{what}: {CONCURRENT} at once in {:.1} s (slowest {:.1} s), statuses {statuses:?}, \
         largest answer {:.1} MB; RSS {rss_before} MiB before, {} MiB sampled peak, \
         {rss_after} MiB at the end, VmHWM {hwm} MiB",
        started.elapsed().as_secs_f64(),
        slowest.as_secs_f64(),
        bytes as f64 / 1e6,
        peak.load(Ordering::Relaxed),
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let stack = Stack::start(StackOptions::ephemeral())
        .await
        .expect("start the stack");
    let endpoints = StackEndpoints {
        kafka_bootstrap: stack.kafka_bootstrap().to_owned(),
        database_url: stack.database_url().to_owned(),
        topics: stack.topics().clone(),
    };
    let mut options = PlatformOptions::new(stack.state_dir(), "bench-host");
    options.with_agent = false;
    options
        .api_env
        .push(("ODP_REQUEST_TIMEOUT_SECS".into(), "600".into()));
    for knob in KNOBS {
        if let Ok(value) = std::env::var(knob) {
            println!("{knob}={value}");
            options.api_env.push((knob.into(), value));
        }
    }
    let platform = Platform::start(&endpoints, options)
        .await
        .expect("start the services");
    let pid = platform.api.pid();
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&platform.ca_pem).unwrap())
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();
    let (base, token) = (platform.api_url.as_str(), platform.token.as_str());

    let stacks: usize = std::env::var("ODP_IMPORT_MAX_STACKS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let mut ids = Vec::new();
    for seed in [0, 5] {
        let body = folded(stacks, seed);
        let size = body.len();
        let started = Instant::now();
        let response = client
            .post(format!(
                "{base}/api/v1/profiles/import?service=bench&format=folded"
            ))
            .bearer_auth(token)
            .header("content-type", "text/plain")
            .body(body)
            .send()
            .await
            .expect("import");
        let status = response.status();
        let profile: serde_json::Value = response.json().await.unwrap_or_default();
        assert!(status.is_success(), "import: {status} {profile}");
        println!(
            "imported {stacks} stacks, {} frames ({:.1} MB folded) in {:.1} s",
            2 * stacks + 64 + 4096,
            size as f64 / 1e6,
            started.elapsed().as_secs_f64()
        );
        ids.push(profile["id"].as_str().unwrap().to_owned());
    }
    let over = folded(stacks + 1, 1);
    let refused = client
        .post(format!(
            "{base}/api/v1/profiles/import?service=bench&format=folded"
        ))
        .bearer_auth(token)
        .body(over)
        .send()
        .await
        .expect("import");
    println!("import of {} stacks: {}", stacks + 1, refused.status());

    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss, hwm) = memory(pid);
    println!("idle after imports: RSS {rss} MiB, VmHWM {hwm} MiB");
    let (a, b) = (&ids[0], &ids[1]);
    burst(
        &client,
        base,
        token,
        pid,
        "SVG flame graphs",
        &format!("/api/v1/profiles/{a}/flamegraph?format=svg"),
    )
    .await;
    burst(
        &client,
        base,
        token,
        pid,
        "diffs (JSON, default max_nodes)",
        &format!("/api/v1/diff?baseline={a}&target={b}"),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let (rss, hwm) = memory(pid);
    println!("10 s after the bursts: RSS {rss} MiB, VmHWM {hwm} MiB");
}
