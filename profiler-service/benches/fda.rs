//! FDA against a fixed high frequency on a workload whose hot functions
//! change in phases (tests/data/workload.c `phases`): both profiles sample
//! the same process at the same time, so they see the same phases.
//!
//! Reports the samples each took and the mean absolute error of the four
//! phase functions' leaf shares per window against the known truth (phase
//! A: 75 % phase_a_main, 25 % phase_a_side; phase B likewise), weighted by
//! how much of each window each phase covered.
//!
//! Run by hand: `cargo bench -p odp-profiler-service --bench fda` (about
//! 95 s; needs perf_event access like the live tests).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use odp_core::Snapshot;
use odp_profiler_service::cost::{CostSettings, FdaParams};

mod common;

const SECONDS: u64 = 90;
const PHASE_MS: i64 = 15_000;
const FIXED_HZ: u32 = 999;
const FUNCTIONS: [&str; 4] = [
    "phase_a_main",
    "phase_a_side",
    "phase_b_main",
    "phase_b_side",
];

/// Expected shares of the four functions over [start, end).
fn truth(start_ms: i64, end_ms: i64, phase0_ms: i64) -> [f64; 4] {
    let (mut a, mut b) = (0i64, 0i64);
    let mut t = start_ms.max(phase0_ms);
    while t < end_ms {
        let phase = (t - phase0_ms) / PHASE_MS;
        let phase_end = (phase0_ms + (phase + 1) * PHASE_MS).min(end_ms);
        if phase % 2 == 0 {
            a += phase_end - t;
        } else {
            b += phase_end - t;
        }
        t = phase_end;
    }
    let total = (a + b).max(1) as f64;
    let (a, b) = (a as f64 / total, b as f64 / total);
    [0.75 * a, 0.25 * a, 0.75 * b, 0.25 * b]
}

/// (samples, mean absolute error per window, mean frequency).
fn score(snapshots: &[Snapshot], phase0_ms: i64) -> (u64, f64, f64) {
    let mut errors = Vec::new();
    let mut samples = 0;
    for s in snapshots {
        samples += s.total_samples();
        let leaves = common::leaves(s);
        let counts: Vec<u64> = FUNCTIONS
            .iter()
            .map(|f| leaves.get(*f).copied().unwrap_or(0))
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 || s.window_end_ms - s.window_start_ms < 500 {
            continue;
        }
        let expected = truth(s.window_start_ms, s.window_end_ms, phase0_ms);
        let mae = counts
            .iter()
            .zip(expected)
            .map(|(&c, e)| (c as f64 / total as f64 - e).abs())
            .sum::<f64>()
            / 4.0;
        errors.push(mae);
    }
    let mean_hz = snapshots
        .iter()
        .map(|s| f64::from(s.frequency_hz))
        .sum::<f64>()
        / snapshots.len().max(1) as f64;
    (
        samples,
        errors.iter().sum::<f64>() / errors.len().max(1) as f64,
        mean_hz,
    )
}

fn main() {
    let binary = common::build_workload("workload-bench-fda");
    let child = Command::new(&binary)
        .args(["phases", &(SECONDS + 5).to_string(), &PHASE_MS.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the workload");
    let mut child = common::Killed(child);
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let phase0_ms: i64 = line
        .trim()
        .strip_prefix("start_ms ")
        .and_then(|v| v.parse().ok())
        .expect("the workload prints its start");
    let pid = child.0.id();

    let duration = Duration::from_secs(SECONDS);
    let window = Duration::from_secs(1);
    let fda = CostSettings {
        fda: Some(FdaParams {
            theta: 0.05,
            lambda: 0.8,
            stable_windows: 5,
            top_n: 10,
            min_hz: 19,
            max_hz: FIXED_HZ,
        }),
        ..CostSettings::default()
    };
    eprintln!("profiling for {SECONDS} s: FDA and a fixed {FIXED_HZ} Hz side by side ...");
    let (fixed, adaptive) = std::thread::scope(|scope| {
        let fixed = scope
            .spawn(|| common::profile(pid, duration, window, FIXED_HZ, CostSettings::default()).0);
        let adaptive = scope.spawn(|| common::profile(pid, duration, window, FIXED_HZ, fda).0);
        (fixed.join().unwrap(), adaptive.join().unwrap())
    });

    let (fixed_samples, fixed_mae, fixed_hz) = score(&fixed, phase0_ms);
    let (fda_samples, fda_mae, fda_hz) = score(&adaptive, phase0_ms);
    let trajectory: Vec<u32> = adaptive.iter().map(|s| s.frequency_hz).collect();
    println!("FDA frequency per 1 s window: {trajectory:?}");
    let fixed_name = format!("fixed {FIXED_HZ} Hz");
    println!(
        "{:<14} {:>9} {:>10}   MAE of phase-function shares",
        "", "samples", "mean Hz"
    );
    println!("{fixed_name:<14} {fixed_samples:>9} {fixed_hz:>10.1}   {fixed_mae:.4}");
    println!(
        "{:<14} {fda_samples:>9} {fda_hz:>10.1}   {fda_mae:.4}",
        "FDA"
    );
    println!(
        "ratios FDA/fixed: samples {:.3}, MAE {:.3}",
        fda_samples as f64 / fixed_samples.max(1) as f64,
        fda_mae / fixed_mae.max(f64::MIN_POSITIVE)
    );
}
