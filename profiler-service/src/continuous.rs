//! Continuous profiles on this host ([`odp_core::continuous`]): which
//! segment of which assignment runs now, decided from the assignments the
//! last `sync_services` brought ([`ServiceBook::assignments`]), the
//! services the heartbeats' scan found live ([`LiveServices`]) and the
//! clock. Pure: the agent ([`crate::agent`]) brings the time and the scan,
//! starts and stops what a [`Plan`] says through its ordinary profile path,
//! reports each part that ended, and sleeps until [`Scheduler::next_wake`].
//!
//! - A segment is one profile, whose id both the agent and the pipeline
//!   derive. It runs until the segment's end (late by its session's
//!   opening time, a few milliseconds, and at most [`OVERDUE_GRACE`]), and
//!   the next segment starts at the boundary, beside the one ending: they
//!   are different profiles. The agent sleeps until the boundary, so the
//!   gap between them is the next session's opening time.
//! - A segment may run in several **parts** on one agent: its target
//!   exited and came back, or its rate, budget or target changed (the
//!   running part stops and the rest of the segment starts at once with the
//!   new settings). Every part is the same profile sent by the same agent
//!   id, and storage keeps one window per (agent, profile, sequence),
//!   dropping the others as copies. So a part's windows are numbered from
//!   `first_sequence`: its start's milliseconds into the segment times
//!   [`SEQUENCES_PER_MS`], which no earlier part can have reached (that
//!   would take a million messages a millisecond). Numbered by the wall
//!   clock, this holds across an agent restart under a fixed `--agent-id`
//!   too; within one agent the monotonic clock also keeps each part above
//!   the last, should the wall clock step back.
//! - A changed event waits for the next segment: a profile's windows all
//!   measure one thing (CPU samples and wall samples do not add up), so
//!   every part of a segment keeps the event of its first part.
//! - A service with no live process runs no segment; one that appears gets
//!   its segment at the next scan (one heartbeat interval). A part that
//!   ended by itself before its segment's end (its processes exited, or a
//!   stop command) is started again only after a scan newer than its end
//!   finds the service live, so a vanished target is not retried in a
//!   loop.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use odp_core::command::StartProfile;
use odp_core::continuous::{segment_profile_id, ContinuousAssignment};
use odp_core::cost::StartOptions;
use odp_core::{EventKind, Target};
use uuid::Uuid;

use crate::services::ServiceBook;

/// Sequence numbers a part's start moves up per millisecond into its
/// segment: far more messages than one part could send in that time (a
/// window lasts at least 100 ms), and an hour of them stays far below
/// `i64::MAX`, as storage keeps them.
pub const SEQUENCES_PER_MS: u64 = 1 << 20;
/// Continuous segments running at once on one host, beside (not counted
/// with) the profiles commands start ([`crate::commands::MAX_PROFILES`]).
pub const MAX_SEGMENTS: usize = 16;
/// How long past its segment's end a part may still run before it is
/// stopped. Its duration, counted from when its session opened, ends it
/// that long after the boundary: a few milliseconds for perf events (it
/// then ends by itself, `duration_elapsed`), seconds for a JVM's recorder,
/// during which it would sample beside the next segment's part and count
/// the same CPU twice. Stopped, it overlaps by this much at most.
pub const OVERDUE_GRACE: Duration = Duration::from_millis(200);
/// The shortest part worth starting: closer to the boundary, the next
/// segment starts at the boundary instead.
pub const MIN_PART: Duration = Duration::from_secs(1);

/// The time, as both clocks tell it.
#[derive(Debug, Clone, Copy)]
pub struct Now {
    pub unix_ms: i64,
    pub instant: Instant,
}

impl Now {
    /// Both clocks, now.
    pub fn read() -> Now {
        Now {
            unix_ms: crate::window::unix_ms(),
            instant: Instant::now(),
        }
    }
}

/// The defined services with live processes on the host, as one scan of
/// the heartbeats found them, and which scan that was (they count from 1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveServices {
    pub scan: u64,
    /// Sorted.
    pub names: Vec<String>,
}

impl LiveServices {
    fn contains(&self, service: &str) -> bool {
        self.names
            .binary_search_by(|name| name.as_str().cmp(service))
            .is_ok()
    }
}

/// One part of a segment to start, as a start command would.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentStart {
    /// With the assignment's event and budget as its options
    /// ([`ContinuousAssignment::start_options`]).
    pub start: StartProfile,
    pub first_sequence: u64,
}

/// What the agent does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Start(SegmentStart),
    /// Stop this running part, flushed as a stop command would.
    Stop(Uuid),
}

#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    pub actions: Vec<Action>,
    /// Assignments this host should run that found no room
    /// ([`MAX_SEGMENTS`]).
    pub over_cap: Vec<Uuid>,
}

/// What a running part was started with that a sync may change at once.
#[derive(Debug, Clone, PartialEq)]
struct Settings {
    frequency_hz: u32,
    cpu_budget_ppm: u32,
    target: Target,
}

impl Settings {
    fn of(assignment: &ContinuousAssignment, target: &Target) -> Settings {
        Settings {
            frequency_hz: assignment.frequency_hz,
            cpu_budget_ppm: assignment.cpu_budget_ppm,
            target: target.clone(),
        }
    }
}

#[derive(Debug)]
struct Part {
    assignment: Uuid,
    segment_start_ms: i64,
    segment_end_ms: i64,
    settings: Settings,
    /// Asked to stop by a plan.
    stopping: bool,
}

/// What this agent started of an assignment's current segment.
#[derive(Debug, Clone, Copy)]
struct SegmentRun {
    start_ms: i64,
    event: EventKind,
    /// The last part's first sequence number, and when it started.
    last_first_sequence: u64,
    last_started: Instant,
}

/// The continuous parts this agent runs, and what it needs to start the
/// next ones.
#[derive(Debug)]
pub struct Scheduler {
    host: String,
    segment_ms: i64,
    /// Running parts by profile id.
    parts: HashMap<Uuid, Part>,
    /// Each assignment's current segment, as far as this agent ran it.
    segments: HashMap<Uuid, SegmentRun>,
    /// Assignments whose part ended by itself, and the last scan before
    /// that: not started again until a later scan finds them live.
    waiting: HashMap<Uuid, u64>,
    /// Whether the last plan found an assignment this host should run.
    assigned: bool,
}

impl Scheduler {
    /// The scheduler of `host`, in segments of `segment`
    /// ([`odp_core::continuous::SEGMENT_SECS`] but in tests).
    pub fn new(host: &str, segment: Duration) -> Scheduler {
        Scheduler {
            host: host.to_owned(),
            segment_ms: i64::try_from(segment.as_millis())
                .unwrap_or(i64::MAX)
                .max(1),
            parts: HashMap::new(),
            segments: HashMap::new(),
            waiting: HashMap::new(),
            assigned: false,
        }
    }

    /// Whether `profile_id` is one of the running parts.
    pub fn is_part(&self, profile_id: &Uuid) -> bool {
        self.parts.contains_key(profile_id)
    }

    /// Running parts, stopping ones included.
    pub fn running(&self) -> usize {
        self.parts.len()
    }

    /// What to start and stop now. `accepting` is false while the agent
    /// drains: every part stops and none starts.
    pub fn plan(
        &mut self,
        now: Now,
        book: &ServiceBook,
        live: &LiveServices,
        accepting: bool,
    ) -> Plan {
        let segment_start_ms = now.unix_ms.div_euclid(self.segment_ms) * self.segment_ms;
        let segment_end_ms = segment_start_ms + self.segment_ms;
        let assigned: Vec<(&ContinuousAssignment, &Target)> = book
            .assignments()
            .iter()
            .filter(|a| a.covers(&self.host))
            .filter_map(|a| book.target_of(&a.service).map(|target| (a, target)))
            .collect();
        self.assigned = !assigned.is_empty();
        self.waiting.retain(|_, scan| live.scan <= *scan);
        self.segments
            .retain(|_, run| run.start_ms == segment_start_ms);
        let mut plan = Plan::default();
        let overdue_ms = i64::try_from(OVERDUE_GRACE.as_millis()).unwrap_or(i64::MAX);
        for (profile_id, part) in &mut self.parts {
            if part.stopping {
                continue;
            }
            let current = assigned.iter().find(|(a, _)| a.id == part.assignment);
            let stop = match current {
                // Removed, or no longer this host's.
                None => true,
                Some(_) if !accepting => true,
                Some(_) if part.segment_start_ms != segment_start_ms => {
                    now.unix_ms >= part.segment_end_ms.saturating_add(overdue_ms)
                }
                Some((a, target)) => part.settings != Settings::of(a, target),
            };
            if stop {
                part.stopping = true;
                plan.actions.push(Action::Stop(*profile_id));
            }
        }
        let remaining_ms = segment_end_ms - now.unix_ms;
        if !accepting || remaining_ms < i64::try_from(MIN_PART.as_millis()).unwrap_or(0) {
            return plan;
        }
        let mut current = self
            .parts
            .values()
            .filter(|p| p.segment_start_ms == segment_start_ms)
            .count();
        for (a, target) in assigned {
            // One part of a segment at a time: a stopping one ends first.
            let running = self
                .parts
                .values()
                .any(|p| p.assignment == a.id && p.segment_start_ms == segment_start_ms);
            if running || !live.contains(&a.service) || self.waiting.contains_key(&a.id) {
                continue;
            }
            if current >= MAX_SEGMENTS {
                plan.over_cap.push(a.id);
                continue;
            }
            current += 1;
            let start = self.start_part(a, target, now, segment_start_ms, remaining_ms);
            plan.actions.push(Action::Start(start));
        }
        plan
    }

    /// Records the part `plan` asked for as running.
    fn start_part(
        &mut self,
        assignment: &ContinuousAssignment,
        target: &Target,
        now: Now,
        segment_start_ms: i64,
        remaining_ms: i64,
    ) -> SegmentStart {
        let profile_id =
            segment_profile_id(assignment.id, &self.host, segment_start_ms.div_euclid(1000));
        let earlier = self.segments.get(&assignment.id).copied();
        let first_sequence = first_sequence(now, segment_start_ms, earlier);
        let event = earlier.map_or(assignment.event, |run| run.event);
        self.segments.insert(
            assignment.id,
            SegmentRun {
                start_ms: segment_start_ms,
                event,
                last_first_sequence: first_sequence,
                last_started: now.instant,
            },
        );
        self.parts.insert(
            profile_id,
            Part {
                assignment: assignment.id,
                segment_start_ms,
                segment_end_ms: segment_start_ms + self.segment_ms,
                settings: Settings::of(assignment, target),
                stopping: false,
            },
        );
        SegmentStart {
            start: StartProfile {
                profile_id,
                target: target.clone(),
                duration_ms: u64::try_from(remaining_ms).unwrap_or(1).max(1),
                frequency_hz: assignment.frequency_hz,
                window_ms: None,
                options: StartOptions {
                    event: Some(event),
                    ..assignment.start_options()
                },
            },
            first_sequence,
        }
    }

    /// A part ended (or could not start); `scan` is the last scan the agent
    /// saw. Returns false when `profile_id` is not a part.
    pub fn ended(&mut self, profile_id: &Uuid, now: Now, scan: u64) -> bool {
        let Some(part) = self.parts.remove(profile_id) else {
            return false;
        };
        if !part.stopping && now.unix_ms < part.segment_end_ms {
            self.waiting.insert(part.assignment, scan);
        }
        true
    }

    /// When to plan again, in Unix milliseconds, besides on a scan, a sync
    /// or a part's end: the next boundary while this host has assignments,
    /// and when a part of an ended segment becomes overdue.
    pub fn next_wake(&self, now: Now) -> Option<i64> {
        let overdue_ms = i64::try_from(OVERDUE_GRACE.as_millis()).unwrap_or(i64::MAX);
        let boundary = (now.unix_ms.div_euclid(self.segment_ms) + 1) * self.segment_ms;
        let overdue = self
            .parts
            .values()
            .filter(|p| !p.stopping)
            .map(|p| p.segment_end_ms.saturating_add(overdue_ms))
            .min();
        let boundary = (self.assigned || !self.parts.is_empty()).then_some(boundary);
        [boundary, overdue].into_iter().flatten().min()
    }
}

/// The first sequence number of a part starting `now` in the segment that
/// started at `segment_start_ms`: its milliseconds into the segment times
/// [`SEQUENCES_PER_MS`], and past what the monotonic clock says an earlier
/// part of this agent could have used.
fn first_sequence(now: Now, segment_start_ms: i64, earlier: Option<SegmentRun>) -> u64 {
    let into_segment = u64::try_from(now.unix_ms - segment_start_ms).unwrap_or(0);
    let by_wall = into_segment.saturating_mul(SEQUENCES_PER_MS);
    let by_monotonic = earlier.map_or(0, |run| {
        let elapsed = now.instant.saturating_duration_since(run.last_started);
        let elapsed_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        run.last_first_sequence.saturating_add(
            elapsed_ms
                .saturating_add(1)
                .saturating_mul(SEQUENCES_PER_MS),
        )
    });
    by_wall.max(by_monotonic)
}

#[cfg(test)]
mod tests;
