//! Live cost control: FDA lowering the frequency of a stable workload over a
//! few short windows, and FSP pruning the idle threads of a multi-threaded
//! one, through the real sampler and runner (no Kafka).
//!
//! Needs perf_event access to another process, like `sampling.rs`. Asserts
//! on what the windows contain and report, never on wall time.

use std::sync::mpsc;
use std::time::Duration;

use odp_core::cost::{AdjustReason, CostEventKind};
use odp_core::{EventKind, Snapshot, Target};
use odp_profiler_service::cost::{CostSettings, FdaParams};
use odp_profiler_service::plugin::Plugins;
use odp_profiler_service::sampling_thread::{self, ProfileSpec, RunnerEvent};
use odp_profiler_service::targets::ProcFs;
use uuid::Uuid;

mod support;

fn profile(
    pid: u32,
    duration: Duration,
    window: Duration,
    frequency_hz: u32,
    cost: CostSettings,
) -> (Vec<Snapshot>, Vec<CostEventKind>) {
    let spec = ProfileSpec {
        profile_id: Uuid::new_v4(),
        host: "test-host".into(),
        agent_id: "test-agent".into(),
        target: Target::Pid(pid),
        include_children: false,
        duration,
        frequency_hz,
        window,
        cost,
        plugin: None,
        event: None,
        min_wait: None,
        max_message_bytes: odp_core::snapshot::MAX_MESSAGE_BYTES,
    };
    let (_stop_tx, stop_rx) = mpsc::channel();
    let (mut snapshots, mut reports) = (Vec::new(), Vec::new());
    sampling_thread::run(
        &Plugins::default(),
        &ProcFs::default(),
        &spec,
        &stop_rx,
        |e| {
            match e {
                RunnerEvent::Window(s) => snapshots.push(*s),
                RunnerEvent::Cost(k) => reports.push(k),
                RunnerEvent::Failed(e) => panic!(
                    "profile failed: {e} (needs perf_event access to another process: root, \
                     CAP_PERFMON or kernel.perf_event_paranoid <= 1)"
                ),
                RunnerEvent::Started { .. } | RunnerEvent::Finished(_) => {}
            }
            true
        },
    );
    (snapshots, reports)
}

#[test]
fn fda_lowers_the_frequency_of_a_stable_workload() {
    let workload = support::spawn_burner_for("burn-fda", 30);
    let cost = CostSettings {
        fda: Some(FdaParams {
            theta: 0.05,
            lambda: 0.8,
            stable_windows: 2,
            top_n: 10,
            min_hz: 99,
            max_hz: 999,
        }),
        ..CostSettings::default()
    };
    let (snapshots, reports) = profile(
        workload.id(),
        Duration::from_secs(4),
        Duration::from_millis(400),
        999,
        cost,
    );
    let hz: Vec<u32> = snapshots.iter().map(|s| s.frequency_hz).collect();
    eprintln!("frequency per window: {hz:?}");
    let divergences: Vec<Option<f64>> = reports
        .iter()
        .filter_map(|r| match r {
            CostEventKind::WindowStats { divergence, .. } => Some(*divergence),
            _ => None,
        })
        .collect();
    eprintln!("divergence per window: {divergences:?}");
    assert!(snapshots.len() >= 6, "{} windows", snapshots.len());
    assert_eq!(hz[0], 999);
    assert!(hz.iter().all(|f| (99..=999).contains(f)), "{hz:?}");
    assert!(
        hz.iter().any(|&f| f < 999),
        "a steady 75/25 burner must let FDA lower the frequency: {hz:?}"
    );
    // Every change is reported, and the next window is sampled at it.
    let adjustments: Vec<_> = reports
        .iter()
        .filter_map(|r| match r {
            CostEventKind::ProfileAdjusted {
                sequence,
                previous_hz,
                frequency_hz,
                reason,
                ..
            } => Some((*sequence, *previous_hz, *frequency_hz, *reason)),
            _ => None,
        })
        .collect();
    assert!(adjustments
        .iter()
        .any(|a| a.3 == AdjustReason::HotspotsStable));
    for (sequence, previous, next, _) in &adjustments {
        let i = *sequence as usize;
        assert_eq!(hz[i], *previous);
        if let Some(&after) = hz.get(i + 1) {
            assert_eq!(after, *next);
        }
    }
    // Counts convert to time with the frequency of their own window.
    for s in &snapshots {
        if s.event == EventKind::CpuClock {
            assert_eq!(s.period, 1_000_000_000 / u64::from(s.frequency_hz));
        }
    }
}

#[test]
fn fsp_prunes_idle_threads() {
    let binary = support::build_workload("workload-fsp");
    let workload = support::start_workload(&binary, &["threads", "30", "2", "40"]);
    let pid = workload.id();
    let cost = CostSettings {
        fsp_share: Some(0.99),
        ..CostSettings::default()
    };
    let (snapshots, reports) = profile(
        pid,
        Duration::from_secs(3),
        Duration::from_secs(1),
        999,
        cost,
    );
    assert!(!snapshots.is_empty());
    let mut pruned_threads = 0;
    for (s, r) in snapshots.iter().zip(&reports) {
        let CostEventKind::WindowStats {
            sequence,
            samples,
            threads,
            threads_pruned,
            samples_pruned,
            ..
        } = *r
        else {
            panic!("window stats expected first, got {r:?}");
        };
        assert_eq!(sequence, s.sequence);
        assert_eq!(samples + samples_pruned, s.total_samples());
        eprintln!(
            "window {sequence}: kept {threads} threads / {samples} samples, \
             pruned {threads_pruned} threads / {samples_pruned} samples"
        );
        // What P99 drops is at most 1 % of the window's samples.
        assert!(samples_pruned as f64 <= 0.01 * (samples + samples_pruned) as f64);
        pruned_threads += threads_pruned;
        // The busy threads always stay; pruned ones leave only their count,
        // one stack on thread 0.
        let names: Vec<&str> = s.threads.iter().map(|t| t.name.as_str()).collect();
        if samples > 100 {
            assert!(
                names.contains(&"busy-0") || names.contains(&"busy-1"),
                "{names:?}"
            );
        }
        let pruned: Vec<_> = s
            .stacks
            .iter()
            .filter(|st| {
                s.stack_frames(st)
                    .any(|f| f.function == odp_profiler_service::cost::fsp::PRUNED_FRAME)
            })
            .collect();
        if samples_pruned > 0 {
            assert!(matches!(pruned[..], [p] if p.tid == 0 && p.count == samples_pruned));
        } else {
            assert!(pruned.is_empty());
        }
        let tids: std::collections::HashSet<u32> = s
            .stacks
            .iter()
            .filter(|st| !pruned.contains(st))
            .map(|st| st.tid)
            .collect();
        assert_eq!(tids.len() as u32, threads);
        assert!(s.threads.iter().all(|t| tids.contains(&t.tid)));
        assert_eq!(&Snapshot::decode(&s.encode()).unwrap(), s);
    }
    assert!(pruned_threads > 0, "no idle thread was pruned");
}

#[test]
fn duty_cycle_samples_only_part_of_the_time() {
    let workload = support::spawn_burner_for("burn-duty", 30);
    let pid = workload.id();
    let run = |cost: CostSettings| {
        move || {
            profile(
                pid,
                Duration::from_secs(3),
                Duration::from_secs(1),
                499,
                cost,
            )
            .0
        }
    };
    let duty = CostSettings {
        duty_cycle: Some(odp_core::cost::DutyCycle {
            on_ms: 250,
            period_ms: 1000,
        }),
        ..CostSettings::default()
    };
    // Side by side on the same process, so both see the same CPU.
    let (full, cycled) = std::thread::scope(|scope| {
        let full = scope.spawn(run(CostSettings::default()));
        let cycled = scope.spawn(run(duty));
        (full.join().unwrap(), cycled.join().unwrap())
    });
    let count = |v: &[Snapshot]| v.iter().map(Snapshot::total_samples).sum::<u64>();
    let (all, part) = (count(&full), count(&cycled));
    eprintln!("samples: always on {all}, on 250 ms of every 1000 ms {part}");
    assert!(all >= 200, "only {all} samples");
    let ratio = part as f64 / all as f64;
    assert!(
        (0.05..0.6).contains(&ratio),
        "duty 25 % took {ratio:.2} of the samples"
    );
}
