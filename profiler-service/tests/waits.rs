//! Where threads wait: live off-CPU and wall profiles of the programs in
//! tests/data (waits.c, built without frame pointers, and waits.py),
//! through the real runner and plugins (perf_event's `sched_switch`
//! tracepoint, py-spy `--idle`). Each test knows how its program spends
//! its threads' time and checks the profile says so, in samples of 1/F s.
//!
//! Needs root (tracepoints and kernel stacks), a C compiler, python3 and
//! py-spy.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use odp_core::cost::CostEventKind;
use odp_core::{EventKind, Snapshot};
use odp_profiler_service::sampling_thread::ProfileSpec;
use odp_profiler_service::targets::ProcFs;

mod support;

use support::{profile_spec, run_to_end, start_python_script, start_workload, Killed};

/// One program at a time: their shares depend on having the CPUs.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const FREQUENCY_HZ: u32 = 99;
const PERIOD_NS: u64 = 1_000_000_000 / FREQUENCY_HZ as u64;

struct Profiled {
    event: EventKind,
    snapshots: Vec<Snapshot>,
    /// `(switches, sampled_one_in)` per window, from the waits reports.
    sampling: Vec<(u64, u64)>,
}

impl Profiled {
    fn samples(&self) -> u64 {
        self.snapshots.iter().map(Snapshot::total_samples).sum()
    }

    /// Samples whose stack holds any of `functions`.
    fn through(&self, functions: &[&str]) -> u64 {
        self.count(|frames, _| frames.iter().any(|f| functions.contains(f)))
    }

    fn count(&self, keep: impl Fn(&[&str], u32) -> bool) -> u64 {
        let mut total = 0;
        for snapshot in &self.snapshots {
            for stack in &snapshot.stacks {
                let frames: Vec<&str> = snapshot
                    .stack_frames(stack)
                    .map(|f| f.function.as_str())
                    .collect();
                if keep(&frames, stack.tid) {
                    total += stack.count;
                }
            }
        }
        total
    }

    /// Threads with samples whose stack holds `function`.
    fn threads_through(&self, function: &str) -> BTreeSet<u32> {
        let mut tids = BTreeSet::new();
        for snapshot in &self.snapshots {
            for stack in &snapshot.stacks {
                if snapshot.stack_frames(stack).any(|f| f.function == function) {
                    tids.insert(stack.tid);
                }
            }
        }
        tids
    }

    /// Seconds the samples stand for, from each window's own period.
    fn seconds(&self) -> f64 {
        self.snapshots
            .iter()
            .map(|s| s.total_samples() as f64 * s.period as f64 / 1e9)
            .sum()
    }

    /// The heaviest stacks, leaf last, for the test's output.
    fn heaviest(&self, n: usize) -> Vec<(u64, String)> {
        let mut stacks: HashMap<String, u64> = HashMap::new();
        for snapshot in &self.snapshots {
            for stack in &snapshot.stacks {
                let names: Vec<&str> = snapshot
                    .stack_frames(stack)
                    .map(|f| f.function.as_str())
                    .collect();
                *stacks.entry(names.join(";")).or_insert(0) += stack.count;
            }
        }
        let mut ranked: Vec<(u64, String)> = stacks.into_iter().map(|(s, c)| (c, s)).collect();
        ranked.sort_unstable_by(|a, b| b.cmp(a));
        ranked.truncate(n);
        ranked
    }

    fn share(&self, part: u64) -> f64 {
        part as f64 / self.samples().max(1) as f64
    }
}

fn profile(pid: u32, event: EventKind, seconds: u64) -> Profiled {
    let spec = ProfileSpec {
        event: Some(event),
        ..profile_spec(pid, Duration::from_secs(seconds), FREQUENCY_HZ)
    };
    let report = run_to_end(&spec);
    for snapshot in &report.snapshots {
        assert_eq!(snapshot.event, report.event);
        assert_eq!(snapshot.period, PERIOD_NS, "samples of 1/F s");
    }
    let sampling = report
        .cost
        .iter()
        .filter_map(|c| match c {
            CostEventKind::WaitsSampled {
                switches,
                sampled_one_in,
                ..
            } => Some((*switches, *sampled_one_in)),
            _ => None,
        })
        .collect();
    Profiled {
        event: report.event,
        snapshots: report.snapshots,
        sampling,
    }
}

/// Compiles tests/data/waits.c without frame pointers, once.
fn waits_binary() -> &'static Path {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/waits.c");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("waits");
        let status = Command::new("cc")
            .args(["-O2", "-g", "-pthread", "-fomit-frame-pointer", "-o"])
            .arg(&out)
            .arg(&source)
            .status()
            .expect("a C compiler (cc) builds tests/data/waits.c");
        assert!(status.success(), "cc failed on {}", source.display());
        out
    })
}

fn start_waits(mode: &str, seconds: u64) -> Killed {
    start_workload(waits_binary(), &[mode, &seconds.to_string()])
}

/// The target's threads other than its main one.
fn worker_threads(pid: u32) -> BTreeSet<u32> {
    let tids = ProcFs::default()
        .threads(pid)
        .expect("the target's threads");
    tids.into_iter().filter(|&tid| tid != pid).collect()
}

const LOCK_WAIT: &[&str] = &[
    "__lll_lock_wait",
    "__GI___lll_lock_wait",
    "lll_lock_wait",
    "futex_wait",
    "__futex_abstimed_wait_common",
];

#[test]
fn off_cpu_time_of_contended_threads_sits_under_the_lock_taker() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let seconds = 4;
    let target = start_waits("mutex", seconds + 4);
    let contenders = worker_threads(target.id());
    let off = profile(target.id(), EventKind::OffCpu, seconds);
    assert_eq!(off.event, EventKind::OffCpu);
    let of_contenders = |tid: u32| contenders.contains(&tid);
    // The contenders' time; the main thread sleeps in sleep(3) apart.
    let total = off.count(|_, tid| of_contenders(tid));
    let under_take_lock = off.count(|f, tid| of_contenders(tid) && f.contains(&"take_lock"));
    let blocked_in_lock = off.count(|frames, tid| {
        let taker = frames.iter().position(|&f| f == "take_lock");
        let waiter = frames.iter().rposition(|f| LOCK_WAIT.contains(f));
        // The lock wait is called from (above) the function taking it.
        of_contenders(tid) && matches!((taker, waiter), (Some(t), Some(w)) if w > t)
    });
    let sleeping = off.count(|f, tid| of_contenders(tid) && f.last() == Some(&"[sleeping]"));
    let main = off.count(|_, tid| tid == target.id());
    eprintln!(
        "off-cpu: {total} samples ({:.2} s over {seconds} s, 4 threads on {} CPUs), \
         take_lock {:.1} %, blocked in the lock {:.1} %, sleeping {:.1} %, sampling {:?}",
        off.seconds(),
        std::thread::available_parallelism().map_or(0, usize::from),
        100.0 * under_take_lock as f64 / total.max(1) as f64,
        100.0 * blocked_in_lock as f64 / total.max(1) as f64,
        100.0 * sleeping as f64 / total.max(1) as f64,
        off.sampling,
    );
    for (count, stack) in off.heaviest(3) {
        eprintln!("  {count} {stack}");
    }
    // Most of their time off CPU is under take_lock; the rest is mostly
    // preemption (runnable, waiting for a CPU), which grows with the
    // machine's load. Of the time they sleep, nearly all is the lock.
    let share = |part: u64| part as f64 / total.max(1) as f64;
    assert!(share(under_take_lock) > 0.5, "take_lock's off-CPU share");
    assert!(share(sleeping) > 0.4, "the waits are sleeps on the futex");
    let of_sleep = blocked_in_lock as f64 / sleeping.max(1) as f64;
    assert!(of_sleep > 0.9, "{of_sleep} of the sleep is in the lock");
    // Asleep since before the profile: counted from the attach, all along.
    let main_seconds = main as f64 * PERIOD_NS as f64 / 1e9;
    assert!(
        (seconds as f64 * 0.85..=seconds as f64 * 1.1).contains(&main_seconds),
        "main slept {main_seconds} s of {seconds}"
    );
    assert_eq!(total + main, off.samples(), "only the program's threads");
    // Only the contending threads wait under take_lock.
    let waiting = off.threads_through("take_lock");
    assert!(!waiting.is_empty() && waiting.is_subset(&contenders));
    assert_eq!(waiting.len(), 4, "every contender waits");
    // Four threads for as long as the profile ran: they cannot wait longer
    // than that, and with fewer CPUs than threads they must wait a good
    // part of it. The profile's real span is what main's sleep measured:
    // on a loaded machine it stops a little after `seconds`.
    let thread_seconds = 4.0 * main_seconds.max(seconds as f64);
    let contended = total as f64 * PERIOD_NS as f64 / 1e9;
    assert!(contended <= thread_seconds * 1.1, "{contended}");
    assert!(contended >= thread_seconds * 0.2, "{contended}");
    assert!(!off.sampling.is_empty() && off.sampling.iter().all(|&(_, n)| n >= 1));

    // The same program on CPU: the critical section, not the wait.
    let cpu = profile(target.id(), EventKind::CpuClock, 2);
    let critical = cpu.through(&["critical_section"]);
    eprintln!(
        "cpu-clock: {} samples, critical_section {:.1} %",
        cpu.samples(),
        100.0 * cpu.share(critical)
    );
    assert!(cpu.share(critical) > 0.6);
    assert!(cpu.share(cpu.through(LOCK_WAIT)) < 0.2);
}

#[test]
fn a_native_wall_profile_holds_running_and_sleeping_threads_alike() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let seconds = 4;
    let target = start_waits("sleep", seconds + 4);
    let wall = profile(target.id(), EventKind::Wall, seconds);
    let burn = wall.through(&["burn"]);
    let nap = wall.through(&["nap"]);
    let main = wall.count(|_, tid| tid == target.id());
    eprintln!(
        "wall: {} samples ({:.2} s), burn {:.1} %, nap {:.1} %, main {:.1} %",
        wall.samples(),
        wall.seconds(),
        100.0 * wall.share(burn),
        100.0 * wall.share(nap),
        100.0 * wall.share(main)
    );
    // Three threads, each there all the time (main asleep in sleep(3) since
    // before the profile): a third of the wall time each.
    for (name, part) in [("burn", burn), ("nap", nap), ("main", main)] {
        let share = wall.share(part);
        assert!((0.25..=0.42).contains(&share), "{name}: {share}");
    }
    // And in all about three threads' worth of the profile's time.
    let expected = 3.0 * seconds as f64;
    assert!(
        (expected * 0.7..=expected * 1.15).contains(&wall.seconds()),
        "{} s of wall time for 2 threads over {seconds} s",
        wall.seconds()
    );
    // The nap shows where it sleeps.
    let napping =
        wall.count(|frames, _| frames.contains(&"nap") && frames.last() == Some(&"[sleeping]"));
    assert!(napping as f64 > 0.8 * nap as f64);
}

/// Samples per Python function (py-spy names a frame by its function).
fn python_shares(profiled: &Profiled, functions: &[&str]) -> HashMap<String, f64> {
    functions
        .iter()
        .map(|&f| (f.to_owned(), profiled.share(profiled.through(&[f]))))
        .collect()
}

#[test]
fn a_python_wall_profile_keeps_the_waiting_threads() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let seconds = 4;
    let target = start_python_script("waits.py", &[&(seconds * 2 + 6).to_string()]);
    let functions = ["burn", "hold_lock", "wait_for_lock", "nap"];
    let wall = profile(target.id(), EventKind::Wall, seconds);
    assert_eq!(wall.event, EventKind::Wall);
    let shares = python_shares(&wall, &functions);
    eprintln!("python wall: {} samples, {shares:?}", wall.samples());
    // Five threads (the main one sleeps too), each about a fifth.
    for function in functions {
        let share = shares[function];
        assert!((0.12..=0.3).contains(&share), "{function}: {share}");
    }
    let cpu = profile(target.id(), EventKind::CpuClock, seconds);
    let shares = python_shares(&cpu, &functions);
    eprintln!("python cpu: {} samples, {shares:?}", cpu.samples());
    assert!(shares["burn"] > 0.7, "on CPU only burn: {shares:?}");
    assert!(shares["nap"] < 0.1 && shares["wait_for_lock"] < 0.2);
}
