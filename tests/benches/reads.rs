//! Reads at fleet scale, timed from the user's side through the REST API
//! (HTTPS, the release `odp-api-server` against the real Postgres), each
//! as a ratio to inferno rendering the same stacks in the same run, and
//! storage as a ratio to the same profiles as gzip pprof:
//!
//! 1. one profile of 100,000 distinct stacks (~12 frames of names ~25
//!    characters from 4,000 functions, ~650,000 samples): flame graph JSON
//!    (default node budget), `top`, SVG, folded and pprof;
//! 2. an aggregate of 10 such profiles on 10 hosts;
//! 3. an aggregate of 1,000 instance profiles of one service within one
//!    hour (each 30 s at 99 Hz on 2 threads, stacks drawn from a shared
//!    pool of 20,000), with its per-host breakdown;
//! 4. bytes on disk (tables, indexes, blocks) of the fleet and of the
//!    single profile, against their gzip pprof files;
//! 5. with `ODP_BENCH_PARTS=history` (not run by default: it stores a
//!    month), a service's 30-day history ([`history`]).
//!
//! The baseline is `inferno-flamegraph` when it is on `PATH` (`cargo
//! install inferno --locked`), run on the folded file; else the same
//! inferno code in this process (no process start or file read, so a
//! harder baseline). Run by hand, after `cargo build --release --bins`:
//! `cargo bench -p odp-tests --bench reads`, with `ODP_BENCH_DATABASE=mysql`
//! for the MySQL backend (a private MariaDB). Prints, asserts nothing.

#[path = "reads/history.rs"]
mod history;

use odp_tests::Rng;
use std::path::Path;
use std::time::{Duration, Instant};

use odp_core::pprof::{self, PprofMeta};
use odp_core::WeightedStack;
use odp_devstack::{DatabaseKind, Platform, PlatformOptions, Stack, StackEndpoints, StackOptions};
use odp_store::Database;

const ONE_STACKS: usize = 100_000;
const FUNCTIONS: usize = 4_000;
const FLEET_HOSTS: usize = 1_000;
const FLEET_POOL: usize = 20_000;
/// 30 s at 99 Hz on 2 threads.
const FLEET_SAMPLES: usize = 30 * 99 * 2;
const RUNS: usize = 5;

/// A function name of about 25 characters.
fn function(i: usize) -> String {
    format!("svc::handler{:03}::step_{i:05}", i % 997)
}

/// A stack of 8..=16 frames: shallow frames from a few hot callers,
/// deeper ones spread over all functions.
fn random_stack(rng: &mut Rng) -> Vec<String> {
    (0..8 + rng.below(9))
        .map(|depth| function(rng.below((8usize << depth).min(FUNCTIONS))))
        .collect()
}

fn large_profile(seed: u64) -> Vec<WeightedStack> {
    let mut rng = Rng(seed);
    (0..ONE_STACKS)
        .map(|_| WeightedStack {
            frames: random_stack(&mut rng),
            count: 1 + rng.below(12) as u64,
        })
        .collect()
}

/// One instance's 30 s: samples drawn from the service's pool, most from
/// its hot part.
fn instance_profile(pool: &[Vec<String>], rng: &mut Rng) -> Vec<WeightedStack> {
    let mut counts = std::collections::HashMap::new();
    for _ in 0..FLEET_SAMPLES {
        let hot = pool.len() / 20;
        let index = if rng.below(4) > 0 {
            rng.below(hot)
        } else {
            rng.below(pool.len())
        };
        *counts.entry(index).or_insert(0u64) += 1;
    }
    counts
        .into_iter()
        .map(|(index, count)| WeightedStack {
            frames: pool[index].clone(),
            count,
        })
        .collect()
}

fn folded(stacks: &[WeightedStack]) -> String {
    stacks
        .iter()
        .map(|s| format!("{} {}\n", s.frames.join(";"), s.count))
        .collect()
}

fn gzip_pprof(stacks: &[WeightedStack]) -> Vec<u8> {
    let meta = PprofMeta {
        event: Some(odp_core::EventKind::CpuClock),
        ..PprofMeta::default()
    };
    pprof::encode(stacks, &meta)
}

/// The fastest of `RUNS` runs.
fn best(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[0]
}

/// inferno rendering `text` to SVG: the binary when installed, else the
/// library in this process.
fn inferno_time(text: &str, dir: &Path) -> (Duration, &'static str) {
    let file = dir.join("stacks.folded");
    std::fs::write(&file, text).unwrap();
    let installed = std::process::Command::new("inferno-flamegraph")
        .arg("--help")
        .output()
        .is_ok_and(|o| o.status.success());
    let runs = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            if installed {
                let out = std::process::Command::new("inferno-flamegraph")
                    .arg(&file)
                    .output()
                    .unwrap();
                assert!(out.status.success());
            } else {
                let mut svg = Vec::new();
                let mut options = inferno::flamegraph::Options::default();
                inferno::flamegraph::from_lines(&mut options, text.lines(), &mut svg).unwrap();
            }
            started.elapsed()
        })
        .collect();
    let which = if installed {
        "inferno-flamegraph"
    } else {
        "inferno (in-process)"
    };
    (best(runs), which)
}

struct Api {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Api {
    /// Times a GET until its whole body arrived; returns the best of
    /// [`RUNS`] and the body's size.
    async fn get(&self, path: &str) -> (Duration, usize) {
        let mut runs = Vec::new();
        let mut size = 0;
        for _ in 0..RUNS {
            let (took, bytes) = self.get_once(path).await;
            runs.push(took);
            size = bytes;
        }
        (best(runs), size)
    }

    /// Times one GET until its whole body arrived; returns the body's size.
    async fn get_once(&self, path: &str) -> (Duration, usize) {
        let started = Instant::now();
        let reply = self
            .http
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let status = reply.status();
        let body = reply.bytes().await.unwrap();
        assert!(
            status.is_success(),
            "{path}: {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(2000)])
        );
        (started.elapsed(), body.len())
    }

    async fn import(&self, service: &str, host: &str, stacks: &[WeightedStack]) -> String {
        let path = format!(
            "{}/api/v1/profiles/import?service={service}&format=pprof&host={host}",
            self.url
        );
        let reply = self
            .http
            .post(path)
            .bearer_auth(&self.token)
            .body(gzip_pprof(stacks))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 201);
        let body: serde_json::Value = reply.json().await.unwrap();
        body["id"].as_str().unwrap().to_owned()
    }
}

fn ratio(what: &str, took: Duration, baseline: Duration, target: &str, extra: &str) {
    println!(
        "  {what:<34} {:>8.1} ms  {:>5.2}x baseline  (target {target}){extra}",
        took.as_secs_f64() * 1e3,
        took.as_secs_f64() / baseline.as_secs_f64()
    );
}

/// The tables that hold samples, with their indexes.
const SAMPLE_TABLES: [&str; 7] = [
    "snapshots",
    "profile_blocks",
    "service_rollups",
    "frames",
    "stacks",
    "samples",
    "snapshot_threads",
];

/// Bytes on disk of each of [`SAMPLE_TABLES`], indexes included.
struct DiskBytes(Vec<i64>);

impl DiskBytes {
    /// Measured once the tables are rewritten compactly (Postgres' `vacuum
    /// full`, InnoDB's `optimize table`).
    async fn measure(db: &Database) -> Self {
        let mut bytes = Vec::new();
        for table in SAMPLE_TABLES {
            bytes.push(table_bytes(db, table).await);
        }
        DiskBytes(bytes)
    }

    fn total(&self) -> i64 {
        self.0.iter().sum()
    }

    /// What was added since `before`.
    fn since(&self, before: &DiskBytes) -> DiskBytes {
        DiskBytes(self.0.iter().zip(&before.0).map(|(a, b)| a - b).collect())
    }

    /// The tables that hold anything, largest first, in MB.
    fn breakdown(&self) -> String {
        let mut tables: Vec<(&str, i64)> = SAMPLE_TABLES
            .into_iter()
            .zip(self.0.iter().copied())
            .filter(|&(_, bytes)| bytes != 0)
            .collect();
        tables.sort_by_key(|&(_, bytes)| -bytes);
        tables
            .iter()
            .map(|(table, bytes)| format!("{table} {:.2}", *bytes as f64 / 1e6))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

async fn table_bytes(db: &Database, table: &str) -> i64 {
    match db {
        Database::Postgres(pool) => {
            sqlx::query(&format!("vacuum full {table}"))
                .execute(pool)
                .await
                .unwrap();
            sqlx::query_scalar("select pg_total_relation_size($1::regclass)")
                .bind(table)
                .fetch_one(pool)
                .await
                .unwrap()
        }
        Database::MySql(pool) => {
            sqlx::raw_sql(&format!("optimize table {table}; analyze table {table}"))
                .execute(pool)
                .await
                .unwrap();
            sqlx::query_scalar(
                "select cast(data_length + index_length as signed)
                 from information_schema.tables
                 where table_schema = database() and table_name = ?",
            )
            .bind(table)
            .fetch_one(pool)
            .await
            .unwrap()
        }
    }
}

/// Profiles of `service` not yet in its rollups.
async fn pending_rollups(db: &Database, service: &str) -> i64 {
    let sql = "select count(*) from profile_blocks b join profiles p on p.id = b.profile_id
               where p.service = ? and b.rollup = 'pending'";
    match db {
        Database::Postgres(pool) => sqlx::query_scalar(&sql.replace('?', "$1"))
            .bind(service)
            .fetch_one(pool)
            .await
            .unwrap(),
        Database::MySql(pool) => sqlx::query_scalar(sql)
            .bind(service)
            .fetch_one(pool)
            .await
            .unwrap(),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let database: DatabaseKind = std::env::var("ODP_BENCH_DATABASE")
        .unwrap_or_else(|_| "postgres".into())
        .parse()
        .expect("ODP_BENCH_DATABASE is postgres or mysql");
    println!("database: {}", database.server_name());
    let stack = Stack::start(StackOptions::ephemeral().database_kind(database))
        .await
        .expect("start the stack");
    let endpoints = StackEndpoints {
        kafka_bootstrap: stack.kafka_bootstrap().to_owned(),
        database_url: stack.database_url().to_owned(),
        topics: stack.topics().clone(),
    };
    let mut options = PlatformOptions::new(stack.state_dir(), "bench-host");
    options.with_agent = false;
    // Where a read's time goes (load, select, merge), in the api-server's
    // log, shown at the end.
    options
        .api_env
        .push(("RUST_LOG".into(), "info,odp_store=debug".into()));
    // The ten-profile aggregate's folded export is about 340 MB, past the
    // default output limit (256 MiB) that keeps one read from taking the
    // server's memory; the benchmark times it all the same.
    options.api_env.push((
        "ODP_READ_MAX_OUTPUT_BYTES".into(),
        (512u64 << 20).to_string(),
    ));
    let platform = Platform::start(&endpoints, options)
        .await
        .expect("start the services");
    let api = Api {
        http: platform.http(),
        url: platform.api_url.clone(),
        token: platform.token.clone(),
    };
    let pool = stack.store().await.unwrap();
    let since = (chrono::Utc::now() - chrono::Duration::minutes(30)).to_rfc3339();
    let until = (chrono::Utc::now() + chrono::Duration::minutes(30)).to_rfc3339();
    let range = format!("since={}&until={}", urlencode(&since), urlencode(&until));

    let parts = std::env::var("ODP_BENCH_PARTS").unwrap_or_else(|_| "fleet,one,ten".into());
    let part = |name: &str| parts.split(',').any(|p| p == name);

    // The fleet first, alone in the database, for its storage.
    if part("fleet") {
        fleet(&api, &pool, &range, dir.path()).await;
    }
    if part("one") {
        one_profile(&api, &pool, dir.path()).await;
    }
    if part("ten") {
        ten_profiles(&api, &range, dir.path()).await;
    }
    if part("history") {
        history::history(&api, &pool).await;
    }
    let phases: Vec<String> = platform
        .api
        .log()
        .lines()
        .filter(|l| l.contains(" load=") || l.contains("service blocks"))
        .map(str::to_owned)
        .collect();
    println!(
        "read phases (api-server log, last {}):",
        phases.len().min(24)
    );
    for line in phases.iter().rev().take(24).rev() {
        println!("  {line}");
    }
    pool.close().await;
    drop(platform);
    stack.stop().unwrap();
}

fn urlencode(text: &str) -> String {
    text.replace(':', "%3A").replace('+', "%2B")
}

/// Imports the fleet, reads its aggregate; returns the bytes on disk.
async fn fleet(api: &Api, pool: &Database, range: &str, dir: &Path) {
    let mut rng = Rng(0x5eed_f1ee_7000_0001);
    let service_pool: Vec<Vec<String>> = (0..FLEET_POOL).map(|_| random_stack(&mut rng)).collect();
    let mut fleet_pprof = 0usize;
    let mut fleet_stacks = Vec::new();
    let mut one_instance = None;
    let started = Instant::now();
    for host in 0..FLEET_HOSTS {
        let stacks = instance_profile(&service_pool, &mut rng);
        fleet_pprof += gzip_pprof(&stacks).len();
        let id = api
            .import("bench-fleet", &format!("h-{host:04}"), &stacks)
            .await;
        if host == FLEET_HOSTS / 2 {
            one_instance = Some((id, folded(&stacks)));
        }
        fleet_stacks.extend(stacks);
    }
    println!(
        "fleet: {FLEET_HOSTS} instance profiles imported in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // The pipeline rolls them up into the service's hourly rollup.
    let started = Instant::now();
    loop {
        let pending = pending_rollups(pool, "bench-fleet").await;
        if pending == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(900),
            "{pending} not rolled up"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!("  rolled up in {:.1} s", started.elapsed().as_secs_f64());
    let fleet_bytes = DiskBytes::measure(pool).await;
    println!("aggregate of the {FLEET_HOSTS}-instance fleet (per-host breakdown)");
    let (took, size) = api
        .get(&format!("/api/v1/aggregate?service=bench-fleet&{range}"))
        .await;
    let (inferno, which) = inferno_time(&folded(&fleet_stacks), dir);
    println!(
        "  baseline: {which} on the 1000 files concatenated: {:.1} ms",
        inferno.as_secs_f64() * 1e3
    );
    ratio(
        "fleet aggregate JSON",
        took,
        inferno,
        "<= 1 s",
        &format!(", {:.2} MB", size as f64 / 1e6),
    );
    // One instance's own profile: rolled up, it has no block of its own
    // and is read out of its hour's rollup of the whole fleet.
    let (id, one_folded) = one_instance.expect("the fleet has a middle host");
    let (one_inferno, _) = inferno_time(&one_folded, dir);
    let (one, _) = api.get(&format!("/api/v1/profiles/{id}/flamegraph")).await;
    ratio(
        "one instance's flame graph JSON",
        one,
        one_inferno,
        "<= 1 s (read out of the rollup)",
        &format!(", {:.0} ms vs the aggregate", took.as_secs_f64() * 1e3),
    );
    // One function's trend over the same range: each window's own counts
    // (1,000 hosts' windows, read from the hourly rollup) instead of one
    // merged tree; the aggregate above is its baseline.
    let hot = format!("%5E{}%24", urlencode(&function(3)));
    let (trend, trend_size) = api
        .get(&format!(
            "/api/v1/services/bench-fleet/trend?function={hot}&{range}"
        ))
        .await;
    ratio(
        "fleet trend of one function",
        trend,
        took,
        "<= 300 ms",
        &format!(
            ", {:.1} kB (vs the aggregate JSON)",
            trend_size as f64 / 1e3
        ),
    );
    println!(
        "  storage: {:.1} MB on disk vs {:.1} MB gzip pprof: {:.2}x (target <= 1.0x); \
         MB by table: {}",
        fleet_bytes.total() as f64 / 1e6,
        fleet_pprof as f64 / 1e6,
        fleet_bytes.total() as f64 / fleet_pprof as f64,
        fleet_bytes.breakdown()
    );
}

/// One large profile: every format of it, and its bytes on disk.
async fn one_profile(api: &Api, pool: &Database, dir: &Path) {
    let one = large_profile(0x9e37_79b9_7f4a_7c15);
    let one_pprof = gzip_pprof(&one).len();
    let before = DiskBytes::measure(pool).await;
    let id = api.import("bench-one", "one-host", &one).await;
    let one_bytes = DiskBytes::measure(pool).await.since(&before);
    let samples: u64 = one.iter().map(|s| s.count).sum();
    println!("one profile: {ONE_STACKS} stacks, {samples} samples");
    let (inferno, which) = inferno_time(&folded(&one), dir);
    println!(
        "  baseline: {which} on its folded file: {:.1} ms",
        inferno.as_secs_f64() * 1e3
    );
    let base = format!("/api/v1/profiles/{id}");
    let (json, size) = api.get(&format!("{base}/flamegraph")).await;
    ratio(
        "flame graph JSON (8192 nodes)",
        json,
        inferno,
        "<= 0.5x, <= 2 MB",
        &format!(", {:.2} MB", size as f64 / 1e6),
    );
    let (top, _) = api.get(&format!("{base}/top")).await;
    ratio("top 20", top, inferno, "<= 0.25x", "");
    let (svg, _) = api.get(&format!("{base}/flamegraph?format=svg")).await;
    ratio("SVG", svg, inferno, "<= 1.0x", "");
    let (text, _) = api.get(&format!("{base}/flamegraph?format=folded")).await;
    ratio("folded", text, inferno, "-", "");
    let (pb, _) = api.get(&format!("{base}/flamegraph?format=pprof")).await;
    ratio("pprof", pb, inferno, "-", "");
    println!(
        "  storage: {:.2} MB on disk vs {:.2} MB gzip pprof: {:.2}x; MB by table: {}",
        one_bytes.total() as f64 / 1e6,
        one_pprof as f64 / 1e6,
        one_bytes.total() as f64 / one_pprof as f64,
        one_bytes.breakdown()
    );
}

/// Ten large profiles on ten hosts, read as one aggregate.
async fn ten_profiles(api: &Api, range: &str, dir: &Path) {
    let ten: Vec<Vec<WeightedStack>> = (0..10).map(|i| large_profile(0x1000 + i)).collect();
    for (i, stacks) in ten.iter().enumerate() {
        api.import("bench-ten", &format!("ten-{i}"), stacks).await;
    }
    let all: String = ten.iter().map(|s| folded(s)).collect();
    let (inferno, which) = inferno_time(&all, dir);
    println!("aggregate of 10 such profiles on 10 hosts");
    println!(
        "  baseline: {which} on the 10 files concatenated: {:.1} ms",
        inferno.as_secs_f64() * 1e3
    );
    let (agg, size) = api
        .get(&format!("/api/v1/aggregate?service=bench-ten&{range}"))
        .await;
    ratio(
        "aggregate JSON",
        agg,
        inferno,
        "<= 0.3x",
        &format!(", {:.2} MB", size as f64 / 1e6),
    );
    let (agg_folded, _) = api
        .get(&format!(
            "/api/v1/aggregate?service=bench-ten&{range}&format=folded"
        ))
        .await;
    ratio("aggregate folded", agg_folded, inferno, "-", "");
}
