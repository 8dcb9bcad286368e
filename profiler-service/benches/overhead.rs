//! What profiling costs a CPU-bound process: the throughput of a fixed
//! workload (benches/data/tree.c walking a call tree on one thread) with
//! the agent's native plugin sampling it at 99 and 999 Hz, and as a
//! continuous profile samples it (19 Hz, the agent's default 10 s windows),
//! against the
//! same workload unprofiled and under `perf record -g -e cpu-clock` at the
//! same rates (writing to a temporary file).
//!
//! Two costs are reported, since either alone flatters a profiler:
//! - the workload's throughput (walks per wall second over a 5 s span after
//!   a 1 s warm-up in which the profiler attaches), which carries the
//!   kernel's cost of taking samples; and walks per CPU second of the
//!   workload, which is steadier when other builds share the cores;
//! - the profiler's own CPU time per second of its run: the agent's
//!   sampling thread (draining, symbolizing, aggregating, cutting 1 s
//!   windows and encoding them as for publishing), or the whole `perf
//!   record` process including its final build-id pass.
//!
//! The agent runs in this process through the runner (the agent binary's
//! sampling path, without Kafka), with cost control off so it holds the
//! asked frequency. Conditions alternate within each round and every
//! round's ratios are taken against that round's unprofiled run; the
//! medians over rounds are printed. The 2-core VM is noisy: read ratios.
//!
//! Run by hand: `cargo bench -p odp-profiler-service --bench overhead`
//! (about 7 minutes for 6 rounds; `ODP_BENCH_ROUNDS` sets the rounds; needs
//! perf_event access like the live tests, and `perf` on PATH).

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

mod common;

const WARMUP_MS: u64 = 1_000;
const MEASURE_MS: u64 = 5_000;
const RATES: [u32; 2] = [99, 999];
/// A continuous profile: its rate, the agent's default window, a run long
/// enough for two windows after the first, and the agent's CPU budget per
/// profiled process at it (issue 29): a fifth of a percent of a core.
const CONTINUOUS_HZ: u32 = 19;
const CONTINUOUS_WINDOW: Duration = Duration::from_secs(10);
const CONTINUOUS_MEASURE_MS: u64 = 30_000;
const CONTINUOUS_TARGET: f64 = 0.002;
const WINDOW: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Condition {
    Unprofiled,
    Agent(u32),
    /// The agent as a continuous profile runs it.
    Continuous,
    Perf(u32),
}

impl Condition {
    fn all() -> Vec<Condition> {
        let mut all = vec![Condition::Unprofiled];
        all.extend(RATES.map(Condition::Agent));
        all.push(Condition::Continuous);
        all.extend(RATES.map(Condition::Perf));
        all
    }

    fn name(self) -> String {
        match self {
            Condition::Unprofiled => "unprofiled".into(),
            Condition::Agent(hz) => format!("agent@{hz}Hz"),
            Condition::Continuous => format!("continuous@{CONTINUOUS_HZ}Hz"),
            Condition::Perf(hz) => format!("perf@{hz}Hz"),
        }
    }
}

/// One run of the workload under one condition.
#[derive(Debug, Clone, Copy)]
struct Run {
    walks_per_s: f64,
    walks_per_cpu_s: f64,
    /// The profiler's CPU seconds per second of its life.
    profiler_share: f64,
    /// The agent's CPU share after its first window (see
    /// `common::AgentCost::steady_share`).
    steady_share: Option<f64>,
    /// Samples the profiler took per second (agent only; perf's file is
    /// not read back).
    samples_per_s: Option<f64>,
}

/// The workload's `walks N seconds S cpu C` line: (walks/s, walks/CPU s).
fn throughput(line: &str) -> (f64, f64) {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let value = |key: &str| -> f64 {
        let at = fields.iter().position(|f| *f == key);
        at.and_then(|i| fields.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in the workload's line {line:?}"))
    };
    let walks = value("walks");
    (walks / value("seconds"), walks / value("cpu"))
}

fn run(tree: &Path, condition: Condition, perf_data: &Path) -> Run {
    let measure_ms = if condition == Condition::Continuous {
        CONTINUOUS_MEASURE_MS
    } else {
        MEASURE_MS
    };
    let (warmup, measure) = (WARMUP_MS.to_string(), measure_ms.to_string());
    let (mut workload, read_line) = common::start_reporting(tree, &["count", &warmup, &measure]);
    let pid = workload.id();
    let (mut steady_share, mut samples_per_s) = (None, None);
    let (line, profiler_share) = match condition {
        Condition::Unprofiled => (read_line(), 0.0),
        Condition::Agent(_) | Condition::Continuous => {
            let (hz, window) = match condition {
                Condition::Agent(hz) => (hz, WINDOW),
                _ => (CONTINUOUS_HZ, CONTINUOUS_WINDOW),
            };
            let (stop, stop_rx) = mpsc::channel();
            let agent =
                std::thread::spawn(move || common::profile_cost(pid, window, hz, None, &stop_rx));
            let line = read_line();
            // The sender dropping would stop it too; sending says why.
            stop.send(()).ok();
            let cost = agent.join().expect("the agent thread");
            let wall = cost.wall.as_secs_f64();
            steady_share = cost.steady_share;
            samples_per_s = Some(cost.samples as f64 / wall);
            (line, cost.cpu.as_secs_f64() / wall)
        }
        Condition::Perf(hz) => {
            let hz = hz.to_string();
            let args = ["-q", "-g", "-e", "cpu-clock", "-F", &hz];
            common::perf_record(&args, pid, perf_data, read_line)
        }
    };
    workload.wait().expect("wait for the workload");
    let (walks_per_s, walks_per_cpu_s) = throughput(&line);
    Run {
        walks_per_s,
        walks_per_cpu_s,
        profiler_share,
        steady_share,
        samples_per_s,
    }
}

fn main() {
    common::require_tool("perf", "install it (Debian: apt-get install linux-perf)");
    let tree = common::build_tree("tree-bench-overhead");
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let perf_data = scratch.path().join("perf.data");
    let conditions = Condition::all();
    let rounds = common::rounds(6);
    eprintln!(
        "{rounds} rounds of {} conditions, {} s each (the continuous one {} s) ...",
        conditions.len(),
        (WARMUP_MS + MEASURE_MS) / 1000,
        (WARMUP_MS + CONTINUOUS_MEASURE_MS) / 1000
    );
    // runs[round][condition]
    let mut runs: Vec<Vec<Run>> = Vec::new();
    for round in 0..rounds {
        // Rotate the order so no condition always runs right after
        // another's clean-up.
        let mut slot = vec![None; conditions.len()];
        for k in 0..conditions.len() {
            let i = (k + round) % conditions.len();
            slot[i] = Some(run(&tree, conditions[i], &perf_data));
        }
        let round_runs: Vec<Run> = slot.into_iter().map(Option::unwrap).collect();
        let base = round_runs[0].walks_per_s;
        let line: Vec<String> = conditions
            .iter()
            .zip(&round_runs)
            .skip(1)
            .map(|(c, r)| format!("{} {:.3}", c.name(), r.walks_per_s / base))
            .collect();
        eprintln!(
            "round {}: unprofiled {base:.0} walks/s; {}",
            round + 1,
            line.join(", ")
        );
        runs.push(round_runs);
    }
    report(&conditions, &runs);
}

fn report(conditions: &[Condition], runs: &[Vec<Run>]) {
    // Medians over rounds of one figure of condition `i`.
    let median = |i: usize, f: &dyn Fn(&Run, &Run) -> f64| -> f64 {
        common::median(runs.iter().map(|r| f(&r[i], &r[0])).collect())
    };
    println!(
        "{:<14} {:>9} {:>12} {:>10} {:>13} {:>17} {:>11}",
        "", "walks/s", "walks/CPU-s", "samples/s", "profiler CPU", "after 1st window", "loss + CPU"
    );
    // The median of a figure only some conditions have, or "-".
    let optional = |i: usize, f: &dyn Fn(&Run) -> Option<f64>, percent: bool| {
        let values: Vec<f64> = runs.iter().filter_map(|r| f(&r[i])).collect();
        match (values.is_empty(), percent) {
            (true, _) => "-".to_owned(),
            (false, true) => format!("{:.2} %", 100.0 * common::median(values)),
            (false, false) => format!("{:.0}", common::median(values)),
        }
    };
    for (i, c) in conditions.iter().enumerate() {
        let samples = optional(i, &|r| r.samples_per_s, false);
        let steady = optional(i, &|r| r.steady_share, true);
        println!(
            "{:<14} {:>9.0} {:>12.0} {samples:>10} {:>11.2} % {steady:>17} {:>9.2} %",
            c.name(),
            median(i, &|r, _| r.walks_per_s),
            median(i, &|r, _| r.walks_per_cpu_s),
            100.0 * median(i, &|r, _| r.profiler_share),
            100.0
                * median(i, &|r, base| 1.0 - r.walks_per_s / base.walks_per_s
                    + r.profiler_share),
        );
    }
    continuous_target(conditions, runs);
    println!("medians over {} rounds of each round's ratios:", runs.len());
    for (i, c) in conditions.iter().enumerate().skip(1) {
        let wall: Vec<f64> = runs
            .iter()
            .map(|r| r[i].walks_per_s / r[0].walks_per_s)
            .collect();
        let (lo, hi) = wall
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        println!(
            "  {} / unprofiled = {:.3}× throughput (rounds {lo:.3}–{hi:.3}), {:.3}× per workload CPU s; \
             profiler CPU {:.2} % of a core",
            c.name(),
            common::median(wall),
            median(i, &|r, base| r.walks_per_cpu_s / base.walks_per_cpu_s),
            100.0 * median(i, &|r, _| r.profiler_share),
        );
    }
}

/// The agent's CPU at continuous profiles' rate against its budget: over
/// its whole run (attaching and symbolizing included) and after its first
/// window (what an always-on profile costs hour after hour).
fn continuous_target(conditions: &[Condition], runs: &[Vec<Run>]) {
    let Some(i) = conditions.iter().position(|c| *c == Condition::Continuous) else {
        return;
    };
    let whole = common::median(runs.iter().map(|r| r[i].profiler_share).collect());
    let steady: Vec<f64> = runs.iter().filter_map(|r| r[i].steady_share).collect();
    let steady = (!steady.is_empty()).then(|| common::median(steady));
    println!(
        "continuous profile ({CONTINUOUS_HZ} Hz, {} s windows), one profiled process: agent CPU {:.3} % \
         of a core over its run, {} after its first window (target <= {:.1} %)",
        CONTINUOUS_WINDOW.as_secs(),
        100.0 * whole,
        steady.map_or("-".to_owned(), |s| format!("{:.3} %", 100.0 * s)),
        100.0 * CONTINUOUS_TARGET
    );
}
