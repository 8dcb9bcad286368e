//! FDA against a fixed high frequency on a workload whose hot functions
//! change in phases (tests/data/workload.c `phases`): both profiles sample
//! the same process at the same time, so they see the same phases.
//!
//! Reports the samples each took and the mean absolute error (MAE) of the
//! four phase functions' leaf shares against the truth: the CPU time the
//! workload measured itself in each phase (as Atys instruments its
//! benchmarks), split 75/25 between the phase's two functions as their work
//! is (phase A: phase_a_main and phase_a_side; phase B likewise):
//! - over the whole profile, each window's counts weighted by its period as
//!   the read side merges them (`odp_store::weighting`), Atys' measure and
//!   the goal's (≤ 0.2× the samples at ≤ 1.2× the error);
//! - per window, weighted by how much of it each phase covered: what one
//!   window shows, where fewer samples must mean more noise;
//! - over the whole profile from raw counts, the bias weighting removes.
//!
//! A third profile at a fixed rate near FDA's mean shows what the same
//! sample budget buys spent evenly. For each mode the bench also prints
//! how many samples it took until the four shares each reached a standard
//! error of ε (read window by window, as a run's stop rule reads them),
//! and how far from the truth they were then: FDA's reason to exist would
//! be fewer samples for the same precision.
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
/// A fixed rate near FDA's mean on this workload (135–156 Hz): what the
/// same sample budget buys spent evenly.
const BUDGET_HZ: u32 = 149;
const FUNCTIONS: [&str; 4] = [
    "phase_a_main",
    "phase_a_side",
    "phase_b_main",
    "phase_b_side",
];

/// The workload's own account of its CPU time per phase: (wall ms,
/// cumulative ns in phase A, in phase B), every 100 ms.
struct CpuLog(Vec<(i64, f64, f64)>);

impl CpuLog {
    /// Reads the workload's `cpu` lines until it exits.
    fn collect(stdout: impl BufRead + Send + 'static) -> std::thread::JoinHandle<CpuLog> {
        std::thread::spawn(move || {
            let mut log = Vec::new();
            for line in stdout.lines().map_while(Result::ok) {
                let fields: Vec<&str> = line.split_whitespace().collect();
                if let ["cpu", at, a, b] = fields[..] {
                    if let (Ok(at), Ok(a), Ok(b)) = (at.parse(), a.parse(), b.parse()) {
                        log.push((at, a, b));
                    }
                }
            }
            CpuLog(log)
        })
    }

    /// Cumulative CPU per phase at `ms`, interpolated between reports.
    fn at(&self, ms: i64) -> (f64, f64) {
        let i = self.0.partition_point(|r| r.0 <= ms);
        match (i.checked_sub(1).map(|j| self.0[j]), self.0.get(i)) {
            (Some(lo), Some(hi)) => {
                let f = (ms - lo.0) as f64 / (hi.0 - lo.0).max(1) as f64;
                (lo.1 + f * (hi.1 - lo.1), lo.2 + f * (hi.2 - lo.2))
            }
            (Some(lo), None) => (lo.1, lo.2),
            (None, _) => (0.0, 0.0),
        }
    }

    /// The four functions' true shares over [start, end): each phase's CPU
    /// time, split 75/25 as its two functions' work is.
    fn truth(&self, start_ms: i64, end_ms: i64) -> [f64; 4] {
        let (a0, b0) = self.at(start_ms);
        let (a1, b1) = self.at(end_ms);
        let (a, b) = ((a1 - a0).max(0.0), (b1 - b0).max(0.0));
        let total = (a + b).max(f64::MIN_POSITIVE);
        let (a, b) = (a / total, b / total);
        [0.75 * a, 0.25 * a, 0.75 * b, 0.25 * b]
    }
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

fn score(snapshots: &[Snapshot], cpu: &CpuLog) -> Score {
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
            cpu.truth(s.window_start_ms, s.window_end_ms),
        ));
    }
    let (start, end) = match (snapshots.first(), snapshots.last()) {
        (Some(first), Some(last)) => (first.window_start_ms, last.window_end_ms),
        _ => (0, 0),
    };
    let whole = cpu.truth(start, end);
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

/// The standard errors a stop rule is held to.
const EPSILONS: [f64; 3] = [0.02, 0.01, 0.005];

/// When a profile's whole-profile shares of the phase functions first
/// reach a standard error of `epsilon` (each, period-weighted as reads
/// merge windows), read window by window as a run's stop rule reads them:
/// the samples used by then, the seconds, and the largest error of the
/// four shares against the truth over the same seconds.
fn reach(snapshots: &[Snapshot], cpu: &CpuLog, epsilon: f64) -> Option<(u64, f64, f64)> {
    let start = snapshots.first()?.window_start_ms;
    let (mut weighted, mut weight_sq) = ([0.0; 4], 0.0);
    let (mut weight_total, mut samples) = (0.0, 0u64);
    for s in snapshots {
        let counts = phase_counts(s);
        let period = s.period as f64;
        let n = s.total_samples();
        for i in 0..4 {
            weighted[i] += counts[i] * period;
        }
        weight_total += n as f64 * period;
        weight_sq += n as f64 * period * period;
        samples += n;
        if weight_total <= 0.0 {
            continue;
        }
        // Kish's effective sample size of samples weighted by period.
        let effective = weight_total * weight_total / weight_sq;
        let shares = weighted.map(|w| w / weight_total);
        let stderr = shares
            .iter()
            .map(|p| (p * (1.0 - p) / effective).sqrt())
            .fold(0.0, f64::max);
        if stderr <= epsilon && shares.iter().any(|&p| p > 0.0) {
            let truth = cpu.truth(start, s.window_end_ms);
            let phase_total: f64 = weighted.iter().sum::<f64>().max(f64::MIN_POSITIVE);
            let error = weighted
                .iter()
                .zip(truth)
                .map(|(w, t)| (w / phase_total - t).abs())
                .fold(0.0, f64::max);
            return Some((samples, (s.window_end_ms - start) as f64 / 1000.0, error));
        }
    }
    None
}

fn main() {
    let binary = common::build_workload("workload-bench-fda");
    let child = Command::new(&binary)
        .args(["phases", &(SECONDS + 5).to_string(), &PHASE_MS.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the workload");
    let mut child = common::Killed(child);
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("start_ms "),
        "the workload prints its start: {line:?}"
    );
    let cpu_log = CpuLog::collect(stdout);
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
    let (fixed, adaptive, budget) = std::thread::scope(|scope| {
        let at = |hz| {
            scope.spawn(move || {
                common::profile(pid, duration, window, hz, CostSettings::default()).0
            })
        };
        let (fixed, budget) = (at(FIXED_HZ), at(BUDGET_HZ));
        let adaptive = scope.spawn(|| common::profile(pid, duration, window, FIXED_HZ, fda).0);
        (
            fixed.join().unwrap(),
            adaptive.join().unwrap(),
            budget.join().unwrap(),
        )
    });

    drop(child);
    let cpu = cpu_log.join().expect("read the workload's CPU log");
    let (fixed_windows, budget_windows) = (fixed, budget);
    let fixed = score(&fixed_windows, &cpu);
    let trajectory: Vec<u32> = adaptive.iter().map(|s| s.frequency_hz).collect();
    let fda = score(&adaptive, &cpu);
    let budget = score(&budget_windows, &cpu);
    println!("FDA frequency per 1 s window: {trajectory:?}");
    println!(
        "{:<14} {:>9} {:>9}   {:>8} {:>8} {:>10}   (MAE of the phase functions' shares)",
        "", "samples", "mean Hz", "profile", "window", "unweighted"
    );
    for (name, s) in [
        (format!("fixed {FIXED_HZ} Hz"), &fixed),
        ("FDA".into(), &fda),
        (format!("fixed {BUDGET_HZ} Hz"), &budget),
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
    println!("samples until the phase functions' shares each reach a standard error of ε (as a stop rule reads the windows; error: the largest against the truth then):");
    for epsilon in EPSILONS {
        let mut line = format!("  ε {epsilon:<6}");
        for (name, snapshots) in [
            (format!("fixed {FIXED_HZ} Hz"), &fixed_windows),
            ("FDA".to_owned(), &adaptive),
            (format!("fixed {BUDGET_HZ} Hz"), &budget_windows),
        ] {
            line.push_str(&match reach(snapshots, &cpu, epsilon) {
                Some((samples, secs, error)) => {
                    format!("  {name}: {samples} samples in {secs:.0} s (error {error:.4})")
                }
                None => format!("  {name}: not reached in {SECONDS} s"),
            });
        }
        println!("{line}");
    }
    println!(
        "MAE of FDA's profile shares against the fixed run's: {:.4}",
        mae(&fda.profile_shares, 1.0, fixed.profile_shares)
    );
    println!(
        "ratios FDA/fixed {BUDGET_HZ} Hz (about the same samples): samples {:.3}, profile MAE {:.3}, window MAE {:.3}",
        fda.samples as f64 / budget.samples.max(1) as f64,
        ratio(fda.profile_mae, budget.profile_mae),
        ratio(fda.window_mae, budget.window_mae),
    );
}
