//! How often a running profile is evaluated by the rules.
//!
//! Evaluating reads the whole profile back from Postgres, so evaluating
//! every profile a batch touched made ingest cost grow with the square of a
//! profile's windows, and a fleet of new profiles stalled ingest on their
//! first evaluations. Instead a running profile is evaluated by a
//! background pass, at most once per interval: its windows mark it
//! pending, and it is evaluated an interval after it was first seen or
//! last evaluated. A profile that finished is evaluated at once, before its
//! batch's offsets are committed, so its final detections never depend on
//! the background pass. A zero interval evaluates everything at once.
//! When more are due than the background pass has time for, those waiting
//! longest go first and the others wait longer.
//!
//! The pacer also keeps, for each running profile, the runtime its agent
//! reported (which rules on library versions and runtime options read at
//! every evaluation, and which does not change while the profile runs) and
//! what its evaluations have read so far (its samples summed, and the last
//! window read), so the next evaluation reads only the windows stored
//! since. Both are forgotten with the profile.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use odp_core::runtime::ProfileRuntime;
use odp_profile::FrameSums;
use tokio::time::Instant;
use uuid::Uuid;

#[derive(Debug)]
pub(crate) struct Pacer {
    interval: Duration,
    /// When each recent profile was last evaluated, or first seen.
    last: HashMap<Uuid, Instant>,
    /// Profiles with windows not evaluated yet.
    pending: HashSet<Uuid>,
    /// The reported runtime of profiles in `last`.
    runtimes: HashMap<Uuid, Arc<ProfileRuntime>>,
    /// What the evaluations of profiles in `last` have read.
    reads: HashMap<Uuid, ReadSoFar>,
}

/// What a running profile's evaluations have read: its samples summed, and
/// the id of the last window read (0: none).
#[derive(Debug, Default)]
pub(crate) struct ReadSoFar {
    pub(crate) sums: FrameSums,
    pub(crate) last_window: i64,
}

impl Pacer {
    /// `interval` zero evaluates every batch.
    pub(crate) fn new(interval: Duration) -> Pacer {
        Pacer {
            interval,
            last: HashMap::new(),
            pending: HashSet::new(),
            runtimes: HashMap::new(),
            reads: HashMap::new(),
        }
    }

    /// Which of a batch's profiles to evaluate now: the finished ones (all
    /// of them with a zero interval); the others are left pending.
    pub(crate) fn due_now(
        &mut self,
        touched: &[Uuid],
        finished: &[Uuid],
        now: Instant,
    ) -> Vec<Uuid> {
        let mut due = Vec::new();
        for &id in touched.iter().chain(finished) {
            if due.contains(&id) {
                continue;
            }
            let is_finished = finished.contains(&id);
            if is_finished || self.interval.is_zero() {
                self.pending.remove(&id);
                if is_finished {
                    self.last.remove(&id);
                    self.runtimes.remove(&id);
                    self.reads.remove(&id);
                } else {
                    self.last.insert(id, now);
                }
                due.push(id);
            } else {
                self.last.entry(id).or_insert(now);
                self.pending.insert(id);
            }
        }
        due
    }

    /// At most `limit` of the pending profiles whose interval is up, those
    /// waiting longest first, taken out of pending (the others stay
    /// pending for the next call); and forgets evaluations too old to
    /// matter, so memory follows the profiles that are running.
    pub(crate) fn take_due(&mut self, now: Instant, limit: usize) -> Vec<Uuid> {
        let mut due: Vec<(Instant, Uuid)> = self
            .pending
            .iter()
            .copied()
            .filter(|&id| self.is_due(id, now))
            .map(|id| (self.last.get(&id).copied().unwrap_or(now), id))
            .collect();
        due.sort_unstable();
        due.truncate(limit);
        let due: Vec<Uuid> = due.into_iter().map(|(_, id)| id).collect();
        for id in &due {
            self.pending.remove(id);
            self.last.insert(*id, now);
        }
        let interval = self.interval;
        let pending = &self.pending;
        self.last
            .retain(|id, at| now.duration_since(*at) < interval || pending.contains(id));
        let last = &self.last;
        self.runtimes.retain(|id, _| last.contains_key(id));
        self.reads.retain(|id, _| last.contains_key(id));
        due
    }

    /// The runtime remembered for a running profile.
    pub(crate) fn runtime(&self, id: Uuid) -> Option<Arc<ProfileRuntime>> {
        self.runtimes.get(&id).cloned()
    }

    /// Remembers a profile's runtime while the profile is paced (running);
    /// any other profile's is not kept.
    pub(crate) fn remember_runtime(&mut self, id: Uuid, runtime: Arc<ProfileRuntime>) {
        if self.last.contains_key(&id) {
            self.runtimes.insert(id, runtime);
        }
    }

    /// What a profile's evaluations have read, taken out until
    /// [`Pacer::keep_read`] puts it back: an evaluation running meanwhile
    /// reads the profile from its start.
    pub(crate) fn take_read(&mut self, id: Uuid) -> Option<ReadSoFar> {
        self.reads.remove(&id)
    }

    /// Keeps what a running profile's evaluation read, while the profile is
    /// paced; any other profile's is not kept.
    pub(crate) fn keep_read(&mut self, id: Uuid, read: ReadSoFar) {
        if self.last.contains_key(&id) {
            self.reads.insert(id, read);
        }
    }

    fn is_due(&self, id: Uuid, now: Instant) -> bool {
        self.last
            .get(&id)
            .is_none_or(|at| now.duration_since(*at) >= self.interval)
    }

    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.last.len() + self.pending.len() + self.runtimes.len() + self.reads.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No limit on the profiles taken at once.
    const ALL: usize = usize::MAX;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn running_profiles_are_evaluated_once_per_interval() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut pacer = Pacer::new(Duration::from_secs(10));
        // New profiles wait an interval: ingest never stalls on them.
        assert!(pacer.due_now(&[id(1), id(2)], &[], at(0)).is_empty());
        assert!(pacer.take_due(at(9), ALL).is_empty());
        let mut due = pacer.take_due(at(10), ALL);
        due.sort();
        assert_eq!(due, [id(1), id(2)]);
        // More windows within the interval wait.
        assert!(pacer.due_now(&[id(1)], &[], at(13)).is_empty());
        assert!(pacer.take_due(at(19), ALL).is_empty());
        // The pending one is evaluated when its interval is up, once.
        assert_eq!(pacer.take_due(at(20), ALL), [id(1)]);
        assert!(pacer.take_due(at(21), ALL).is_empty());
        // Nothing new for profile 2: no evaluation.
        assert!(pacer.take_due(at(40), ALL).is_empty());
        assert_eq!(pacer.remembered(), 0, "old evaluations are forgotten");
    }

    #[test]
    fn finished_profiles_are_evaluated_at_once() {
        let start = Instant::now();
        let mut pacer = Pacer::new(Duration::from_secs(10));
        assert!(pacer.due_now(&[id(1)], &[], start).is_empty());
        // Its last window and its finish in one batch: evaluated now, and
        // not again by the deferred pass.
        assert_eq!(pacer.due_now(&[id(1)], &[id(1)], start), [id(1)]);
        assert!(pacer
            .take_due(start + Duration::from_secs(60), ALL)
            .is_empty());
        assert_eq!(pacer.remembered(), 0);
    }

    #[test]
    fn runtimes_are_kept_while_their_profile_runs() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let runtime = Arc::new(ProfileRuntime::default());
        let mut pacer = Pacer::new(Duration::from_secs(10));
        pacer.remember_runtime(id(1), runtime.clone());
        assert!(pacer.runtime(id(1)).is_none(), "not a running profile");
        pacer.due_now(&[id(1), id(2)], &[], at(0));
        assert_eq!(pacer.take_due(at(10), ALL).len(), 2);
        pacer.remember_runtime(id(1), runtime.clone());
        pacer.remember_runtime(id(2), runtime.clone());
        // Kept across evaluations while windows keep coming...
        pacer.due_now(&[id(1), id(2)], &[], at(12));
        assert_eq!(pacer.take_due(at(20), ALL).len(), 2);
        assert!(pacer.runtime(id(1)).is_some());
        // ...until the profile finishes, or goes quiet and is forgotten.
        pacer.due_now(&[], &[id(1)], at(21));
        assert!(pacer.runtime(id(1)).is_none());
        assert!(pacer.runtime(id(2)).is_some());
        pacer.take_due(at(40), ALL);
        assert!(pacer.runtime(id(2)).is_none());
        assert_eq!(pacer.remembered(), 0);
    }

    #[test]
    fn reads_are_kept_while_their_profile_runs() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let read = |last_window| ReadSoFar {
            last_window,
            ..ReadSoFar::default()
        };
        let mut pacer = Pacer::new(Duration::from_secs(10));
        pacer.keep_read(id(1), read(5));
        assert!(pacer.take_read(id(1)).is_none(), "not a running profile");
        pacer.due_now(&[id(1), id(2)], &[], at(0));
        assert_eq!(pacer.take_due(at(10), ALL).len(), 2);
        pacer.keep_read(id(1), read(5));
        pacer.keep_read(id(2), read(7));
        // Taken by an evaluation, and kept again after it.
        assert_eq!(pacer.take_read(id(1)).unwrap().last_window, 5);
        assert!(pacer.take_read(id(1)).is_none(), "taken out meanwhile");
        pacer.keep_read(id(1), read(9));
        // Forgotten when the profile finishes, or goes quiet.
        pacer.due_now(&[id(1), id(2)], &[], at(12));
        assert_eq!(pacer.take_due(at(20), ALL).len(), 2);
        pacer.due_now(&[], &[id(1)], at(21));
        assert!(pacer.take_read(id(1)).is_none());
        assert_eq!(pacer.take_read(id(2)).unwrap().last_window, 7);
        pacer.keep_read(id(2), read(8));
        pacer.take_due(at(40), ALL);
        assert!(pacer.take_read(id(2)).is_none());
        assert_eq!(pacer.remembered(), 0);
    }

    #[test]
    fn the_profiles_waiting_longest_are_taken_first_and_the_rest_wait() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut pacer = Pacer::new(Duration::from_secs(10));
        pacer.due_now(&[id(3)], &[], at(0));
        pacer.due_now(&[id(1)], &[], at(1));
        pacer.due_now(&[id(2)], &[], at(2));
        assert_eq!(pacer.take_due(at(20), 2), [id(3), id(1)]);
        // The one left over is still pending, and first at the next call.
        pacer.due_now(&[id(3)], &[], at(21));
        assert_eq!(pacer.take_due(at(21), 1), [id(2)]);
        assert!(pacer.take_due(at(25), ALL).is_empty(), "evaluated at 20");
        assert_eq!(pacer.take_due(at(30), ALL), [id(3)]);
    }

    #[test]
    fn a_zero_interval_evaluates_every_batch() {
        let now = Instant::now();
        let mut pacer = Pacer::new(Duration::ZERO);
        for _ in 0..3 {
            assert_eq!(pacer.due_now(&[id(1)], &[], now), [id(1)]);
        }
    }
}
