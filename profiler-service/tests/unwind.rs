//! Live DWARF unwinding, shared-library symbols and JIT perf maps through
//! the native plugin: C and C++ test programs are built at test time,
//! sampled through the real perf events, unwinder and symbolizer, and
//! their known stacks must come out whole and named as perf names them.
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

/// Compiles a C (or, for `.cc`, C++) program of tests/data with `flags`
/// into the test's temporary directory.
fn compile(source: &str, name: &str, flags: &[&str]) -> PathBuf {
    let compiler = if source.ends_with(".cc") { "c++" } else { "cc" };
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(source);
    let binary = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let built = Command::new(compiler)
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .status()
        .unwrap_or_else(|e| panic!("{compiler} is needed to build the test programs: {e}"));
    assert!(built.success(), "{compiler} failed on {}", source.display());
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
    let mut session = plugin
        .open(&[pid], FREQUENCY, &Default::default())
        .unwrap_or_else(|e| {
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

/// A frame as (function, module).
type Named = (String, String);

/// One stack's user frames, root first, with its thread and sample count.
#[derive(Debug)]
struct UserStack {
    tid: u32,
    frames: Vec<Named>,
    count: u64,
}

fn user_stacks(snapshot: &Snapshot) -> Vec<UserStack> {
    snapshot
        .stacks
        .iter()
        .map(|stack| UserStack {
            tid: stack.tid,
            frames: snapshot
                .stack_frames(stack)
                .filter(|f| f.module != "[kernel]")
                .map(|f| (f.function.clone(), f.module.clone()))
                .collect(),
            count: stack.count,
        })
        .collect()
}

/// Whether `frames` starts with `root`, each (function, module) of `root`
/// matching exactly.
fn starts_with(frames: &[Named], root: &[(&str, &str)]) -> bool {
    frames.len() >= root.len()
        && frames
            .iter()
            .zip(root)
            .all(|((function, module), (f, m))| function == f && module == m)
}

/// Samples whose stack holds `marker`, and how many of those start with
/// `root`, for the main thread (`main_thread`) or the others.
fn root_counts(
    snapshot: &Snapshot,
    pid: u32,
    main_thread: bool,
    marker: &str,
    root: &[(&str, &str)],
) -> (u64, u64) {
    let mut marked = 0;
    let mut rooted = 0;
    for stack in user_stacks(snapshot) {
        if (stack.tid == pid) != main_thread || !stack.frames.iter().any(|(f, _)| f == marker) {
            continue;
        }
        marked += stack.count;
        if starts_with(&stack.frames, root) {
            rooted += stack.count;
        }
    }
    (marked, rooted)
}

/// The main thread's root on this machine's glibc, as `perf script` names
/// it: `_start` in the program, then libc's exported `__libc_start_main`
/// (perf spells it `__libc_start_main@@GLIBC_2.34`) and its local
/// `__libc_start_call_main`, named from libc's debug file.
fn main_root(program: &str) -> [(&str, &str); 4] {
    [
        ("_start", program),
        ("__libc_start_main", "libc.so.6"),
        ("__libc_start_call_main", "libc.so.6"),
        ("main", program),
    ]
}

/// Asserts that at least 90 % of the samples holding `marker` start with
/// `root` (unwinding can end early on a sample taken mid-prologue).
fn assert_rooted(snapshot: &Snapshot, pid: u32, main: bool, marker: &str, root: &[(&str, &str)]) {
    let (marked, rooted) = root_counts(snapshot, pid, main, marker, root);
    assert!(
        marked >= 20,
        "only {marked} samples in {marker} ({} thread): {:#?}",
        if main { "main" } else { "other" },
        user_stacks(snapshot)
    );
    assert!(
        rooted * 10 >= marked * 9,
        "only {rooted} of {marked} samples in {marker} start with {root:?}: {:#?}",
        user_stacks(snapshot)
    );
}

/// Threads built without frame pointers, so callers are found by DWARF
/// unwinding alone.
const FRAMELESS_THREADS: &[&str] = &[
    "-O2",
    "-pthread",
    "-fomit-frame-pointer",
    "-fno-optimize-sibling-calls",
];

#[test]
fn libc_frames_at_the_root_of_every_thread_are_named() {
    let binary = compile("threads.c", "threads-roots", FRAMELESS_THREADS);
    let target = support::start_workload(&binary, &["30"]);
    let pid = target.id();
    let libc = mapped_path(pid, "libc.so.6");
    assert!(
        has_debug_file(&libc),
        "no debug file for {}: install libc6-dbg (scripts/bootstrap.sh does)",
        libc.display()
    );
    let (snapshot, samples) = sample(pid, true, Duration::from_secs(4));
    assert!(samples >= 60, "only {samples} samples in 4 s at 99 Hz");

    // pthread_create'd threads: libc's clone3 and start_thread, both local
    // functions, as perf names them from libc's debug file (libc6-dbg).
    let thread_root = [
        ("clone3", "libc.so.6"),
        ("start_thread", "libc.so.6"),
        ("thread_burn", "threads-roots"),
    ];
    assert_rooted(&snapshot, pid, false, "thread_burn", &thread_root);
    let mut main_root = main_root("threads-roots").to_vec();
    main_root.push(("main_burn", "threads-roots"));
    assert_rooted(&snapshot, pid, true, "main_burn", &main_root);
    // Every libc frame has a name: none is left as the bare module.
    for stack in user_stacks(&snapshot) {
        assert!(
            !stack
                .frames
                .iter()
                .any(|(f, m)| f == "[unknown]" && m == "libc.so.6"),
            "{stack:?}"
        );
    }
}

/// The path a process maps a module of this file name from.
fn mapped_path(pid: u32, module: &str) -> PathBuf {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("the target's maps");
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| {
            Path::new(path)
                .file_name()
                .is_some_and(|name| name == module)
        })
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{pid} maps no {module}"))
}

/// Whether a module's debug file is installed where Debian's debug
/// packages put it: under its build id.
fn has_debug_file(module: &Path) -> bool {
    use object::Object;
    let data = std::fs::read(module).unwrap_or_else(|e| panic!("{}: {e}", module.display()));
    let elf = object::File::parse(data.as_slice()).expect("an ELF module");
    let Some(id) = elf.build_id().ok().flatten() else {
        return false;
    };
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    Path::new("/usr/lib/debug/.build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]))
        .is_file()
}

/// The frame libstdc++ puts between start_thread and a std::thread's
/// `_M_run`: its local `execute_native_thread_routine`, named only when
/// libstdc++'s debug file is installed (Debian has no package for it in
/// the main archive), else the module alone, as perf shows it
/// (`[unknown] (libstdc++.so.6.0.30)`). Never a neighbouring exported
/// function.
fn libstdcxx_thread_entry(module: &Path) -> &'static str {
    if has_debug_file(module) {
        "execute_native_thread_routine"
    } else {
        "[unknown]"
    }
}

/// tests/data/threads.cc's burner, as demangled C++ reads.
const WORKER: &str = "worker(unsigned long)";

#[test]
fn std_thread_roots_name_libc_and_show_libstdcxx_as_perf_does() {
    let binary = compile("threads.cc", "threads-cc-roots", FRAMELESS_THREADS);
    let target = support::start_workload(&binary, &["30"]);
    let pid = target.id();
    let (snapshot, samples) = sample(pid, true, Duration::from_secs(4));
    assert!(samples >= 60, "only {samples} samples in 4 s at 99 Hz");

    // The libstdc++ the program maps, by its file name.
    let libstdcxx = user_stacks(&snapshot)
        .into_iter()
        .flat_map(|stack| stack.frames)
        .map(|(_, module)| module)
        .find(|module| module.starts_with("libstdc++.so"))
        .unwrap_or_else(|| panic!("no libstdc++ frame: {:#?}", user_stacks(&snapshot)));
    let entry = libstdcxx_thread_entry(&mapped_path(pid, &libstdcxx));
    let thread_root = [
        ("clone3", "libc.so.6"),
        ("start_thread", "libc.so.6"),
        (entry, libstdcxx.as_str()),
    ];
    assert_rooted(&snapshot, pid, false, WORKER, &thread_root);
    // Above them the thread's own code: the `_M_run` of its std::thread
    // state, a template instantiated in the program.
    let is_run = |(f, m): &Named| {
        f.starts_with("std::thread::_State_impl<")
            && f.contains("_M_run")
            && m == "threads-cc-roots"
    };
    let (mut rooted, mut run) = (0, 0);
    for stack in user_stacks(&snapshot) {
        if stack.tid != pid && starts_with(&stack.frames, &thread_root) {
            rooted += stack.count;
            if stack.frames.get(thread_root.len()).is_some_and(is_run) {
                run += stack.count;
            }
        }
    }
    assert!(
        run * 10 >= rooted * 9,
        "only {run} of {rooted} thread samples go on to _M_run: {:#?}",
        user_stacks(&snapshot)
    );
    assert_rooted(&snapshot, pid, true, WORKER, &main_root("threads-cc-roots"));
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
