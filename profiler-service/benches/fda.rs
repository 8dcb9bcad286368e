//! FDA against a fixed high frequency on a workload whose hot functions
//! change in phases (tests/data/workload.c `phases`): both profiles sample
//! the same process at the same time, so they see the same phases.
//!
//! Reports the samples each took and the mean absolute error (MAE) of the
//! four phase functions' leaf shares against the known truth (phase A: 75 %
//! phase_a_main, 25 % phase_a_side; phase B likewise):
//! - over the whole profile, each window's counts weighted by its period as
//!   the read side merges them (`odp_store::weighting`), Atys' measure and
//!   the goal's (≤ 0.2× the samples at ≤ 1.2× the error);
//! - per window, weighted by how much of it each phase covered: what one
//!   window shows, where fewer samples must mean more noise;
//! - over the whole profile from raw counts, the bias weighting removes.
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

/// How well one profile's windows estimate the phase functions' shares.
struct Score {
    samples: u64,
    mean_hz: f64,
    /// Mean over windows of each window's MAE: what one window shows.
    window_mae: f64,
    /// MAE of the whole profile's shares, each window's counts weighted by
    /// its period (time per sample), as Atys measures FDA: what the
    /// profile's flame graph shows.
    profile_mae: f64,
    /// The same from raw counts, as if windows at different frequencies
    /// were simply added: the bias period weighting avoids.
    profile_mae_unweighted: f64,
    /// The whole profile's period-weighted shares of the four functions.
    profile_shares: [f64; 4],
}

fn mae(estimate: &[f64; 4], total: f64, expected: [f64; 4]) -> f64 {
    estimate
        .iter()
        .zip(expected)
        .map(|(&c, e)| (c / total - e).abs())
        .sum::<f64>()
        / 4.0
}

fn phase_counts(snapshot: &Snapshot) -> [f64; 4] {
    let leaves = common::leaves(snapshot);
    FUNCTIONS.map(|f| leaves.get(f).copied().unwrap_or(0) as f64)
}

fn score(snapshots: &[Snapshot], phase0_ms: i64) -> Score {
    let mut errors = Vec::new();
    let (mut weighted, mut unweighted) = ([0.0; 4], [0.0; 4]);
    for s in snapshots {
        let counts = phase_counts(s);
        for i in 0..4 {
            weighted[i] += counts[i] * s.period as f64;
            unweighted[i] += counts[i];
        }
        let total: f64 = counts.iter().sum();
        if total == 0.0 || s.window_end_ms - s.window_start_ms < 500 {
            continue;
        }
        errors.push(mae(
            &counts,
            total,
            truth(s.window_start_ms, s.window_end_ms, phase0_ms),
        ));
    }
    let (start, end) = match (snapshots.first(), snapshots.last()) {
        (Some(first), Some(last)) => (first.window_start_ms, last.window_end_ms),
        _ => (0, 0),
    };
    let whole = truth(start, end, phase0_ms);
    let total = |v: &[f64; 4]| v.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let weighted_total = total(&weighted);
    Score {
        samples: snapshots.iter().map(Snapshot::total_samples).sum(),
        mean_hz: snapshots
            .iter()
            .map(|s| f64::from(s.frequency_hz))
            .sum::<f64>()
            / snapshots.len().max(1) as f64,
        window_mae: errors.iter().sum::<f64>() / errors.len().max(1) as f64,
        profile_mae: mae(&weighted, weighted_total, whole),
        profile_mae_unweighted: mae(&unweighted, total(&unweighted), whole),
        profile_shares: weighted.map(|w| w / weighted_total),
    }
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

    let fixed = score(&fixed, phase0_ms);
    let trajectory: Vec<u32> = adaptive.iter().map(|s| s.frequency_hz).collect();
    let fda = score(&adaptive, phase0_ms);
    println!("FDA frequency per 1 s window: {trajectory:?}");
    println!(
        "{:<14} {:>9} {:>9}   {:>8} {:>8} {:>10}   (MAE of the phase functions' shares)",
        "", "samples", "mean Hz", "profile", "window", "unweighted"
    );
    for (name, s) in [
        (format!("fixed {FIXED_HZ} Hz"), &fixed),
        ("FDA".into(), &fda),
    ] {
        println!(
            "{name:<14} {:>9} {:>9.1}   {:>8.4} {:>8.4} {:>10.4}",
            s.samples, s.mean_hz, s.profile_mae, s.window_mae, s.profile_mae_unweighted
        );
    }
    let ratio = |a: f64, b: f64| a / b.max(f64::MIN_POSITIVE);
    println!(
        "ratios FDA/fixed: samples {:.3}, profile MAE {:.3} (goal <= 0.2x samples at <= 1.2x), window MAE {:.3}",
        fda.samples as f64 / fixed.samples.max(1) as f64,
        ratio(fda.profile_mae, fixed.profile_mae),
        ratio(fda.window_mae, fixed.window_mae),
    );
    println!(
        "MAE of FDA's profile shares against the fixed run's: {:.4}",
        mae(&fda.profile_shares, 1.0, fixed.profile_shares)
    );
}
