use std::collections::HashMap;

use odp_core::trigger::{TriggerAssignment, TriggerCondition};
use uuid::Uuid;

use super::*;
use crate::targets::CpuTicks;

const SERVICE: &str = "checkout";
/// Uptime (in clock ticks) at the test's time 0: booted 1,000 s earlier.
const BOOT_TICKS: u64 = 100_000;

fn trigger(condition: TriggerCondition, cooldown_secs: u32) -> TriggerAssignment {
    TriggerAssignment {
        id: Uuid::from_u128(1),
        service: SERVICE.into(),
        condition,
        cooldown_secs,
        hosts: None,
    }
}

fn cpu_above(percent: u32, for_secs: u32) -> TriggerCondition {
    TriggerCondition::CpuAbove { percent, for_secs }
}

/// A process: its pid, when it started (clock ticks since boot), the CPU
/// ticks it used so far and its resident bytes.
fn process(pid: u32, started: u64, used: u64, rss_bytes: u64) -> ProcessReading {
    ProcessReading {
        pid,
        cpu: CpuTicks { used, started },
        rss_bytes,
    }
}

/// The service's processes read at `at_ms` (the test's clock starts at
/// boot + 1,000 s).
fn observed(at_ms: i64, processes: Vec<ProcessReading>) -> HashMap<String, Observation> {
    HashMap::from([(
        SERVICE.to_owned(),
        Observation {
            at_ms,
            uptime_ticks: BOOT_TICKS + (at_ms as u64) * TICKS_PER_SECOND / 1000,
            processes,
        },
    )])
}

/// One process started before the test, whose CPU counter reads
/// `used_at(second)`, read every second of `seconds`: the seconds at
/// which `t` fired, with what it observed.
fn run_steady(
    evaluator: &mut TriggerEvaluator,
    t: &TriggerAssignment,
    used_at: impl Fn(i64) -> u64,
    seconds: std::ops::RangeInclusive<i64>,
) -> Vec<(i64, Firing)> {
    let mut fired = Vec::new();
    for second in seconds {
        let readings = observed(
            second * 1000,
            vec![process(10, 50, used_at(second), 1 << 30)],
        );
        for firing in evaluator.tick(std::slice::from_ref(t), &readings) {
            fired.push((second, firing));
        }
    }
    fired
}

/// 80 ticks a second: 80 % of a core.
fn at_80_percent(second: i64) -> u64 {
    500 + 80 * second as u64
}

#[test]
fn cpu_fires_once_every_second_of_the_period_was_above_with_its_average() {
    let t = trigger(cpu_above(50, 3), 60);
    let mut evaluator = TriggerEvaluator::default();
    // Two processes: 60 and 30 ticks a second of 100, so 90 % of a core.
    let mut fired = Vec::new();
    for second in 0..=5i64 {
        let s = second as u64;
        let readings = observed(
            second * 1000,
            vec![
                process(10, 50, 1_000 + 60 * s, 0),
                process(11, 60, 2_000 + 30 * s, 0),
            ],
        );
        fired.extend(evaluator.tick(std::slice::from_ref(&t), &readings));
        if second < 3 {
            // Intervals [0,1], [1,2]: two seconds of three.
            assert!(fired.is_empty(), "fired at {second} s");
        }
    }
    assert_eq!(fired.len(), 1, "{fired:?}");
    let firing = &fired[0];
    assert_eq!(firing.trigger_id, t.id);
    assert_eq!(firing.service, SERVICE);
    assert_eq!(firing.held_since_ms, 0);
    assert!((firing.observed - 90.0).abs() < 1e-9, "{}", firing.observed);
    assert_eq!(
        firing.event(),
        AgentEventKind::TriggerFired {
            trigger_id: t.id,
            observed: firing.observed,
            held_since_ms: 0,
        }
    );
}

#[test]
fn cpu_is_a_share_of_one_core_over_the_real_interval() {
    // 150 ticks in 1.5 s is 100 %; 240 in 1.2 s is two cores.
    assert!((cpu_percent(150, 1_500) - 100.0).abs() < 1e-9);
    assert!((cpu_percent(240, 1_200) - 200.0).abs() < 1e-9);
    // A period whose ticks came late: 3 intervals over 3.3 s, fired with
    // their average.
    let t = trigger(cpu_above(150, 3), 60);
    let mut evaluator = TriggerEvaluator::default();
    let mut fired = Vec::new();
    for (at_ms, used) in [(0, 0), (1_100, 220), (2_200, 440), (3_300, 660)] {
        let readings = observed(at_ms, vec![process(10, 50, used, 0)]);
        fired.extend(evaluator.tick(std::slice::from_ref(&t), &readings));
    }
    assert_eq!(fired.len(), 1);
    assert!((fired[0].observed - 200.0).abs() < 1e-9);
    assert_eq!(fired[0].held_since_ms, 0);
}

#[test]
fn a_period_is_full_within_the_timers_jitter_only() {
    let t = trigger(cpu_above(50, 3), 60);
    // Woken 80 ms early overall: full. 150 ms: one more tick is needed.
    for (last_ms, fires) in [(2_920, true), (2_850, false)] {
        let mut evaluator = TriggerEvaluator::default();
        let mut fired = 0;
        for (at_ms, used) in [(0, 0), (1_000, 90), (2_000, 180), (last_ms, 270)] {
            let readings = observed(at_ms, vec![process(10, 50, used, 0)]);
            fired += evaluator.tick(std::slice::from_ref(&t), &readings).len();
        }
        assert_eq!(fired == 1, fires, "last tick at {last_ms} ms");
    }
}

#[test]
fn a_condition_that_keeps_holding_fires_once_per_cooldown() {
    let t = trigger(cpu_above(50, 3), 60);
    let mut evaluator = TriggerEvaluator::default();
    let fired = run_steady(&mut evaluator, &t, at_80_percent, 0..=130);
    let seconds: Vec<i64> = fired.iter().map(|(s, _)| *s).collect();
    assert_eq!(seconds, [3, 63, 123]);
    // Each about the period just before it.
    let since: Vec<i64> = fired.iter().map(|(_, f)| f.held_since_ms).collect();
    assert_eq!(since, [0, 60_000, 120_000]);
    assert!(fired.iter().all(|(_, f)| (f.observed - 80.0).abs() < 1e-9));
}

#[test]
fn the_cooldown_is_kept_between_the_periods_the_firings_report() {
    // The server checks the cooldown by the periods' starts: a tick 3 s
    // late (a loaded host) makes the period at 13.5 s begin at 8 s, only
    // 8 s after the first firing's, although 10.5 s of ticks passed.
    let t = trigger(cpu_above(50, 3), 10);
    let mut evaluator = TriggerEvaluator::default();
    let ticks_ms = (0..=8)
        .map(|s| s * 1000)
        .chain([11_500, 12_500, 13_500, 14_500]);
    let mut since = Vec::new();
    for at_ms in ticks_ms {
        let used = 500 + 80 * at_ms as u64 / 1000;
        let readings = observed(at_ms, vec![process(10, 50, used, 0)]);
        let fired = evaluator.tick(std::slice::from_ref(&t), &readings);
        since.extend(fired.iter().map(|f| (at_ms, f.held_since_ms)));
    }
    assert_eq!(since, [(3_000, 0), (14_500, 11_500)]);
}

#[test]
fn a_dip_starts_the_period_again() {
    let t = trigger(cpu_above(50, 3), 60);
    let mut evaluator = TriggerEvaluator::default();
    // 80 % but [2,3] at 50 %, which is not above: held again from 3 s.
    let dipping = |second: i64| at_80_percent(second) - if second >= 3 { 30 } else { 0 };
    let fired = run_steady(&mut evaluator, &t, dipping, 0..=8);
    assert_eq!(fired.len(), 1, "{fired:?}");
    let (second, firing) = &fired[0];
    assert_eq!((*second, firing.held_since_ms), (6, 3_000));
}

#[test]
fn pid_churn_counts_a_new_process_from_its_start_only_when_it_started_since() {
    let t = trigger(cpu_above(50, 2), 60);
    let mut evaluator = TriggerEvaluator::default();
    let mut tick = |at_ms: i64, processes| {
        let readings = observed(at_ms, processes);
        evaluator.tick(std::slice::from_ref(&t), &readings)
    };
    // At 1 s: pid 10 ran 40 ticks since 0 s, pid 20 started at 0.5 s
    // (after the 0 s tick) and ran 30: 70 %.
    assert!(tick(0, vec![process(10, 50, 1_000, 0)]).is_empty());
    let started_after = BOOT_TICKS + 50;
    assert!(tick(
        1_000,
        vec![process(10, 50, 1_040, 0), process(20, started_after, 30, 0)]
    )
    .is_empty());
    // At 2 s: pid 10 exited (its last ticks are lost), pid 20 is reused by
    // a new process started at 1.2 s that ran 55 ticks, and pid 30, which
    // ran long before (renamed into the service), counts from now: 55 %.
    let fired = tick(
        2_000,
        vec![
            process(20, BOOT_TICKS + 120, 55, 0),
            process(30, 40, 9_000, 0),
        ],
    );
    assert_eq!(fired.len(), 1);
    assert!((fired[0].observed - 62.5).abs() < 1e-9, "{fired:?}");
    assert_eq!(fired[0].held_since_ms, 0);

    // A counter read lower than before (never from the kernel) counts
    // nothing rather than wrapping.
    let mut evaluator = TriggerEvaluator::default();
    let t = trigger(cpu_above(50, 1), 60);
    for (at_ms, used) in [(0, 300), (1_000, 55)] {
        let readings = observed(at_ms, vec![process(20, 60, used, 0)]);
        assert!(evaluator
            .tick(std::slice::from_ref(&t), &readings)
            .is_empty());
    }
}

#[test]
fn no_process_or_no_reading_empties_the_period() {
    let t = trigger(cpu_above(50, 3), 60);
    let mut evaluator = TriggerEvaluator::default();
    let mut fired = Vec::new();
    for second in 0..=8i64 {
        let readings = match second {
            // Exited at 2 s, back at 3 s: a new process, started since.
            2 => observed(2_000, Vec::new()),
            // Unreadable at 5 s.
            5 => HashMap::new(),
            s if s < 2 => observed(s * 1000, vec![process(10, 50, at_80_percent(s), 0)]),
            s => observed(
                s * 1000,
                vec![process(11, BOOT_TICKS + 250, 80 * (s as u64 - 2), 0)],
            ),
        };
        fired.extend(
            evaluator
                .tick(std::slice::from_ref(&t), &readings)
                .into_iter()
                .map(|f| (second, f.held_since_ms)),
        );
    }
    // Neither at 3 s ([0,1] was emptied at 2 s) nor at 6 s ([3,4] was
    // emptied at 5 s): from the reading after the unreadable one, 6 s, the
    // period is full at 9 s, past the test.
    assert!(fired.is_empty(), "{fired:?}");
}

#[test]
fn a_restarted_agent_waits_a_whole_period() {
    // The process has spun for an hour; the agent starts at 100 s.
    let t = trigger(cpu_above(50, 5), 60);
    let mut evaluator = TriggerEvaluator::default();
    let fired = run_steady(&mut evaluator, &t, |second| 95 * second as u64, 100..=110);
    let seconds: Vec<i64> = fired.iter().map(|(s, _)| *s).collect();
    assert_eq!(seconds, [105]);
    assert_eq!(fired[0].1.held_since_ms, 100_000);
}

#[test]
fn a_changed_trigger_starts_afresh_and_a_removed_one_is_forgotten() {
    let t = trigger(cpu_above(50, 3), 600);
    let mut evaluator = TriggerEvaluator::default();
    assert_eq!(
        run_steady(&mut evaluator, &t, at_80_percent, 0..=3).len(),
        1
    );
    // Same id, a lower threshold: a fresh period, and the cooldown holds.
    let lower = trigger(cpu_above(40, 3), 600);
    assert!(run_steady(&mut evaluator, &lower, at_80_percent, 4..=20).is_empty());
    // Same id, a shorter cooldown: the period goes on, fired at once.
    let shorter = TriggerAssignment {
        cooldown_secs: 10,
        ..lower.clone()
    };
    let fired = run_steady(&mut evaluator, &shorter, at_80_percent, 21..=21);
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].1.held_since_ms, 18_000);
    // Removed (a tick without it), then back: forgotten, cooldown too.
    assert!(evaluator.tick(&[], &HashMap::new()).is_empty());
    assert!(evaluator.watched.is_empty());
    let fired = run_steady(&mut evaluator, &shorter, at_80_percent, 30..=33);
    assert_eq!(fired.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [33]);
}

#[test]
fn a_clock_stepping_back_starts_over() {
    let t = trigger(cpu_above(50, 2), 60);
    let mut evaluator = TriggerEvaluator::default();
    let mut fired = Vec::new();
    for (at_ms, used) in [
        (10_000, 0),
        (11_000, 80),
        (5_000, 160),
        (6_000, 240),
        (7_000, 320),
    ] {
        let readings = observed(at_ms, vec![process(10, 50, used, 0)]);
        for firing in evaluator.tick(std::slice::from_ref(&t), &readings) {
            fired.push((at_ms, firing.held_since_ms));
        }
    }
    // Measured again from 5 s.
    assert_eq!(fired, [(7_000, 5_000)]);
}

const MIB_BYTES: u64 = 1 << 20;

/// Memory read each second from 0 to `last_s`: the firings.
fn run_memory(t: &TriggerAssignment, last_s: i64, rss_at: impl Fn(i64) -> u64) -> Vec<Firing> {
    let mut evaluator = TriggerEvaluator::default();
    let mut fired = Vec::new();
    for second in 0..=last_s {
        // Two processes share it.
        let rss = rss_at(second);
        let readings = observed(
            second * 1000,
            vec![
                process(10, 50, 0, rss / 4),
                process(11, 50, 0, rss - rss / 4),
            ],
        );
        fired.extend(evaluator.tick(std::slice::from_ref(t), &readings));
    }
    fired
}

#[test]
fn memory_growth_is_the_slope_over_the_period() {
    let growth = |mib_per_min: u32| TriggerCondition::RssGrowth {
        mib_per_min,
        for_secs: 30,
    };
    // 512 MiB growing by 30 MiB a minute, half a MiB a second.
    let steady = |second: i64| 512 * MIB_BYTES + second as u64 * MIB_BYTES / 2;
    let fired = run_memory(&trigger(growth(20), 60), 40, steady);
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0].held_since_ms, 0, "at 30 s, about [0, 30]");
    assert!(
        (fired[0].observed - 30.0).abs() < 0.01,
        "{}",
        fired[0].observed
    );
    assert!(run_memory(&trigger(growth(31), 60), 40, steady).is_empty());
    // Shrinking never fires.
    let shrinking = |second: i64| 512 * MIB_BYTES - second as u64 * MIB_BYTES;
    assert!(run_memory(&trigger(growth(1), 60), 40, shrinking).is_empty());
}

#[test]
fn one_noisy_memory_tick_moves_the_slope_little() {
    // Flat at 512 MiB, but the tick at 30 s reads 20 MiB more: its first
    // and last ticks would say 40 MiB a minute, the slope says 7.3.
    let t = trigger(
        TriggerCondition::RssGrowth {
            mib_per_min: 10,
            for_secs: 30,
        },
        60,
    );
    let noisy = |second: i64| 512 * MIB_BYTES + if second == 30 { 20 * MIB_BYTES } else { 0 };
    assert!(run_memory(&t, 30, noisy).is_empty());
    let mut samples: VecDeque<Point> = (0..=30)
        .map(|s| Point {
            start_ms: s * 1000,
            end_ms: s * 1000,
            value: noisy(s),
        })
        .collect();
    let slope = growth_mib_per_min(&samples).unwrap();
    assert!((slope - 7.258).abs() < 0.001, "{slope}");
    samples.truncate(1);
    assert_eq!(growth_mib_per_min(&samples), None);
}
