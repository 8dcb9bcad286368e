//! Live sampling: a small C program with a known 75 % / 25 % CPU split is
//! profiled through the real sampler, symbolizer and snapshot builder (no
//! Kafka), and the measured shares must match within a binomial bound.
//!
//! Needs perf_event access to another process: root, CAP_PERFMON or
//! kernel.perf_event_paranoid <= 1. Without it the test fails and says so.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

use odp_core::event::FinishReason;
use odp_core::{EventKind, Snapshot, Target};
use odp_profiler_service::cost::CostSettings;
use odp_profiler_service::plugin::Plugins;
use odp_profiler_service::sampling_thread::{self, ProfileSpec, RunnerEvent};
use odp_profiler_service::targets::ProcFs;
use uuid::Uuid;

mod support;

const HOT: &str = "burn_hot";
const COLD: &str = "burn_cold";

struct Outcome {
    event: EventKind,
    pids: Vec<u32>,
    snapshots: Vec<Snapshot>,
    reason: FinishReason,
}

fn profile(target: Target, duration: Duration, window: Duration, frequency_hz: u32) -> Outcome {
    let spec = ProfileSpec {
        profile_id: Uuid::new_v4(),
        host: "test-host".into(),
        agent_id: "test-agent".into(),
        target,
        include_children: false,
        duration,
        frequency_hz,
        window,
        cost: CostSettings::default(),
        plugin: None,
        event: None,
        min_wait: None,
        max_message_bytes: odp_core::snapshot::MAX_MESSAGE_BYTES,
    };
    let (_stop_tx, stop_rx) = mpsc::channel();
    let mut events = Vec::new();
    sampling_thread::run(
        &Plugins::default(),
        &ProcFs::default(),
        &spec,
        &stop_rx,
        |e| {
            events.push(e);
            true
        },
    );
    let mut started = None;
    let mut snapshots = Vec::new();
    let mut finished = None;
    for event in events {
        match event {
            RunnerEvent::Started { event, pids, .. } => started = Some((event, pids)),
            RunnerEvent::Window(s) => snapshots.push(*s),
            RunnerEvent::Cost(_) => {}
            RunnerEvent::Finished(reason) => finished = Some(reason),
            RunnerEvent::Failed(e) => panic!(
                "profile failed: {e}\n(this test needs perf_event access to another process: \
                 run as root, grant CAP_PERFMON or set kernel.perf_event_paranoid <= 1)"
            ),
        }
    }
    let reason = finished.expect("the profile must report its end");
    let (event, pids) = started.expect("the profile must report its start");
    Outcome {
        event,
        pids,
        snapshots,
        reason,
    }
}

/// Samples per function, counted once per sample wherever the function is
/// on the stack, plus the total.
fn inclusive_counts(snapshots: &[Snapshot]) -> (HashMap<String, u64>, u64) {
    let mut counts = HashMap::new();
    let mut total = 0;
    for snapshot in snapshots {
        for stack in &snapshot.stacks {
            total += stack.count;
            let mut names: Vec<&str> = snapshot
                .stack_frames(stack)
                .map(|f| f.function.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            for name in names {
                *counts.entry(name.to_owned()).or_insert(0) += stack.count;
            }
        }
    }
    (counts, total)
}

#[test]
fn measured_shares_match_the_known_split() {
    let workload = support::spawn_burner_for("burn-split", 30);
    let pid = workload.id();

    let frequency = 999;
    let out = profile(
        Target::Pid(pid),
        Duration::from_secs(3),
        Duration::from_secs(1),
        frequency,
    );
    assert!(matches!(out.event, EventKind::Cycles | EventKind::CpuClock));
    assert_eq!(out.pids, vec![pid]);
    assert_eq!(out.reason, FinishReason::DurationElapsed);

    // Three 1 s windows (maybe a short fourth), numbered and contiguous.
    assert!(
        (3..=4).contains(&out.snapshots.len()),
        "{} windows",
        out.snapshots.len()
    );
    for (i, s) in out.snapshots.iter().enumerate() {
        assert_eq!(s.sequence, i as u64);
        assert_eq!(s.event, out.event);
        assert_eq!(s.frequency_hz, frequency);
        if out.event == EventKind::CpuClock {
            assert_eq!(s.period, 1_000_000_000 / u64::from(frequency));
        }
        if i > 0 {
            assert_eq!(s.window_start_ms, out.snapshots[i - 1].window_end_ms);
        }
        assert!(
            s.threads
                .iter()
                .any(|t| t.tid == pid && t.name == "burn-split"),
            "{:?}",
            s.threads
        );
        // Every snapshot survives its own wire format.
        assert_eq!(&Snapshot::decode(&s.encode()).unwrap(), s);
    }

    let (counts, total) = inclusive_counts(&out.snapshots);
    let mut ranked: Vec<(&String, &u64)> = counts.iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let hot = counts.get(HOT).copied().unwrap_or(0);
    let cold = counts.get(COLD).copied().unwrap_or(0);
    let main = counts.get("main").copied().unwrap_or(0);
    let share = |n: u64| n as f64 / total as f64;
    eprintln!(
        "event {}: {total} samples, {HOT} {:.1} %, {COLD} {:.1} %, main on {:.1} % of stacks; top: {:?}",
        out.event,
        100.0 * share(hot),
        100.0 * share(cold),
        100.0 * share(main),
        &ranked[..ranked.len().min(6)]
    );
    // A 3 s profile at 999 Hz gives up to 3000 samples; a burner getting a
    // fifth of a core on a busy machine still gives several hundred.
    assert!(total >= 200, "only {total} samples");

    // The dominant leaf function comes first among the burner's functions
    // (main and libc start-up frames are on every stack, so they are
    // skipped when ranking leaves).
    let leaf_rank: Vec<&str> = ranked
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| *name == HOT || *name == COLD)
        .collect();
    assert_eq!(leaf_rank.first(), Some(&HOT), "ranking {ranked:?}");

    // The split between the two burners within five binomial standard
    // errors of 75/25, or 0.06, whichever is wider. Measured between them
    // only: samples elsewhere (the loop's clock reads, kernel work on a
    // loaded machine) dilute both shares of the total without saying
    // anything about the split. The floor is there because the burner's
    // own split is not pure sampling noise: on a loaded 2-core VM its
    // calls run at a speed that changes from one millisecond to the next,
    // and a full suite run measured 0.698 for burn_hot (5σ was 0.047).
    // 0.06 still fails an even split, a reversed one, or a lost leaf.
    let burners = hot + cold;
    for (name, count, expected) in [(HOT, hot, 0.75), (COLD, cold, 0.25)] {
        let binomial = 5.0 * (expected * (1.0 - expected) / burners as f64).sqrt();
        let bound = binomial.max(0.06);
        let measured = count as f64 / burners as f64;
        assert!(
            (measured - expected).abs() <= bound,
            "{name}: measured {measured:.4}, expected {expected} ± {bound:.4} ({count} of {burners}; {total} samples in all)"
        );
    }
    assert!(
        share(burners) > 0.9,
        "the burners hold only {:.1} % of samples",
        100.0 * share(burners)
    );
    // What no symbol covers still says where it was (a local function of
    // a stripped library without its debug file shows as the library).
    for s in &out.snapshots {
        for f in s.frames.iter().filter(|f| f.function == "[unknown]") {
            assert!(!f.module.is_empty(), "unknown frame without module: {f:?}");
        }
        assert!(s
            .frames
            .iter()
            .any(|f| f.function == HOT && f.module == "burn-split"));
    }
    // Frame pointers make the whole chain visible: main is under the burners.
    assert!(
        share(main) > 0.9,
        "main on only {:.1} % of stacks",
        100.0 * share(main)
    );
}

#[test]
fn profiles_every_process_of_a_name_and_stops_when_they_exit() {
    let binary = support::build_burner("burn-byname");
    let a = support::start_burner(&binary, 2);
    let b = support::start_burner(&binary, 2);

    // Longer than the workloads live: the profile must end by itself.
    let out = profile(
        Target::ProcessName("burn-byname".into()),
        Duration::from_secs(30),
        Duration::from_secs(10),
        199,
    );
    let mut expected = vec![a.id(), b.id()];
    expected.sort_unstable();
    assert_eq!(out.pids, expected);
    assert_eq!(out.reason, FinishReason::TargetExited);
    let tids: std::collections::HashSet<u32> = out
        .snapshots
        .iter()
        .flat_map(|s| s.stacks.iter().map(|st| st.tid))
        .collect();
    assert!(
        tids.contains(&expected[0]) && tids.contains(&expected[1]),
        "{tids:?}"
    );
    let (counts, _) = inclusive_counts(&out.snapshots);
    assert!(counts.get(HOT).copied().unwrap_or(0) > 0);
}
