//! A profile of a few minutes on the real stack while, in turn, the
//! pipeline is SIGKILLed and restarted (twice), the broker is frozen for
//! 30 s, the broker is restarted, and Postgres is stopped for 30 s.
//! Afterwards the samples stored for the profile equal, exactly, those the
//! agent reports the broker acknowledged; no window is stored twice or
//! missing; the profile ends `finished`; after every fault ingestion
//! resumed within the consumer session timeout plus 10 s; and the samples
//! stored are what the target earned, its CPU time × the rate: sampling
//! never waited for the frozen broker. That last check is made for the
//! whole profile and for the windows around each fault on its own.

use odp_client::types::ProfileStatus;
use std::time::{Duration, Instant};

use odp_devstack::DatabaseKind;
use odp_store::Database;
use serde_json::json;
use uuid::Uuid;

use crate::common::{self, Harness};
use crate::db::{column, count, profile_events, try_column, Param};

/// The pipeline's consumer session timeout (10 s) plus 10 s: the bound on how
/// long ingestion may stall after any of these faults.
const RECOVERY_BOUND: Duration = Duration::from_secs(10 + 10);
const PROFILE_SECS: u64 = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_through_crashes_freezes_and_restarts_is_stored_exactly() {
    through_faults_on(DatabaseKind::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_on_mysql_through_crashes_freezes_and_restarts_is_stored_exactly() {
    through_faults_on(DatabaseKind::Mysql).await;
}

async fn through_faults_on(database: DatabaseKind) {
    let mut h = common::start_on(database, "faults", 1).await;
    let demo = h.spawn_demo_for(PROFILE_SECS + 120);
    let cpu_log = CpuLog::follow(demo.pid());
    let client = h.platform.client();
    let request = json!({"host": h.platform.host_id, "pid": demo.pid(),
                         "duration_secs": PROFILE_SECS, "frequency_hz": 49});
    let id = client.start_profile(&request).await.unwrap().id;
    client
        .wait_for_status(id, ProfileStatus::Running, Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    let started = Instant::now();
    let pool = h.store().await;
    let mut recoveries: Vec<(&str, Duration)> = Vec::new();
    let mut spans: Vec<FaultSpan> = Vec::new();

    for round in ["pipeline SIGKILL 1", "pipeline SIGKILL 2"] {
        wait_stored_after(&h, &pool, id, Duration::from_secs(5)).await;
        let span = FaultSpan::begin(round);
        h.platform.pipeline.kill().unwrap();
        tokio::time::sleep(Duration::from_secs(2)).await;
        h.platform.pipeline.respawn().unwrap();
        recoveries.push((round, recovery(&h, &pool, id).await));
        spans.push(span.end());
    }

    let span = FaultSpan::begin("broker frozen 30 s");
    assert!(h.stack.freeze_broker(), "SIGSTOP the broker");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(h.stack.thaw_broker(), "SIGCONT the broker");
    recoveries.push((span.fault, recovery(&h, &pool, id).await));
    spans.push(span.end());

    let span = FaultSpan::begin("broker restarted");
    h.stack.restart_broker().await.unwrap();
    recoveries.push((span.fault, recovery(&h, &pool, id).await));
    spans.push(span.end());

    let span = FaultSpan::begin("database stopped 30 s");
    h.stack.database().stop().unwrap();
    tokio::time::sleep(Duration::from_secs(30)).await;
    h.stack.database().start(false, false).await.unwrap();
    recoveries.push((span.fault, recovery(&h, &pool, id).await));
    spans.push(span.end());

    for (fault, took) in &recoveries {
        println!("recovery after {fault}: {:.1} s", took.as_secs_f64());
    }
    assert!(
        started.elapsed() < Duration::from_secs(PROFILE_SECS - 10),
        "the faults took {:?}, longer than the profile",
        started.elapsed()
    );

    let ended = client
        .wait_finished(id, Duration::from_secs(PROFILE_SECS + 120), |_| {})
        .await
        .unwrap();
    assert_eq!(
        ended.status,
        ProfileStatus::Finished,
        "{ended:?}\n{}",
        h.platform.logs()
    );
    let acknowledged = acknowledged_by_agent(&h, &pool, id).await;
    let stored = stored_when_settled(&pool, id, acknowledged.0.clone(), acknowledged.1).await;
    let timeline = client
        .call(
            reqwest::Method::GET,
            &format!("/api/v1/profiles/{id}/timeline"),
            None,
            200,
        )
        .await
        .unwrap();
    let windows = cpu_log.windows(&timeline["windows"]);
    check_each_fault(&spans, &windows);
    let (earned, on_cpu) = earned_in(&windows);
    let captured = stored.2 as f64 / earned;
    println!(
        "captured/expected: {} of {earned:.0} samples ({:.1}%), the demo on CPU {:.1}% of the profile",
        stored.2,
        captured * 100.0,
        on_cpu * 100.0
    );
    assert!(
        (0.98..=1.03).contains(&captured),
        "stored {} samples of the {earned:.0} the demo earned ({:.1}%)\n{}",
        stored.2,
        captured * 100.0,
        h.platform.logs()
    );
    check_the_profiles_own_account(&client, id, earned).await;
    assert_eq!(
        stored,
        acknowledged,
        "(agent, snapshots, samples) stored vs acknowledged\n{}",
        h.platform.logs()
    );
    let stored_by = [Param::Uuid(id)];
    let agents = count(
        &pool,
        "select count(distinct agent_id) from snapshots where profile_id = ?",
        &stored_by,
    )
    .await;
    assert_eq!(agents, 1, "windows from {agents} agents");
    let mut sequences = column(
        &pool,
        "select sequence from snapshots where profile_id = ?",
        &stored_by,
    )
    .await;
    let windows = sequences.len() as i64;
    sequences.sort_unstable();
    sequences.dedup();
    assert_eq!(windows, sequences.len() as i64, "a window stored twice");
    assert_eq!(
        sequences.last().map(|s| s + 1),
        Some(windows),
        "a window missing"
    );
    for (fault, took) in &recoveries {
        assert!(
            *took <= RECOVERY_BOUND,
            "ingestion resumed {took:?} after {fault}, over {RECOVERY_BOUND:?}"
        );
    }
}

/// How long after now until a window that ended after now is stored.
/// The profile's coverage, as the API reports it from the agent's own
/// reading of the target's CPU time, agrees with the test's, and says
/// nothing is missing.
async fn check_the_profiles_own_account(client: &odp_client::ApiClient, id: Uuid, earned: f64) {
    let profile = client.profile(id).await.expect("the profile");
    let coverage = profile
        .coverage
        .expect("GET /profiles/{id} reports coverage");
    let expected = coverage
        .expected
        .expect("a CPU profile of a native program expects samples") as f64;
    println!(
        "the profile's own account: expected {expected:.0}, captured {}, lost {:?}, \
         unaccounted {:?}",
        coverage.captured, coverage.lost, coverage.unaccounted
    );
    assert!(
        (expected / earned - 1.0).abs() < 0.03,
        "the agent expected {expected:.0} samples, the test measured {earned:.0}"
    );
    assert!(
        coverage.captured as f64 >= 0.98 * expected,
        "captured {} of {expected:.0} expected: {:?}",
        coverage.captured,
        coverage.warning
    );
    assert_eq!(coverage.warning, None);
}

async fn recovery(h: &Harness, pool: &Database, id: Uuid) -> Duration {
    let from = Instant::now();
    wait_stored_after(h, pool, id, Duration::from_secs(180)).await;
    from.elapsed()
}

/// Waits until a window ending after the call is stored for `id`.
async fn wait_stored_after(h: &Harness, pool: &Database, id: Uuid, timeout: Duration) {
    let since = chrono::Utc::now();
    let deadline = Instant::now() + timeout;
    loop {
        // Fails while the database is down.
        let stored = try_column(
            pool,
            "select count(*) from snapshots where profile_id = ? and window_end > ?",
            &[Param::Uuid(id), Param::Time(since)],
        )
        .await;
        if stored.is_ok_and(|n| n.first().is_some_and(|&n| n > 0)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nothing stored for {timeout:?}\n{}\n----- broker (warnings and errors) -----\n{}",
            h.platform.logs(),
            broker_complaints(h)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// (agent, snapshots, samples) the agent's `profile_finished` reports the
/// broker acknowledged, plus those it had spooled then (a broker restart
/// can fail a send the broker in fact kept) and delivers afterwards.
async fn acknowledged_by_agent(h: &Harness, pool: &Database, id: Uuid) -> (String, i64, i64) {
    let rows = profile_events(pool, id, "profile_finished").await;
    assert_eq!(rows.len(), 1, "one profile_finished\n{}", h.platform.logs());
    let (agent, body) = &rows[0];
    let count = |field: &str| {
        body[field]
            .as_i64()
            .unwrap_or_else(|| panic!("{field} in {body}"))
    };
    (
        agent.clone(),
        count("snapshots") + count("spooled_snapshots"),
        count("samples") + count("spooled_samples"),
    )
}

/// (agent, snapshots, samples) stored, once as many windows as `want` are
/// (or a minute passed).
async fn stored_when_settled(
    pool: &Database,
    id: Uuid,
    agent: String,
    want: i64,
) -> (String, i64, i64) {
    let mut samples = Vec::new();
    for _ in 0..120 {
        samples = column(
            pool,
            "select samples from snapshots where profile_id = ? and agent_id = ?",
            &[Param::Uuid(id), Param::Text(&agent)],
        )
        .await;
        if samples.len() as i64 >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    (agent, samples.len() as i64, samples.iter().sum())
}

/// The first warnings and errors the broker logged since it last started.
fn broker_complaints(h: &Harness) -> String {
    let log = std::fs::read_to_string(h.stack.log_dir().join("tansu.log")).unwrap_or_default();
    let since_start = log.rfind("tansu broker").map_or(&log[..], |at| &log[at..]);
    since_start
        .lines()
        .filter(|line| line.contains("WARN") || line.contains("ERROR") || line.contains("panic"))
        .take(40)
        .collect::<Vec<_>>()
        .join("\n")
}

/// How often the test reads the demo's CPU time.
const CPU_READ_EVERY: Duration = Duration::from_millis(50);

/// The demo's CPU time, read every [`CPU_READ_EVERY`] with the wall clock,
/// so that what it earned in each window can be told exactly.
struct CpuLog {
    readings: std::sync::Arc<std::sync::Mutex<Vec<(f64, f64)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl CpuLog {
    fn follow(pid: u32) -> CpuLog {
        let readings = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = readings.clone();
        let task = tokio::spawn(async move {
            loop {
                let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
                log.lock().unwrap().push((now, cpu_seconds(pid)));
                tokio::time::sleep(CPU_READ_EVERY).await;
            }
        });
        CpuLog { readings, task }
    }

    /// CPU seconds used by `at` (Unix seconds), between two readings.
    fn at(readings: &[(f64, f64)], at: f64) -> f64 {
        let after = readings.partition_point(|&(t, _)| t < at);
        match (readings.get(after.wrapping_sub(1)), readings.get(after)) {
            (Some(&(t0, c0)), Some(&(t1, c1))) if t1 > t0 => c0 + (c1 - c0) * (at - t0) / (t1 - t0),
            (_, Some(&(_, c))) | (Some(&(_, c)), None) => c,
            (None, None) => 0.0,
        }
    }

    /// The timeline's windows, each with the samples the demo earned in
    /// it (its CPU time there × the window's rate).
    fn windows(&self, windows: &serde_json::Value) -> Vec<EarnedWindow> {
        self.task.abort();
        let readings = self.readings.lock().unwrap();
        let seconds = |w: &serde_json::Value, field: &str| {
            chrono::DateTime::parse_from_rfc3339(w[field].as_str().unwrap())
                .unwrap()
                .timestamp_millis() as f64
                / 1000.0
        };
        let windows = windows.as_array().expect("timeline windows");
        windows
            .iter()
            .map(|w| {
                let (start, end) = (seconds(w, "window_start"), seconds(w, "window_end"));
                let cpu = Self::at(&readings, end) - Self::at(&readings, start);
                let rate = w["frequency_hz"].as_f64().unwrap();
                EarnedWindow {
                    start,
                    end,
                    cpu,
                    rate,
                    earned: cpu * rate,
                    stored: w["samples"].as_i64().unwrap(),
                }
            })
            .collect()
    }
}

/// One window of the profile: its span (Unix seconds), the demo's CPU
/// seconds in it, its rate, the samples that earned and those stored.
struct EarnedWindow {
    start: f64,
    end: f64,
    cpu: f64,
    rate: f64,
    earned: f64,
    stored: i64,
}

/// The samples earned over `windows`, and the demo's share of CPU over
/// them.
fn earned_in(windows: &[EarnedWindow]) -> (f64, f64) {
    let earned = windows.iter().map(|w| w.earned).sum();
    let cpu: f64 = windows.iter().map(|w| w.cpu).sum();
    let wall: f64 = windows.iter().map(|w| w.end - w.start).sum();
    (earned, cpu / wall.max(f64::EPSILON))
}

/// When one fault was injected and when ingestion had recovered from it
/// (Unix seconds).
struct FaultSpan {
    fault: &'static str,
    from: f64,
    to: f64,
}

impl FaultSpan {
    fn begin(fault: &'static str) -> FaultSpan {
        let from = unix_seconds();
        FaultSpan {
            fault,
            from,
            to: from,
        }
    }

    fn end(self) -> FaultSpan {
        FaultSpan {
            to: unix_seconds(),
            ..self
        }
    }
}

fn unix_seconds() -> f64 {
    chrono::Utc::now().timestamp_millis() as f64 / 1000.0
}

/// For each fault, the windows that overlap it (from its injection until
/// ingestion recovered) hold what the demo earned in them: the agent kept
/// sampling through the fault, and nothing it sampled was lost on the way.
/// A span's two ends are each known to within a sampling tick (the agent
/// reads its samples every 50 ms and closes a window between reads) and a
/// CPU reading of the test's: a few samples, which matter in the short
/// spans (about 250 samples around a pipeline restart).
fn check_each_fault(spans: &[FaultSpan], windows: &[EarnedWindow]) {
    let end_uncertainty = 0.05 + CPU_READ_EVERY.as_secs_f64();
    for span in spans {
        let during: Vec<&EarnedWindow> = windows
            .iter()
            .filter(|w| w.end > span.from && w.start < span.to)
            .collect();
        let earned: f64 = during.iter().map(|w| w.earned).sum();
        let stored: i64 = during.iter().map(|w| w.stored).sum();
        let captured = stored as f64 / earned.max(f64::EPSILON);
        let rate = during.iter().map(|w| w.rate).fold(0.0, f64::max);
        let slack = 2.0 * end_uncertainty * rate;
        println!(
            "{}: {} windows over {:.1} s, captured/expected {stored} of {earned:.0} ({:.1}%)",
            span.fault,
            during.len(),
            span.to - span.from,
            captured * 100.0
        );
        assert!(!during.is_empty(), "no window overlaps {}", span.fault);
        assert!(
            (0.98 * earned - slack..=1.03 * earned + slack).contains(&(stored as f64)),
            "{}: stored {stored} of the {earned:.0} samples the demo earned in its windows \
             ({:.1}%; ± {slack:.0} for the span's ends)",
            span.fault,
            captured * 100.0
        );
    }
}

/// The CPU time `pid` has used, in seconds (`utime + stime` of
/// `/proc/PID/stat`, in USER_HZ ticks: 100 a second on Linux).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the demo runs");
    let after_name = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // utime and stime are fields 14 and 15; `after_name` starts at field 3.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}
