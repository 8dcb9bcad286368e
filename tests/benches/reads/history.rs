//! A service's history: 30 days of a continuous profile, as the hour tier
//! holds it once downsampled (`--downsample-tiers 7:3600`: one window per
//! host and hour, 19 Hz on one busy thread, stacks drawn from the
//! service's shared pool), each hour rolled up as the pipeline does. Timed
//! through the API: the 30-day flame graph and a function's 30-day trend,
//! against the same reads of one hour, measured in the same run.
//!
//! Written straight into the store (one finished profile per host and
//! hour, then its rollups, then its settled days as the pipeline builds
//! them), since a month of agent windows cannot be replayed on 2 cores;
//! `ODP_BENCH_HISTORY_HOSTS` and `…_DAYS` size it.

use std::time::{Duration, Instant};

use chrono::{DateTime, DurationRound, Utc};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot};
use odp_store::Database;
use odp_tests::Rng;
use uuid::Uuid;

use super::{best, function, random_stack, ratio, urlencode, Api, FLEET_POOL, RUNS};

const HZ: u64 = 19;
const SERVICE: &str = "bench-history";

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One host's hour: `HZ` × 3,600 samples, three in four from the pool's
/// hottest twentieth, as a fleet's instances spend their time.
fn host_hour(
    pool: &[Vec<Frame>],
    rng: &mut Rng,
    id: Uuid,
    host: usize,
    hour: DateTime<Utc>,
) -> Snapshot {
    let mut counts = vec![0u64; pool.len()];
    let hot = pool.len() / 20;
    for _ in 0..HZ * 3600 {
        let index = if rng.below(4) > 0 {
            rng.below(hot)
        } else {
            rng.below(pool.len())
        };
        counts[index] += 1;
    }
    let mut b = SnapshotBuilder::new();
    for (stack, &count) in pool.iter().zip(&counts) {
        if count > 0 {
            b.add(stack, 1, count);
        }
    }
    b.name_thread(1, "worker");
    let start_ms = hour.timestamp_millis();
    b.build(SnapshotHeader {
        profile_id: id,
        host: format!("h-{host:03}"),
        agent_id: format!("agent-{host:03}"),
        sequence: 0,
        window_start_ms: start_ms,
        window_end_ms: start_ms + 3_600_000,
        event: EventKind::CpuClock,
        period: 1_000_000_000 / HZ,
        frequency_hz: HZ as u32,
    })
}

/// Stores the history: every host's hours, rolled up hour by hour.
async fn store_history(db: &Database, hosts: usize, first: DateTime<Utc>, hours: usize) -> u64 {
    let mut rng = Rng(0x4157_0e71_5700_0002);
    let pool: Vec<Vec<Frame>> = (0..FLEET_POOL)
        .map(|_| {
            random_stack(&mut rng)
                .into_iter()
                .map(Frame::function)
                .collect()
        })
        .collect();
    let mut samples = 0;
    for h in 0..hours {
        let hour = first + chrono::Duration::hours(h as i64);
        let mut ids = Vec::new();
        for host in 0..hosts {
            let id = Uuid::new_v4();
            let window = host_hour(&pool, &mut rng, id, host, hour);
            samples += window.total_samples();
            odp_store::import_profile(db, &window, SERVICE, "bench", "bench")
                .await
                .unwrap();
            ids.push(id);
        }
        odp_store::roll_up(db, &ids).await.unwrap();
    }
    samples
}

/// Builds every settled service day, as the pipeline does once a day
/// has settled; how many.
async fn build_days(db: &Database) -> usize {
    let mut built = 0;
    loop {
        let days = odp_store::days_to_build(db, odp_store::DAY_SETTLE, 100)
            .await
            .unwrap();
        if days.is_empty() {
            return built;
        }
        for (service, day) in days {
            odp_store::build_day(db, &service, day).await.unwrap();
            built += 1;
        }
    }
}

/// The bytes of the service's profile blocks, hour rollups and days.
async fn stored_bytes(db: &Database) -> String {
    let mut parts = Vec::new();
    for (name, table) in [
        ("profile blocks", "profile_blocks"),
        ("hour rollups", "service_rollups"),
        ("days", "service_days"),
    ] {
        let Database::Postgres(pool) = db else {
            return "sizes on Postgres only".into();
        };
        let bytes: Option<i64> = sqlx::query_scalar(&format!(
            "select sum(octet_length(block))::bigint from {table}"
        ))
        .fetch_one(pool)
        .await
        .unwrap();
        parts.push(format!("{name} {:.1} MB", bytes.unwrap_or(0) as f64 / 1e6));
    }
    parts.join(", ")
}

/// Stores the history and times its reads through the API.
pub(super) async fn history(api: &Api, db: &Database) {
    let hosts = env_or("ODP_BENCH_HISTORY_HOSTS", 10);
    let days = env_or("ODP_BENCH_HISTORY_DAYS", 30);
    let hours = days * 24;
    let now = Utc::now()
        .duration_trunc(chrono::Duration::hours(1))
        .unwrap();
    let first = now - chrono::Duration::hours(hours as i64 + 1);
    let started = Instant::now();
    let samples = store_history(db, hosts, first, hours).await;
    println!(
        "history: {days} days × {hosts} hosts at {HZ} Hz, one window per host and hour \
         ({samples} samples), stored and rolled up in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let days_built = build_days(db).await;
    println!(
        "  {days_built} service days built from their hours in {:.1} s ({})",
        started.elapsed().as_secs_f64(),
        stored_bytes(db).await
    );
    let range = |from: DateTime<Utc>, to: DateTime<Utc>| {
        format!(
            "since={}&until={}",
            urlencode(&from.to_rfc3339()),
            urlencode(&to.to_rfc3339())
        )
    };
    let whole = range(first, first + chrono::Duration::hours(hours as i64));
    let last_hour = range(
        first + chrono::Duration::hours(hours as i64 - 1),
        first + chrono::Duration::hours(hours as i64),
    );
    let flame = |r: &str| format!("/api/v1/aggregate?service={SERVICE}&{r}");
    let hot = format!("%5E{}%24", urlencode(&function(3)));
    let trend = |r: &str| format!("/api/v1/services/{SERVICE}/trend?function={hot}&{r}");
    let (hour_flame, _) = api.get(&flame(&last_hour)).await;
    let (month_flame, size) = each_read(api, "flame graph", &flame(&whole)).await;
    println!(
        "  baseline: the last hour's flame graph, {:.1} ms",
        hour_flame.as_secs_f64() * 1e3
    );
    ratio(
        &format!("{days}-day flame graph JSON"),
        month_flame,
        hour_flame,
        "<= 1 s",
        &format!(", {:.2} MB", size as f64 / 1e6),
    );
    let (hour_trend, _) = api.get(&trend(&last_hour)).await;
    let (month_trend, points) = each_read(api, "trend", &trend(&whole)).await;
    ratio(
        &format!("{days}-day trend of one function"),
        month_trend,
        hour_flame,
        "<= 300 ms",
        &format!(
            ", {:.1} kB; the last hour's trend {:.1} ms",
            points as f64 / 1e3,
            hour_trend.as_secs_f64() * 1e3
        ),
    );
}

/// [`Api::get`], printing each read with the CPU the api-server used
/// during it and the CPU the rest of the machine used (the database, the
/// pipeline's maintenance, this client): on 2 cores, whatever else runs
/// takes the cores a read's two selecting threads need.
async fn each_read(api: &Api, what: &str, path: &str) -> (Duration, usize) {
    let mut runs = Vec::new();
    let mut size = 0;
    for run in 1..=RUNS {
        let before = CpuSeconds::now();
        let (took, bytes) = api.get_once(path).await;
        let used = CpuSeconds::now().since(&before);
        println!(
            "  {what} read {run}: {:.0} ms; the api-server used {:.2} CPU-s, the rest of \
             the machine {:.2}",
            took.as_secs_f64() * 1e3,
            used.server,
            used.machine - used.server
        );
        runs.push(took);
        size = bytes;
    }
    (best(runs), size)
}

/// CPU seconds used since boot by the whole machine and by the api-server.
struct CpuSeconds {
    machine: f64,
    server: f64,
}

/// Clock ticks a second in `/proc/stat`'s counts.
const TICKS: f64 = 100.0;

impl CpuSeconds {
    fn now() -> CpuSeconds {
        let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
        let cpu: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .filter_map(|v| v.parse().ok())
            .collect();
        // user, nice, system, irq and softirq: not idle, iowait or steal.
        let machine: u64 = [0, 1, 2, 5, 6].iter().filter_map(|&i| cpu.get(i)).sum();
        CpuSeconds {
            machine: machine as f64 / TICKS,
            server: odp_devstack::cpu_seconds_of_named("odp-api-server"),
        }
    }

    fn since(&self, before: &CpuSeconds) -> CpuSeconds {
        CpuSeconds {
            machine: self.machine - before.machine,
            server: self.server - before.server,
        }
    }
}
