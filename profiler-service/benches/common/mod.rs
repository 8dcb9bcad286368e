//! Shared by the agent's benchmarks: the C workloads, a profile run through
//! the real runner, and the bookkeeping of CPU time and repeated rounds.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use odp_core::cost::CostEventKind;
use odp_core::{EventKind, Snapshot, Target};
use odp_profiler_service::cost::budget::thread_cpu_time;
use odp_profiler_service::cost::CostSettings;
use odp_profiler_service::plugin::Plugins;
use odp_profiler_service::sampling_thread::{self, ProfileSpec, RunnerEvent};
use odp_profiler_service::targets::ProcFs;
use uuid::Uuid;

/// Compiles tests/data/workload.c.
pub fn build_workload(name: &str) -> PathBuf {
    build_c("tests/data/workload.c", name)
}

/// Compiles benches/data/switches.c, the fixed rate of context switches.
pub fn build_switches(name: &str) -> PathBuf {
    build_c("benches/data/switches.c", name)
}

/// Compiles benches/data/tree.c, the fixed-work call tree.
pub fn build_tree(name: &str) -> PathBuf {
    build_c("benches/data/tree.c", name)
}

/// Compiles a C file of this crate with frame pointers (the kernel's
/// unwinder needs them) and without debug info (so `perf script` has no
/// DWARF to read that the agent does not read either).
fn build_c(source: &str, name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let status = Command::new("cc")
        .args(["-O2", "-pthread", "-fno-omit-frame-pointer"])
        .arg("-mno-omit-leaf-frame-pointer")
        .arg("-o")
        .arg(&out)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) is needed");
    assert!(status.success(), "cc failed on {}", source.display());
    out
}

/// A child killed on drop.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn start(binary: &Path, args: &[&str]) -> Killed {
    let child = Command::new(binary)
        .args(args)
        .spawn()
        .expect("start workload");
    std::thread::sleep(Duration::from_millis(500));
    Killed(child)
}

/// Profiles `pid` with the real native plugin; returns the windows and
/// cost reports.
pub fn profile(
    pid: u32,
    duration: Duration,
    window: Duration,
    frequency_hz: u32,
    cost: CostSettings,
) -> (Vec<Snapshot>, Vec<CostEventKind>) {
    let (_stop, stop_rx) = mpsc::channel();
    let (mut snapshots, mut reports) = (Vec::new(), Vec::new());
    run_profile(
        (pid, duration, window, frequency_hz, None),
        cost,
        &stop_rx,
        |e| match e {
            RunnerEvent::Window(s) => snapshots.push(*s),
            RunnerEvent::Cost(k) => reports.push(k),
            _ => {}
        },
    );
    (snapshots, reports)
}

/// What a profile cost the thread that ran it.
#[derive(Debug, Clone, Copy)]
pub struct AgentCost {
    pub cpu: Duration,
    pub wall: Duration,
    pub samples: u64,
    /// Bytes of the snapshots as the agent publishes them.
    pub encoded_bytes: usize,
    /// CPU over wall time after the first window closed: without the
    /// one-off loading of the target's symbol tables (kallsyms, though, is
    /// loaded at the first kernel frame, which may come later).
    pub steady_share: Option<f64>,
}

/// Profiles `pid` with the real native plugin (measuring `event`, its CPU
/// event when `None`) until `stop` fires, on the calling thread, encoding
/// each window as the agent does before publishing; returns that thread's
/// CPU time (all of the per-sample work).
pub fn profile_cost(
    pid: u32,
    window: Duration,
    frequency_hz: u32,
    event: Option<EventKind>,
    stop: &Receiver<()>,
) -> AgentCost {
    let cpu_start = thread_cpu_time().expect("thread CPU time from /proc");
    let start = Instant::now();
    let (mut samples, mut encoded_bytes, mut first_window) = (0, 0, None);
    let duration = Duration::from_secs(3600);
    let on_event = |e| {
        if let RunnerEvent::Window(s) = e {
            samples += s.total_samples();
            encoded_bytes += s.encode().len();
            first_window.get_or_insert_with(|| (thread_cpu_time(), Instant::now()));
        }
    };
    let cost = CostSettings::default();
    let profile = (pid, duration, window, frequency_hz, event);
    run_profile(profile, cost, stop, on_event);
    let cpu_end = thread_cpu_time().expect("thread CPU time from /proc");
    let steady_share = first_window.and_then(|(cpu, at)| {
        let (cpu, wall) = (cpu?, at.elapsed().as_secs_f64());
        (wall > 0.5).then(|| (cpu_end - cpu).as_secs_f64() / wall)
    });
    AgentCost {
        cpu: cpu_end - cpu_start,
        wall: start.elapsed(),
        samples,
        encoded_bytes,
        steady_share,
    }
}

/// `(pid, duration, window, frequency_hz, event)` of a profile.
type ProfileArgs = (u32, Duration, Duration, u32, Option<EventKind>);

fn run_profile(
    (pid, duration, window, frequency_hz, event): ProfileArgs,
    cost: CostSettings,
    stop: &Receiver<()>,
    mut on_event: impl FnMut(RunnerEvent),
) {
    let spec = ProfileSpec {
        profile_id: Uuid::new_v4(),
        host: "bench".into(),
        agent_id: "bench".into(),
        target: Target::Pid(pid),
        include_children: false,
        duration,
        frequency_hz,
        window,
        cost,
        plugin: None,
        event,
        min_wait: None,
        max_message_bytes: odp_core::snapshot::MAX_MESSAGE_BYTES,
    };
    sampling_thread::run(&Plugins::default(), &ProcFs::default(), &spec, stop, |e| {
        if let RunnerEvent::Failed(e) = e {
            panic!("profile failed: {e} (needs perf_event access, like the live tests)");
        }
        on_event(e);
        true
    });
}

/// Leaf (self) samples per function of one window.
pub fn leaves(s: &Snapshot) -> std::collections::HashMap<String, u64> {
    odp_profiler_service::cost::control::leaf_counts(s)
}

/// CPU time of this process's children that have been waited for (with
/// theirs), from `/proc/self/stat` (`cutime` + `cstime`, fields 16 and 17):
/// the difference around a child's life is its CPU time, to 10 ms.
pub fn reaped_children_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    let rest = &stat[stat.rfind(')').expect("a stat line") + 1..];
    let ticks: u64 = rest
        .split_whitespace()
        .skip(13)
        .take(2)
        .map(|v| v.parse::<u64>().expect("numeric stat field"))
        .sum();
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

/// Starts a workload that prints one result line when it is done, with
/// its stdout piped; returns it and the reader of that line.
pub fn start_reporting(binary: &Path, args: &[&str]) -> (Child, impl FnOnce() -> String) {
    let mut workload = Command::new(binary)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the workload");
    let stdout = workload.stdout.take().expect("piped stdout");
    let read_line = move || {
        use std::io::BufRead as _;
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the workload's result");
        line
    };
    (workload, read_line)
}

/// Runs `perf record ARGS -p PID -o DATA` while `during` runs (reading the
/// workload's result), until perf ends with its target; returns what
/// `during` returned and perf's CPU share of one core over its life. Only
/// perf is reaped between the two readings of the children's CPU: the
/// workload is reaped after, so its CPU stays out.
pub fn perf_record<T>(
    args: &[&str],
    pid: u32,
    data: &Path,
    during: impl FnOnce() -> T,
) -> (T, f64) {
    let cpu_before = reaped_children_cpu();
    let start = Instant::now();
    let mut perf = Command::new("perf")
        .arg("record")
        .args(args)
        .arg("-p")
        .arg(pid.to_string())
        .arg("-o")
        .arg(data)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start perf record");
    let result = during();
    // perf record -p ends by itself once its target exits.
    let status = perf.wait().expect("wait for perf record");
    assert!(status.success(), "perf record failed: {status}");
    let cpu = reaped_children_cpu() - cpu_before;
    (result, cpu.as_secs_f64() / start.elapsed().as_secs_f64())
}

/// Rounds to repeat, from `ODP_BENCH_ROUNDS` or `default`.
pub fn rounds(default: usize) -> usize {
    std::env::var("ODP_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Exits with `hint` unless `tool` is an executable on `PATH`.
pub fn require_tool(tool: &str, hint: &str) {
    use std::os::unix::fs::PermissionsExt;
    let found = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(tool))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    });
    if !found {
        eprintln!("{tool} is not on PATH: {hint}");
        std::process::exit(2);
    }
}
