//! Live `include_children` (issue 28): a shell profiled by pid while it
//! runs a loop of short processes, through the real sampling thread. With
//! the option, per CPU, every child is sampled from its first sample: the
//! samples match the CPU time the shell and its children used (the shell's
//! own and its waited-for children's times, `/proc/PID/stat`). Without
//! it, the children's samples are not the profile's. Per thread, rescans
//! find descendants that live longer than a rescan period.
//!
//! Needs system-wide perf_event rights (root or CAP_PERFMON) for the
//! per-CPU mode, and a C compiler.

use std::process::Command;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use odp_core::event::FinishReason;
use odp_core::{Snapshot, Target};
use odp_profiler_service::plugin::{PluginSettings, Plugins};
use odp_profiler_service::sampling_thread::{self, ProfileSpec, RunnerEvent};
use odp_profiler_service::targets::{ProcFs, TICKS_PER_SECOND};

mod support;

/// The children's name: no other process has it.
const CHILD: &str = "odpchildburn";
const SPIN: &str = "short_lived_spin";
const HZ: u32 = 99;

/// CPU used by a process itself and by its children it waited for
/// (utime, stime, cutime, cstime), in clock ticks.
fn tree_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|f| f.parse().unwrap())
        .collect();
    fields.iter().sum()
}

/// What a profile of the shell saw, and what the shell's tree used.
struct Outcome {
    snapshots: Vec<Snapshot>,
    /// The shell's and its children's CPU, in ticks, once the loop ended.
    tree_ticks: u64,
}

impl Outcome {
    fn captured(&self) -> u64 {
        self.snapshots.iter().map(Snapshot::total_samples).sum()
    }

    fn spin(&self) -> u64 {
        let (ranked, _) = support::ranked_functions(&self.snapshots);
        ranked
            .iter()
            .find(|(name, _)| name == SPIN)
            .map_or(0, |(_, n)| *n)
    }

    /// Samples the tree's CPU time earns at `HZ`.
    fn earned(&self) -> f64 {
        self.tree_ticks as f64 / TICKS_PER_SECOND as f64 * f64::from(HZ)
    }
}

/// Starts a shell that waits a second (for the profile to open), runs
/// `runs` children burning `ms` of CPU each, marks the end and sleeps a
/// second more; profiles it by pid with `plugins` until the mark, and
/// reads its tree's CPU there.
fn profile_the_shell(
    test: &str,
    plugins: Plugins,
    include_children: bool,
    runs: u32,
    ms: u32,
) -> Outcome {
    let dir = support::workdir(test);
    let binary = support::build_short_lived(&dir, CHILD);
    let done = dir.join("done");
    let script = format!(
        "sleep 1; for i in $(seq {runs}); do {} {ms}; done; : > {}; sleep 1",
        binary.display(),
        done.display()
    );
    let shell = support::Killed(Command::new("sh").arg("-c").arg(script).spawn().unwrap());
    let spec = ProfileSpec {
        frequency_hz: HZ,
        include_children,
        ..support::native_spec(Target::Pid(shell.id()), Duration::from_secs(60))
    };
    let (stop, stopped) = mpsc::channel();
    let runner = std::thread::spawn(move || run_until_stopped(&plugins, &spec, &stopped));
    let started = Instant::now();
    while !done.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "the loop hangs"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let tree_ticks = tree_ticks(shell.id());
    // While the shell sleeps: what is still buffered is drained at the stop.
    stop.send(()).unwrap();
    let snapshots = runner.join().unwrap();
    drop(shell);
    Outcome {
        snapshots,
        tree_ticks,
    }
}

/// Runs `spec` through the runner until `stop`, returning its windows.
fn run_until_stopped(plugins: &Plugins, spec: &ProfileSpec, stop: &Receiver<()>) -> Vec<Snapshot> {
    let (mut snapshots, mut result) = (Vec::new(), None);
    sampling_thread::run(plugins, &ProcFs::default(), spec, stop, |e| {
        match e {
            RunnerEvent::Window(s) => snapshots.push(*s),
            RunnerEvent::Finished(reason) => result = Some(Ok(reason)),
            RunnerEvent::Failed(error) => result = Some(Err(error)),
            RunnerEvent::Started { .. } | RunnerEvent::Cost(_) => {}
        }
        true
    });
    assert_eq!(result, Some(Ok(FinishReason::Stopped)));
    snapshots
}

fn per_thread() -> Plugins {
    Plugins::standard(
        ProcFs::default(),
        PluginSettings {
            native_per_cpu: false,
            ..PluginSettings::default()
        },
    )
}

#[test]
fn with_children_per_cpu_every_child_is_sampled_from_its_first_sample() {
    let standard = Plugins::standard(ProcFs::default(), PluginSettings::default());
    let outcome = profile_the_shell("children_per_cpu", standard, true, 100, 30);
    let (captured, spin, earned) = (outcome.captured(), outcome.spin(), outcome.earned());
    println!(
        "with children, per CPU: {captured} samples ({spin} in {SPIN}) for {} ticks \
         of the shell's tree, {earned:.0} earned: {:.1} %",
        outcome.tree_ticks,
        100.0 * captured as f64 / earned
    );
    // 100 children of 30 ms at 99 Hz: about 300 samples. Most have exited
    // (and left /proc) by the time their samples are drained, so only the
    // FORK record, whose answer the child keeps across its exec, says
    // they are the shell's.
    assert!(earned > 250.0, "the tree used {} ticks", outcome.tree_ticks);
    let ratio = captured as f64 / earned;
    assert!((0.9..=1.1).contains(&ratio), "{captured} of {earned:.0}");
    // The rest is the shell forking and the children starting up.
    assert!(
        spin * 10 >= captured * 8,
        "{spin} of {captured} are the children's"
    );
}

#[test]
fn without_children_the_childrens_samples_are_not_kept() {
    let standard = Plugins::standard(ProcFs::default(), PluginSettings::default());
    let outcome = profile_the_shell("children_off", standard, false, 15, 100);
    let (captured, spin) = (outcome.captured(), outcome.spin());
    println!(
        "without children: {captured} samples ({spin} in {SPIN}) for {} ticks of the \
         shell's tree",
        outcome.tree_ticks
    );
    assert!(
        outcome.earned() > 120.0,
        "the tree used {} ticks",
        outcome.tree_ticks
    );
    assert_eq!(spin, 0, "a child's samples were kept");
    // The shell itself forks and waits: a few samples at most.
    assert!(captured < 20, "{captured} samples of the shell alone");
}

/// Per thread, a child is attached when a rescan (once a second) finds
/// it: children of 2 s are sampled from then on, the second before lost.
#[test]
fn with_children_per_thread_rescans_find_longer_lived_children() {
    let outcome = profile_the_shell("children_per_thread", per_thread(), true, 3, 2000);
    let (captured, spin, earned) = (outcome.captured(), outcome.spin(), outcome.earned());
    println!(
        "with children, per thread: {captured} samples ({spin} in {SPIN}) of \
         {earned:.0} earned: {:.1} %",
        100.0 * captured as f64 / earned
    );
    assert!(earned > 500.0, "the tree used {} ticks", outcome.tree_ticks);
    // Each child is found within a second of its 2 s: at least half,
    // less some slack for a busy machine.
    assert!(spin as f64 >= 0.4 * earned, "{spin} of {earned:.0}");
    assert!(
        captured as f64 <= 1.05 * earned,
        "{captured} of {earned:.0}"
    );
}
