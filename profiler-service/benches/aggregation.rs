//! The agent's CPU to turn about 1,000,000 samples into snapshots, against
//! `perf script | inferno-collapse-perf` folding the same number of samples
//! of the same workload.
//!
//! Setup (untimed): the call-tree workload (benches/data/tree.c) runs
//! throughout; `perf record -g -e cpu-clock -c 10000` records it until its
//! perf.data holds about 1,000,000 samples, and the raw call chains of its
//! first 100,000 samples are read back (`perf script -D`) with the
//! recorded pid and tid.
//!
//! Timed, in alternating rounds (medians printed):
//! - the agent: those chains, cycled up to the count in the perf.data, go
//!   through the native plugin's own code after the ring buffer
//!   (`plugin::native::add_samples`): symbolized by the agent's caches
//!   (`Symbols`, against the live workload), interned per window (`WindowSink`) in
//!   polls of 50 samples (one busy thread at 999 Hz drained every 50 ms),
//!   cut into 10 s windows of 9,990 samples with the agent's default cost
//!   control (FSP 0.99, 1 % budget) and encoded for publishing. Its CPU
//!   is this thread's. Draining the ring buffers themselves is not in it:
//!   the overhead bench measures the whole agent live.
//! - the baseline: `perf script` on the perf.data piped into
//!   `inferno-collapse-perf`; its CPU is both processes', as children.
//!
//! Run by hand: `cargo bench -p odp-profiler-service --bench aggregation`
//! (about 3 minutes; needs perf_event access, `perf` and
//! `inferno-collapse-perf` on PATH).

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use odp_core::cost::StartOptions;
use odp_core::snapshot::SnapshotHeader;
use odp_core::EventKind;
use odp_profiler_service::cost::budget::thread_cpu_time;
use odp_profiler_service::cost::control::Control;
use odp_profiler_service::cost::CostDefaults;
use odp_profiler_service::plugin::native::add_samples;
use odp_profiler_service::plugin::native::perf::{split_callchain, RawSample};
use odp_profiler_service::plugin::native::symbolize::Symbols;
use odp_profiler_service::plugin::WindowSink;
use odp_profiler_service::targets::ProcFs;
use uuid::Uuid;

mod common;

const TARGET_SAMPLES: u64 = 1_000_000;
/// Chains read back: far more than the workload's distinct stacks.
const CHAIN_SOURCE: usize = 100_000;
/// Nanoseconds of CPU per sample when recording.
const RECORD_PERIOD_NS: u64 = 10_000;
const HZ: u32 = 999;
const POLL_SAMPLES: usize = 50;
const WINDOW_SAMPLES: u64 = 9_990;

/// Records `pid` for `seconds` into `out`.
fn record(pid: u32, seconds: f64, out: &Path) {
    let status = Command::new("perf")
        .args(["record", "-q", "-g", "-e", "cpu-clock", "-c"])
        .arg(RECORD_PERIOD_NS.to_string())
        .arg("-p")
        .arg(pid.to_string())
        .arg("-o")
        .arg(out)
        .args(["--", "sleep", &format!("{seconds:.2}")])
        .stdout(Stdio::null())
        .status()
        .expect("run perf record");
    assert!(status.success(), "perf record failed: {status}");
}

/// Samples in a perf.data (one `perf script -F pid` line each).
fn count_samples(data: &Path) -> u64 {
    let out = Command::new("perf")
        .args(["script", "-F", "pid", "-i"])
        .arg(data)
        .stderr(Stdio::null())
        .output()
        .expect("run perf script");
    out.stdout.iter().filter(|&&b| b == b'\n').count() as u64
}

/// The raw call chains of the first `limit` samples, from `perf script
/// -D`'s dump (the only output with absolute addresses): a
/// `PERF_RECORD_SAMPLE(...): PID/TID: ...` line, then `... chain: nr:N`
/// and N lines `..... i: ADDRESS`.
fn read_chains(data: &Path, limit: usize) -> Vec<RawSample> {
    let mut dump = Command::new("perf")
        .args(["script", "-D", "-i"])
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run perf script -D");
    let mut chains = Vec::with_capacity(limit);
    let (mut ids, mut addrs) = (None, Vec::new());
    let mut left = 0usize;
    for line in BufReader::new(dump.stdout.take().expect("piped")).lines() {
        let line = line.expect("read perf script -D");
        if left > 0 {
            let addr = line.rsplit(' ').next().unwrap_or_default();
            addrs.push(u64::from_str_radix(addr, 16).expect("a chain address"));
            left -= 1;
            if left == 0 {
                if let Some((pid, tid)) = ids.take() {
                    let (mut kernel, mut user) = (Vec::new(), Vec::new());
                    split_callchain(&addrs, &mut kernel, &mut user);
                    chains.push(RawSample {
                        pid,
                        tid,
                        kernel,
                        user,
                        ..RawSample::default()
                    });
                }
                addrs.clear();
                if chains.len() == limit {
                    break;
                }
            }
        } else if line.contains("PERF_RECORD_SAMPLE(") {
            ids = line.split("): ").nth(1).and_then(|rest| {
                let (pid, tid) = rest.split_once(':')?.0.split_once('/')?;
                Some((pid.parse().ok()?, tid.parse().ok()?))
            });
        } else if let Some(nr) = line.split("chain: nr:").nth(1) {
            left = nr.trim().parse().expect("a chain length");
        }
    }
    // Enough read: stop the dump of the rest.
    let _ = dump.kill();
    let _ = dump.wait();
    chains
}

/// What one agent pass produced.
struct AgentPass {
    cpu: Duration,
    wall: Duration,
    windows: u64,
    stacks: usize,
    bytes: usize,
}

/// `total` samples cycled from `chains` through the agent's path, with
/// cold symbol caches as a new profile has.
fn agent_pass(chains: &[RawSample], total: u64, names: &HashMap<u32, String>) -> AgentPass {
    let cost = CostDefaults::default()
        .resolve(HZ, &StartOptions::default())
        .expect("the default cost settings");
    let cpu_start = thread_cpu_time().expect("thread CPU time");
    let start = Instant::now();
    let profile_id = Uuid::new_v4();
    let mut symbols = Symbols::new(ProcFs::default());
    let mut control = Control::new(profile_id, HZ, cost, start);
    let mut sink = WindowSink::new();
    let (mut fed, mut windows, mut stacks, mut bytes) = (0u64, 0u64, 0, 0);
    let mut next = chains.iter().cycle();
    while fed < total {
        let n = (total - fed).min(POLL_SAMPLES as u64);
        let batch: Vec<&RawSample> = next.by_ref().take(n as usize).collect();
        add_samples(&mut symbols, &mut sink, &batch, names);
        fed += n;
        if sink.samples() >= WINDOW_SAMPLES || fed == total {
            let start_ms = windows as i64 * 10_000;
            let mut snapshot = sink.take(SnapshotHeader {
                profile_id,
                host: "bench".into(),
                agent_id: "bench".into(),
                sequence: windows,
                window_start_ms: start_ms,
                window_end_ms: start_ms + 10_000,
                event: EventKind::CpuClock,
                period: 1_000_000_000 / u64::from(HZ),
                frequency_hz: HZ,
            });
            control.close_window(&mut snapshot, Instant::now(), Duration::ZERO);
            stacks += snapshot.stacks.len();
            bytes += snapshot.encode().len();
            windows += 1;
        }
    }
    AgentPass {
        cpu: thread_cpu_time().expect("thread CPU time") - cpu_start,
        wall: start.elapsed(),
        windows,
        stacks,
        bytes,
    }
}

/// CPU of `perf script` and of `inferno-collapse-perf` folding `data`,
/// the wall time, and the folded stacks written.
fn baseline_pass(data: &Path) -> (Duration, Duration, Duration, usize) {
    let start = Instant::now();
    let cpu_before = common::reaped_children_cpu();
    let mut script = Command::new("perf")
        .arg("script")
        .arg("-i")
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run perf script");
    let mut collapse = Command::new("inferno-collapse-perf")
        .stdin(script.stdout.take().expect("piped"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("run inferno-collapse-perf");
    let folded = BufReader::new(collapse.stdout.take().expect("piped"))
        .lines()
        .count();
    // perf script ends first (the collapse reads to its end of file), so
    // each difference is one process's CPU.
    assert!(script.wait().expect("wait perf script").success());
    let cpu_script = common::reaped_children_cpu() - cpu_before;
    assert!(collapse.wait().expect("wait inferno").success());
    let cpu_collapse = common::reaped_children_cpu() - cpu_before - cpu_script;
    (cpu_script, cpu_collapse, start.elapsed(), folded)
}

fn main() {
    common::require_tool("perf", "install it (Debian: apt-get install linux-perf)");
    common::require_tool(
        "inferno-collapse-perf",
        "install it with `cargo install inferno --locked`",
    );
    let tree = common::build_tree("tree-bench-aggregation");
    let workload = common::start(&tree, &["run", "0"]);
    let pid = workload.0.id();
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let data = scratch.path().join("perf.data");

    // The sample rate a busy thread gets here decides how long to record;
    // it drifts with the other load on the machine, so record again while
    // well off the target.
    let mut seconds = 1.0;
    let mut samples = 0;
    for _ in 0..4 {
        record(pid, seconds, &data);
        samples = count_samples(&data);
        if (TARGET_SAMPLES * 95 / 100..=TARGET_SAMPLES * 5 / 4).contains(&samples) {
            break;
        }
        let rate = samples.max(1) as f64 / seconds;
        seconds = (1.05 * TARGET_SAMPLES as f64 / rate).clamp(1.0, 300.0);
        eprintln!("recording ~{TARGET_SAMPLES} samples at {rate:.0}/s ({seconds:.0} s) ...");
    }
    let chains = read_chains(&data, CHAIN_SOURCE);
    assert!(!chains.is_empty(), "no call chains in the recording");
    let names: HashMap<u32, String> = chains
        .iter()
        .filter_map(|c| Some((c.tid, ProcFs::default().thread_comm(c.pid, c.tid)?)))
        .collect();
    let frames: usize = chains.iter().map(|c| c.user.len() + c.kernel.len()).sum();
    println!(
        "{samples} samples in the perf.data; the agent gets as many, cycled from its first {} chains ({:.1} frames each)",
        chains.len(),
        frames as f64 / chains.len() as f64
    );

    let rounds = common::rounds(3);
    let (mut agent, mut script, mut collapse) = (Vec::new(), Vec::new(), Vec::new());
    let mut last = None;
    for round in 1..=rounds {
        let pass = agent_pass(&chains, samples, &names);
        let (s, c, wall, folded) = baseline_pass(&data);
        eprintln!(
            "round {round}: agent {:.3} s CPU ({:.3} s wall); perf script {:.2} s + inferno {:.2} s CPU ({:.2} s wall)",
            pass.cpu.as_secs_f64(),
            pass.wall.as_secs_f64(),
            s.as_secs_f64(),
            c.as_secs_f64(),
            wall.as_secs_f64()
        );
        agent.push(pass.cpu.as_secs_f64());
        script.push(s.as_secs_f64());
        collapse.push(c.as_secs_f64());
        last = Some((pass, folded));
    }
    drop(workload);
    let (pass, folded) = last.expect("at least one round");
    let (agent, script, collapse) = (
        common::median(agent),
        common::median(script),
        common::median(collapse),
    );
    println!(
        "agent: {} windows, {} stacks, {} bytes encoded; inferno: {folded} folded stacks",
        pass.windows, pass.stacks, pass.bytes
    );
    println!("medians over {rounds} rounds, CPU seconds:");
    println!(
        "  agent (symbolize + aggregate + encode)   {agent:>8.3} s   {:>6.2} µs/sample",
        1e6 * agent / samples as f64
    );
    println!(
        "  perf script | inferno-collapse-perf     {:>8.3} s   {:>6.2} µs/sample (perf script {script:.3} s, inferno {collapse:.3} s)",
        script + collapse,
        1e6 * (script + collapse) / samples as f64
    );
    println!(
        "  agent / (perf script | inferno-collapse-perf) = {:.3}×",
        agent / (script + collapse)
    );
}
