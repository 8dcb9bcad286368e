//! What an off-CPU profile costs: a workload that switches at a fixed rate
//! (benches/data/switches.c: threads passing a token through pipes, about
//! 10,000 switches a second per pair) unprofiled, under the agent's
//! `off-cpu` profile at 99 Hz, and under `perf record -e
//! sched:sched_switch -g` (every switch, writing to a temporary file).
//!
//! Printed per condition: the workload's hand-offs per second (and so its
//! throughput loss against the unprofiled run of the same round), its
//! switches per second, and the profiler's CPU time, as a share of one core
//! and per 1,000 switches a second. The agent's figure is its sampling
//! thread (draining, pairing switch-outs with switch-ins, unwinding,
//! symbolizing and encoding 1 s windows); perf's is the whole `perf
//! record` process. The agent keeps about 99 stacks per thread and second
//! whatever the switch rate (1 switch in N, weighted N): perf records
//! every switch. Goal of issue 14: the agent at most 0.5x perf's CPU.
//!
//! Run by hand: `cargo bench -p odp-profiler-service --bench offcpu`
//! (about 2 minutes for 5 rounds; `ODP_BENCH_ROUNDS` sets the rounds;
//! needs root and `perf` on PATH).

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use odp_core::EventKind;

mod common;

const WARMUP_MS: u64 = 1_000;
const MEASURE_MS: u64 = 5_000;
const HZ: u32 = 99;
/// Pairs of threads passing the token.
const PAIRS: &str = "1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Condition {
    Unprofiled,
    Agent,
    Perf,
}

const CONDITIONS: [Condition; 3] = [Condition::Unprofiled, Condition::Agent, Condition::Perf];

impl Condition {
    fn name(self) -> &'static str {
        match self {
            Condition::Unprofiled => "unprofiled",
            Condition::Agent => "agent off-cpu@99Hz",
            Condition::Perf => "perf sched_switch -g",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Run {
    handoffs_per_s: f64,
    switches_per_s: f64,
    /// The profiler's CPU seconds per second of its life.
    profiler_share: f64,
}

impl Run {
    /// The profiler's share of a core per 1,000 switches a second.
    fn per_thousand(&self) -> f64 {
        self.profiler_share / (self.switches_per_s / 1000.0)
    }
}

/// The workload's `handoffs N seconds S switches K` line.
fn parse(line: &str) -> (f64, f64) {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let value = |key: &str| -> f64 {
        let at = fields.iter().position(|f| *f == key);
        at.and_then(|i| fields.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in the workload's line {line:?}"))
    };
    let seconds = value("seconds");
    (value("handoffs") / seconds, value("switches") / seconds)
}

fn run(binary: &Path, condition: Condition, perf_data: &Path) -> Run {
    let (warmup, measure) = (WARMUP_MS.to_string(), MEASURE_MS.to_string());
    let (mut workload, read_line) = common::start_reporting(binary, &[&warmup, &measure, PAIRS]);
    let pid = workload.id();
    let (line, profiler_share) = match condition {
        Condition::Unprofiled => (read_line(), 0.0),
        Condition::Agent => {
            let (stop, stop_rx) = mpsc::channel();
            let agent = std::thread::spawn(move || {
                common::profile_cost(
                    pid,
                    Duration::from_secs(1),
                    HZ,
                    Some(EventKind::OffCpu),
                    &stop_rx,
                )
            });
            let line = read_line();
            stop.send(()).ok();
            let cost = agent.join().expect("the agent thread");
            (line, cost.cpu.as_secs_f64() / cost.wall.as_secs_f64())
        }
        Condition::Perf => {
            let args = ["-q", "-g", "-e", "sched:sched_switch"];
            common::perf_record(&args, pid, perf_data, read_line)
        }
    };
    workload.wait().expect("wait for the workload");
    let (handoffs_per_s, switches_per_s) = parse(&line);
    Run {
        handoffs_per_s,
        switches_per_s,
        profiler_share,
    }
}

fn main() {
    common::require_tool("perf", "install it (Debian: apt-get install linux-perf)");
    let binary = common::build_switches("switches-bench-offcpu");
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let perf_data = scratch.path().join("perf.data");
    let rounds = common::rounds(5);
    eprintln!(
        "{rounds} rounds of 3 conditions, {} s each ...",
        (WARMUP_MS + MEASURE_MS) / 1000
    );
    let mut runs: Vec<[Run; 3]> = Vec::new();
    for round in 0..rounds {
        let mut slot = [None; 3];
        for k in 0..CONDITIONS.len() {
            let i = (k + round) % CONDITIONS.len();
            slot[i] = Some(run(&binary, CONDITIONS[i], &perf_data));
        }
        let round_runs = slot.map(Option::unwrap);
        eprintln!(
            "round {}: {}",
            round + 1,
            CONDITIONS
                .iter()
                .zip(&round_runs)
                .map(|(c, r)| format!(
                    "{} {:.0} hand-offs/s, {:.0} switches/s, CPU {:.2} %",
                    c.name(),
                    r.handoffs_per_s,
                    r.switches_per_s,
                    100.0 * r.profiler_share
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        runs.push(round_runs);
    }
    report(&runs);
}

fn report(runs: &[[Run; 3]]) {
    let median = |f: &dyn Fn(&[Run; 3]) -> f64| common::median(runs.iter().map(f).collect());
    println!(
        "{:<22} {:>13} {:>12} {:>10} {:>14} {:>16}",
        "", "hand-offs/s", "switches/s", "loss", "profiler CPU", "per 1k switch/s"
    );
    for (i, c) in CONDITIONS.iter().enumerate() {
        println!(
            "{:<22} {:>13.0} {:>12.0} {:>8.2} % {:>12.2} % {:>14.3} %",
            c.name(),
            median(&|r| r[i].handoffs_per_s),
            median(&|r| r[i].switches_per_s),
            100.0 * median(&|r| 1.0 - r[i].handoffs_per_s / r[0].handoffs_per_s),
            100.0 * median(&|r| r[i].profiler_share),
            100.0 * median(&|r| r[i].per_thousand()),
        );
    }
    let ratio = median(&|r| r[1].per_thousand() / r[2].per_thousand());
    println!(
        "medians over {} rounds: agent CPU per 1,000 switches/s = {ratio:.3}x perf's (goal <= 0.5x); \
         throughput {:.3}x unprofiled under the agent, {:.3}x under perf",
        runs.len(),
        median(&|r| r[1].handoffs_per_s / r[0].handoffs_per_s),
        median(&|r| r[2].handoffs_per_s / r[0].handoffs_per_s),
    );
}
