//! Live DWARF unwinding and JIT perf maps through the native plugin: C test
//! programs are built at test time, sampled through the real perf events,
//! unwinder and symbolizer, and their known stacks must come out whole.
//!
//! Needs perf_event access to another process (root, CAP_PERFMON or
//! kernel.perf_event_paranoid <= 1) and an x86-64 host for the stack copies
//! and the JIT's machine code.
#![cfg(target_arch = "x86_64")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use odp_core::snapshot::SnapshotHeader;
use odp_core::{EventKind, Snapshot};
use odp_profiler_service::plugin::native::NativePlugin;
use odp_profiler_service::plugin::{Plugin, WindowSink};
use odp_profiler_service::targets::ProcFs;
use uuid::Uuid;

mod support;

const FREQUENCY: u32 = 99;
/// The call chain of tests/data/unwind.c, root first.
const CHAIN: [&str; 4] = ["main", "outer", "middle", "leaf"];

/// Compiles a C program of tests/data with `flags` into the test's
/// temporary directory.
fn compile(source: &str, name: &str, flags: &[&str]) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(source);
    let binary = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let built = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) is needed to build the test programs");
    assert!(built.success(), "cc failed on {}", source.display());
    binary
}

/// The unwind test program, without frame pointers.
fn build_unwind(name: &str) -> PathBuf {
    compile(
        "unwind.c",
        name,
        &[
            "-O2",
            "-fomit-frame-pointer",
            "-fno-inline",
            "-fno-optimize-sibling-calls",
        ],
    )
}

/// Samples `pid` through the native plugin for `duration`, polling as the
/// runner does, and returns the one window with the samples counted.
fn sample(pid: u32, user_stacks: bool, duration: Duration) -> (Snapshot, u64) {
    let plugin = NativePlugin::new(ProcFs::default()).with_user_stacks(user_stacks);
    let mut session = plugin.open(&[pid], FREQUENCY).unwrap_or_else(|e| {
        panic!(
            "cannot sample pid {pid}: {e}\n(this test needs perf_event access to another \
             process: run as root, grant CAP_PERFMON or set kernel.perf_event_paranoid <= 1)"
        )
    });
    let mut sink = WindowSink::new();
    let mut samples = 0;
    let end = Instant::now() + duration;
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
        samples += session.poll(&mut sink).expect("poll").samples;
    }
    let snapshot = sink.take(SnapshotHeader {
        profile_id: Uuid::new_v4(),
        host: "test-host".into(),
        agent_id: "test-agent".into(),
        sequence: 0,
        window_start_ms: 0,
        window_end_ms: duration.as_millis() as i64,
        event: session.event(),
        period: session.window_period(),
        frequency_hz: FREQUENCY,
    });
    (snapshot, samples)
}

/// Each stack's function names, root first, with its sample count.
fn stacks(snapshot: &Snapshot) -> Vec<(Vec<String>, u64)> {
    snapshot
        .stacks
        .iter()
        .map(|stack| {
            let names = snapshot
                .stack_frames(stack)
                .map(|f| f.function.clone())
                .collect();
            (names, stack.count)
        })
        .collect()
}

/// Whether `names` holds the whole chain, adjacent and in order.
fn has_chain(names: &[String]) -> bool {
    names
        .windows(CHAIN.len())
        .any(|w| w.iter().eq(CHAIN.iter()))
}

/// Samples in `leaf`, and how many of those also have the whole chain.
fn chain_counts(snapshot: &Snapshot) -> (u64, u64) {
    let mut in_leaf = 0;
    let mut whole = 0;
    for (names, count) in stacks(snapshot) {
        if names.iter().any(|n| n == "leaf") {
            in_leaf += count;
            if has_chain(&names) {
                whole += count;
            }
        }
    }
    (in_leaf, whole)
}

#[test]
fn dwarf_unwinding_finds_callers_that_frame_pointers_lose() {
    let binary = build_unwind("unwind-chain");
    let target = support::start_workload(&binary, &["30"]);
    let pid = target.id();

    let (dwarf, samples) = sample(pid, true, Duration::from_secs(4));
    // The VM is shared: the target gets what CPU it gets, and the shares
    // below need a few tens of samples, not the full 99 Hz.
    assert!(samples >= 30, "only {samples} samples in 4 s at 99 Hz");
    assert!(matches!(
        dwarf.event,
        EventKind::Cycles | EventKind::CpuClock
    ));
    let (in_leaf, whole) = chain_counts(&dwarf);
    assert!(
        in_leaf * 10 >= samples * 8,
        "leaf burns the CPU, yet only {in_leaf} of {samples} samples are in it: {:#?}",
        stacks(&dwarf)
    );
    assert!(
        whole * 10 >= in_leaf * 9,
        "only {whole} of {in_leaf} leaf samples have main > outer > middle > leaf: {:#?}",
        stacks(&dwarf)
    );

    // The same program through frame pointers alone: the callers are lost,
    // which is what makes the check above mean something.
    let (fp, fp_samples) = sample(pid, false, Duration::from_secs(2));
    let (fp_leaf, fp_whole) = chain_counts(&fp);
    assert!(fp_samples >= 20 && fp_leaf > 0, "{:#?}", stacks(&fp));
    assert!(
        fp_whole * 10 <= fp_leaf,
        "{fp_whole} of {fp_leaf} frame-pointer stacks have the whole chain: the test \
         program kept its frame pointers? {:#?}",
        stacks(&fp)
    );
}

/// Removes the JIT program's perf map when the test ends, passed or not.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn jit_code_is_named_from_the_perf_map() {
    let binary = compile("jit.c", "jit-perf-map", &["-O2"]);
    let target = support::start_workload(&binary, &["30"]);
    let map = RemoveOnDrop(PathBuf::from(format!("/tmp/perf-{}.map", target.id())));
    assert!(map.0.exists(), "the JIT program writes {}", map.0.display());

    let (snapshot, samples) = sample(target.id(), true, Duration::from_secs(4));
    assert!(samples >= 30, "only {samples} samples in 4 s at 99 Hz");
    let mut jit_leaf = 0;
    for stack in &snapshot.stacks {
        let leaf = snapshot
            .stack_frames(stack)
            .filter(|f| f.module != "[kernel]")
            .last();
        if let Some(leaf) = leaf.filter(|f| f.function == "jit_hot_loop") {
            assert_eq!(leaf.module, "[jit]");
            jit_leaf += stack.count;
        }
    }
    assert!(
        jit_leaf * 10 >= samples * 8,
        "only {jit_leaf} of {samples} samples end in jit_hot_loop: {:#?}",
        stacks(&snapshot)
    );
}

/// CPU time this thread has run, from the scheduler's own accounting.
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let ns = text.split_whitespace().next().and_then(|n| n.parse().ok());
    Duration::from_nanos(ns.expect("schedstat starts with CPU nanoseconds"))
}

/// Not a pass/fail test: measures the agent's CPU per sample with and
/// without stack copies (`cargo test -p odp-profiler-service --test unwind
/// -- --ignored --nocapture`). The plugin does all its work on the polling
/// thread, so that thread's CPU time is the cost.
#[test]
#[ignore]
fn measure_cost_per_sample() {
    let binary = build_unwind("unwind-cost");
    let target = support::start_workload(&binary, &["60"]);
    for user_stacks in [false, true, false, true] {
        let before = thread_cpu();
        let (_, samples) = sample(target.id(), user_stacks, Duration::from_secs(10));
        let cpu = thread_cpu() - before;
        println!(
            "user_stacks={user_stacks}: {samples} samples, {:.1} ms CPU, {:.1} us/sample, \
             {:.2}% of a core at {FREQUENCY} Hz",
            cpu.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e6 / samples.max(1) as f64,
            cpu.as_secs_f64() * 100.0 / 10.0,
        );
    }
}
