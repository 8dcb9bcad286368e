//! The scheduling of continuous segments, on a fake clock.

use odp_core::continuous::SEGMENT_SECS;
use odp_core::service::{ServiceDefinition, SyncServices};

use super::*;

const HOST: &str = "web-1";
const HOUR_MS: i64 = SEGMENT_SECS * 1000;

fn assignment(id: u128, service: &str, hosts: Option<&[&str]>) -> ContinuousAssignment {
    ContinuousAssignment {
        id: Uuid::from_u128(id),
        service: service.into(),
        event: EventKind::CpuClock,
        frequency_hz: 19,
        cpu_budget_ppm: 5_000,
        hosts: hosts.map(|h| h.iter().map(|s| (*s).to_owned()).collect()),
    }
}

fn book(assignments: Vec<ContinuousAssignment>) -> ServiceBook {
    let services = ["checkout", "search", "cart"]
        .map(|name| ServiceDefinition {
            name: name.into(),
            target: Target::ProcessName(format!("{name}-bin")),
        })
        .to_vec();
    ServiceBook::new(&SyncServices::with_continuous(
        services,
        Vec::new(),
        assignments,
    ))
    .unwrap()
}

fn live(scan: u64, names: &[&str]) -> LiveServices {
    let mut names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
    names.sort_unstable();
    LiveServices { scan, names }
}

/// A fake clock: both clocks move together unless told otherwise.
struct Clock {
    origin: Instant,
    unix_ms: i64,
    mono_ms: u64,
}

impl Clock {
    fn at(unix_ms: i64) -> Clock {
        Clock {
            origin: Instant::now(),
            unix_ms,
            mono_ms: 0,
        }
    }
    fn now(&self) -> Now {
        Now {
            unix_ms: self.unix_ms,
            instant: self.origin + Duration::from_millis(self.mono_ms),
        }
    }
    fn advance(&mut self, ms: i64) {
        self.unix_ms += ms;
        self.mono_ms += u64::try_from(ms).unwrap();
    }
}

fn starts(plan: &Plan) -> Vec<&SegmentStart> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::Start(s) => Some(s),
            Action::Stop(_) => None,
        })
        .collect()
}

fn stops(plan: &Plan) -> Vec<Uuid> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::Stop(id) => Some(*id),
            Action::Start(_) => None,
        })
        .collect()
}

fn scheduler() -> Scheduler {
    Scheduler::new(HOST, Duration::from_secs(SEGMENT_SECS as u64))
}

#[test]
fn one_segment_per_covered_assignment_whose_service_runs_here() {
    let hour = 500_000 * HOUR_MS;
    let clock = Clock::at(hour + 61_000);
    let book = book(vec![
        assignment(1, "checkout", None),
        assignment(2, "search", Some(&["web-0", "web-2"])),
        assignment(3, "cart", Some(&["web-1"])),
    ]);
    let mut s = scheduler();
    // `cart` has no process here, `search` is another host's.
    let plan = s.plan(clock.now(), &book, &live(1, &["checkout", "search"]), true);
    let started = starts(&plan);
    assert_eq!(started.len(), 1, "{plan:?}");
    let start = &started[0];
    let id = segment_profile_id(Uuid::from_u128(1), HOST, hour / 1000);
    assert_eq!(start.start.profile_id, id);
    assert_eq!(
        start.start.target,
        Target::ProcessName("checkout-bin".into())
    );
    assert_eq!(start.start.frequency_hz, 19);
    assert_eq!(
        start.start.duration_ms,
        (HOUR_MS - 61_000) as u64,
        "to the segment's end"
    );
    assert_eq!(start.start.window_ms, None);
    assert_eq!(
        start.start.options,
        assignment(1, "checkout", None).start_options()
    );
    assert_eq!(start.first_sequence, 61_000 * SEQUENCES_PER_MS);
    assert!(s.is_part(&id) && s.running() == 1);

    // Planned again: nothing new. `cart` appears: its segment starts.
    let plan = s.plan(clock.now(), &book, &live(2, &["checkout"]), true);
    assert_eq!(plan, Plan::default());
    let plan = s.plan(clock.now(), &book, &live(3, &["cart", "checkout"]), true);
    let started = starts(&plan);
    assert_eq!(started.len(), 1);
    assert_eq!(
        started[0].start.profile_id,
        segment_profile_id(Uuid::from_u128(3), HOST, hour / 1000)
    );
    // A service gone from the scan does not stop its part: the part ends
    // by itself when its processes do.
    assert_eq!(
        s.plan(clock.now(), &book, &live(4, &[]), true),
        Plan::default()
    );
}

#[test]
fn the_next_segment_starts_at_the_boundary_and_the_last_one_ends_by_itself() {
    let hour = 400_000 * HOUR_MS;
    let mut clock = Clock::at(hour + HOUR_MS - 30_000);
    let book = book(vec![assignment(1, "checkout", None)]);
    let scan = live(1, &["checkout"]);
    let mut s = scheduler();
    assert_eq!(s.next_wake(clock.now()), None, "nothing assigned yet");
    let first = starts(&s.plan(clock.now(), &book, &scan, true))[0].clone();
    assert_eq!(first.start.duration_ms, 30_000);
    assert_eq!(s.next_wake(clock.now()), Some(hour + HOUR_MS));

    clock.advance(30_000);
    let plan = s.plan(clock.now(), &book, &scan, true);
    let next = starts(&plan)[0].clone();
    assert!(stops(&plan).is_empty(), "the last segment ends by itself");
    assert_eq!(
        next.start.profile_id,
        segment_profile_id(Uuid::from_u128(1), HOST, (hour + HOUR_MS) / 1000)
    );
    assert_eq!(next.start.duration_ms, HOUR_MS as u64);
    assert_eq!(next.first_sequence, 0);
    assert_eq!(s.running(), 2);
    // Its end, late by its session's opening: no wait for a scan before
    // the next part, and nothing to stop.
    let overdue = hour + HOUR_MS + OVERDUE_GRACE.as_millis() as i64;
    assert_eq!(s.next_wake(clock.now()), Some(overdue));
    clock.advance(300);
    assert!(s.ended(&first.start.profile_id, clock.now(), 1));
    assert!(!s.ended(&first.start.profile_id, clock.now(), 1), "once");
    assert_eq!(s.next_wake(clock.now()), Some(hour + 2 * HOUR_MS));

    // A part still running past its segment's end and the grace is
    // stopped.
    clock.advance(HOUR_MS - 300);
    let third = starts(&s.plan(clock.now(), &book, &scan, true))[0].clone();
    assert_eq!(s.plan(clock.now(), &book, &scan, true), Plan::default());
    clock.advance(OVERDUE_GRACE.as_millis() as i64);
    let plan = s.plan(clock.now(), &book, &scan, true);
    assert_eq!(stops(&plan), [next.start.profile_id]);
    assert!(starts(&plan).is_empty());
    assert!(s.is_part(&third.start.profile_id));
}

#[test]
fn too_close_to_the_boundary_waits_for_it() {
    let hour = 300_000 * HOUR_MS;
    let clock = Clock::at(hour + HOUR_MS - 500);
    let book = book(vec![assignment(1, "checkout", None)]);
    let mut s = scheduler();
    let plan = s.plan(clock.now(), &book, &live(1, &["checkout"]), true);
    assert_eq!(plan, Plan::default());
    assert_eq!(s.next_wake(clock.now()), Some(hour + HOUR_MS));
}

#[test]
fn a_part_that_ended_by_itself_restarts_after_a_newer_scan_numbered_above_it() {
    let hour = 200_000 * HOUR_MS;
    let mut clock = Clock::at(hour + 1_000);
    let book = book(vec![assignment(1, "checkout", None)]);
    let mut s = scheduler();
    let first = starts(&s.plan(clock.now(), &book, &live(1, &["checkout"]), true))[0].clone();
    // Its processes exited at +10 s; the last scan still listed them.
    clock.advance(9_000);
    assert!(s.ended(&first.start.profile_id, clock.now(), 1));
    assert_eq!(
        s.plan(clock.now(), &book, &live(1, &["checkout"]), true),
        Plan::default(),
        "not retried on the scan it was started from"
    );
    clock.advance(1_000);
    assert_eq!(
        s.plan(clock.now(), &book, &live(2, &[]), true),
        Plan::default()
    );
    // Back: the same segment, numbered past the first part.
    clock.advance(5_000);
    let second = starts(&s.plan(clock.now(), &book, &live(3, &["checkout"]), true))[0].clone();
    assert_eq!(second.start.profile_id, first.start.profile_id);
    // 15 s after the first part's start (at 1 s into the segment), and a
    // millisecond more, which the first part cannot have numbered.
    assert_eq!(second.first_sequence, 16_001 * SEQUENCES_PER_MS);
    assert_eq!(second.start.duration_ms, (HOUR_MS - 16_000) as u64);
}

#[test]
fn a_new_rate_or_budget_restarts_the_segment_at_once_a_new_event_waits_for_the_next() {
    let hour = 100_000 * HOUR_MS;
    let mut clock = Clock::at(hour + 5_000);
    let scan = live(1, &["checkout"]);
    let mut s = scheduler();
    let old = book(vec![assignment(1, "checkout", None)]);
    let first = starts(&s.plan(clock.now(), &old, &scan, true))[0].clone();
    let id = first.start.profile_id;

    // A new event alone: the running part goes on.
    let rewired = ContinuousAssignment {
        event: EventKind::Wall,
        ..assignment(1, "checkout", None)
    };
    clock.advance(1_000);
    let plan = s.plan(clock.now(), &book(vec![rewired.clone()]), &scan, true);
    assert_eq!(plan, Plan::default());

    // And a new rate: stopped, and the rest of the segment starts once the
    // part has ended, with the rate, under the same id, above its numbers,
    // still measuring the segment's first event.
    let faster = ContinuousAssignment {
        frequency_hz: 49,
        ..rewired
    };
    let changed = book(vec![faster.clone()]);
    clock.advance(1_000);
    let plan = s.plan(clock.now(), &changed, &scan, true);
    assert_eq!(plan.actions, [Action::Stop(id)]);
    assert_eq!(
        s.plan(clock.now(), &changed, &scan, true),
        Plan::default(),
        "one part at a time"
    );
    clock.advance(60);
    assert!(s.ended(&id, clock.now(), 1));
    let plan = s.plan(clock.now(), &changed, &scan, true);
    let second = starts(&plan)[0];
    assert_eq!(second.start.profile_id, id);
    assert_eq!(second.start.frequency_hz, 49);
    assert_eq!(second.start.options.event, Some(EventKind::CpuClock));
    assert_eq!(second.first_sequence, 7_061 * SEQUENCES_PER_MS);

    // A new budget restarts it too.
    let thriftier = book(vec![ContinuousAssignment {
        cpu_budget_ppm: 1_000,
        ..faster.clone()
    }]);
    clock.advance(1_000);
    assert_eq!(
        s.plan(clock.now(), &thriftier, &scan, true).actions,
        [Action::Stop(id)]
    );
    assert!(s.ended(&id, clock.now(), 1));
    let third = starts(&s.plan(clock.now(), &thriftier, &scan, true))[0].clone();
    assert_eq!(third.start.options.overhead_budget, Some(0.001));
    assert_eq!(third.start.options.event, Some(EventKind::CpuClock));

    // The next segment measures the new event.
    clock.advance(HOUR_MS);
    let next = starts(&s.plan(clock.now(), &thriftier, &scan, true))[0].clone();
    assert_ne!(next.start.profile_id, id);
    assert_eq!(next.start.options.event, Some(EventKind::Wall));
}

#[test]
fn a_removed_or_narrowed_assignment_stops_its_part_and_a_drain_stops_all() {
    let hour = 100 * HOUR_MS;
    let clock = Clock::at(hour + 5_000);
    let scan = live(1, &["checkout", "search", "cart"]);
    let mut s = scheduler();
    let all = book(vec![
        assignment(1, "checkout", None),
        assignment(2, "search", None),
        assignment(3, "cart", None),
    ]);
    let plan = s.plan(clock.now(), &all, &scan, true);
    let ids: Vec<Uuid> = starts(&plan).iter().map(|s| s.start.profile_id).collect();
    assert_eq!(ids.len(), 3);

    // 1 removed, 2 now another host's only, 3 unchanged.
    let narrowed = book(vec![
        assignment(2, "search", Some(&["web-2"])),
        assignment(3, "cart", None),
    ]);
    let plan = s.plan(clock.now(), &narrowed, &scan, true);
    let mut stopped = stops(&plan);
    stopped.sort_unstable();
    let mut expected = ids[..2].to_vec();
    expected.sort_unstable();
    assert_eq!(stopped, expected);
    assert!(starts(&plan).is_empty());
    for id in &ids[..2] {
        assert!(s.ended(id, clock.now(), 1));
    }
    // Stopped by a plan: nothing to wait for, and nothing restarts.
    assert_eq!(s.plan(clock.now(), &narrowed, &scan, true), Plan::default());

    // Draining: the last one stops, none starts.
    let plan = s.plan(clock.now(), &all, &scan, false);
    assert_eq!(plan.actions, [Action::Stop(ids[2])]);
    assert!(s.ended(&ids[2], clock.now(), 1));
    assert_eq!(s.plan(clock.now(), &all, &scan, false), Plan::default());
    assert_eq!(s.running(), 0);
}

#[test]
fn at_most_max_segments_run_and_the_rest_are_reported() {
    let clock = Clock::at(7 * HOUR_MS + 1);
    let assignments: Vec<ContinuousAssignment> = (0..MAX_SEGMENTS as u128 + 2)
        .map(|i| assignment(i + 1, "checkout", None))
        .collect();
    let mut s = scheduler();
    let plan = s.plan(
        clock.now(),
        &book(assignments),
        &live(1, &["checkout"]),
        true,
    );
    assert_eq!(starts(&plan).len(), MAX_SEGMENTS);
    assert_eq!(plan.over_cap.len(), 2);
}

#[test]
fn a_restarted_agent_takes_the_same_segment_back_numbered_past_the_last() {
    let hour = 9 * HOUR_MS;
    let mut clock = Clock::at(hour + 2_000);
    let book = book(vec![assignment(1, "checkout", None)]);
    let scan = live(1, &["checkout"]);
    let before = starts(&scheduler().plan(clock.now(), &book, &scan, true))[0].clone();
    // The agent restarts 40 s later: a new scheduler, the same assignments
    // (from the state directory).
    clock.advance(40_000);
    let after =
        starts(&scheduler().plan(clock.now(), &book, &live(1, &["checkout"]), true))[0].clone();
    assert_eq!(after.start.profile_id, before.start.profile_id);
    // Even under the same agent id, 40 s of windows (at most 400 of 100 ms,
    // each in few parts) stay below the new part's first number.
    assert!(after.first_sequence - before.first_sequence >= 40_000 * SEQUENCES_PER_MS);
}

#[test]
fn numbers_keep_rising_when_the_wall_clock_steps_back() {
    let segment_start = 11 * HOUR_MS;
    let origin = Instant::now();
    let at = |unix_ms: i64, mono_ms: u64| Now {
        unix_ms,
        instant: origin + Duration::from_millis(mono_ms),
    };
    let first = first_sequence(at(segment_start + 20_000, 0), segment_start, None);
    assert_eq!(first, 20_000 * SEQUENCES_PER_MS);
    let earlier = SegmentRun {
        start_ms: segment_start,
        event: EventKind::CpuClock,
        last_first_sequence: first,
        last_started: origin,
    };
    // 5 s later by the monotonic clock, but the wall clock went 10 s back.
    let next = first_sequence(
        at(segment_start + 15_000, 5_000),
        segment_start,
        Some(earlier),
    );
    assert_eq!(next, first + 5_001 * SEQUENCES_PER_MS);
    // Sequences of an hour fit the store's signed 64-bit column.
    assert!(SEGMENT_SECS as u64 * 1000 * SEQUENCES_PER_MS < i64::MAX as u64 / 1000);
}
