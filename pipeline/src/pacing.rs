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
//! since. Both are forgotten with the profile. The sums keep apart only the
//! stacks the rules read of a running profile (those a pattern matches),
//! the others summed as one, so they grow with what the rules match rather
//! than with every stack a fleet's segments run over their hour; when the
//! rules change, the sums are dropped and read again.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use odp_core::runtime::ProfileRuntime;
use odp_profile::{FrameSums, Profile, ProfileFrames, StackTable};
use odp_rules::RuleSet;
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
    /// The frames and stacks of `reads`, which a fleet's profiles share.
    table: StackTable,
    /// The rules `table` keeps stacks for (none yet).
    table_rules: Option<Arc<RuleSet>>,
    /// The table's entries when it last dropped those no read counts.
    table_kept: usize,
}

/// What a running profile's evaluations have read: its samples summed, and
/// the id of the last window read (0: none).
#[derive(Debug, Default)]
struct ReadSoFar {
    sums: FrameSums,
    last_window: i64,
}

/// What the sums of running profiles hold: how many profiles, their
/// counts of stacks, the stacks of the shared table, and about how many
/// bytes of heap all of it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) profiles: usize,
    pub(crate) stack_counts: usize,
    pub(crate) table_stacks: usize,
    pub(crate) bytes: usize,
}

/// How long a profile evaluated and quiet since is remembered (with its
/// runtime and what its evaluations read). Agents send a window every
/// 10 s by default: forgotten an interval after its evaluation, a
/// segment's sums went before its next window came about half the time
/// (at 2,000 continuous hosts, 381 to 1,736 of 2,000 held), and it was
/// read whole again. A profile quiet this long finished, or its agent
/// went away.
const QUIET_FOR: Duration = Duration::from_secs(60);

/// Entries (frames and stacks) the shared table may hold before it drops
/// those no running profile counts any more, and twice as many as it kept
/// the last time. Frames count too: the table interns every frame it sees
/// to know whether its stacks are read, and a fleet whose code changes
/// brings new frames whose stacks no rule reads.
const TABLE_FLOOR: usize = 20_000;

impl Pacer {
    /// `interval` zero evaluates every batch.
    pub(crate) fn new(interval: Duration) -> Pacer {
        Pacer {
            interval,
            last: HashMap::new(),
            pending: HashSet::new(),
            runtimes: HashMap::new(),
            reads: HashMap::new(),
            table: StackTable::default(),
            table_rules: None,
            table_kept: 0,
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
    /// pending for the next call); and forgets profiles quiet for
    /// [`QUIET_FOR`], so memory follows the profiles that are running.
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
        let kept_for = self.interval.max(QUIET_FOR);
        let pending = &self.pending;
        self.last
            .retain(|id, at| now.duration_since(*at) < kept_for || pending.contains(id));
        let last = &self.last;
        self.runtimes.retain(|id, _| last.contains_key(id));
        self.reads.retain(|id, _| last.contains_key(id));
        if self.table.entries() > 2 * self.table_kept.max(TABLE_FLOOR) {
            let sums = self.reads.values_mut().map(|read| &mut read.sums);
            self.table.keep_only(sums);
            self.table_kept = self.table.entries();
        }
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

    /// The last window a profile's evaluations by `rules` have read (0:
    /// none).
    pub(crate) fn last_window(&mut self, id: Uuid, rules: &Arc<RuleSet>) -> i64 {
        self.read_by(rules);
        self.reads.get(&id).map_or(0, |read| read.last_window)
    }

    /// Keeps the stacks `rules` read from now on: sums kept for other
    /// rules are dropped (their stacks may be summed in their rest).
    fn read_by(&mut self, rules: &Arc<RuleSet>) {
        match &self.table_rules {
            Some(kept) if Arc::ptr_eq(kept, rules) => return,
            Some(kept) if kept.same_rules(rules) => {}
            _ => {
                self.reads.clear();
                self.table = StackTable::reading(rules.running_reads());
                self.table_kept = 0;
            }
        }
        self.table_rules = Some(rules.clone());
    }

    /// Adds `windows`, those stored after window `after` up to window
    /// `last_window`, to what a profile's evaluations have read, and
    /// returns the sum as `rules` read it; kept while the profile is
    /// paced (running). An evaluation that ran meanwhile and read further
    /// leaves its sum, which holds these windows; `None` when what was
    /// read up to `after` has been forgotten meanwhile (or was kept for
    /// other rules), and the profile must be read whole.
    pub(crate) fn add_read(
        &mut self,
        id: Uuid,
        after: i64,
        windows: &Profile,
        last_window: i64,
        rules: &Arc<RuleSet>,
    ) -> Option<ProfileFrames> {
        self.read_by(rules);
        let mut read = self.reads.remove(&id).unwrap_or_default();
        if read.last_window == after {
            read.sums.add(windows, &mut self.table);
            read.last_window = last_window;
        } else if read.last_window < after {
            return None;
        }
        let data = read.sums.frames(&self.table);
        if self.last.contains_key(&id) {
            self.reads.insert(id, read);
        }
        Some(data)
    }

    /// What the sums of running profiles hold now.
    pub(crate) fn held(&self) -> Held {
        Held {
            profiles: self.reads.len(),
            stack_counts: self.reads.values().map(|r| r.sums.stacks()).sum(),
            table_stacks: self.table.stacks(),
            bytes: self.table.heap_bytes()
                + self
                    .reads
                    .values()
                    .map(|r| r.sums.heap_bytes())
                    .sum::<usize>(),
        }
    }

    /// Forgets what a profile's evaluations have read.
    pub(crate) fn forget_read(&mut self, id: Uuid) {
        self.reads.remove(&id);
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
        // Quiet for a minute: forgotten.
        assert!(pacer.remembered() > 0);
        assert!(pacer.take_due(at(80), ALL).is_empty());
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
        assert!(
            pacer.runtime(id(2)).is_some(),
            "quiet for less than a minute"
        );
        pacer.take_due(at(80), ALL);
        assert!(pacer.runtime(id(2)).is_none());
        assert_eq!(pacer.remembered(), 0);
    }

    /// One window of `samples` on a stack of its own (by `leaf`).
    fn windows(sequence: u64, leaf: &str, samples: u64) -> Profile {
        use odp_core::{EventKind, Frame};
        let mut b = odp_profile::ProfileBuilder::default();
        let frames = [
            b.frame(&Frame::function("main")),
            b.frame(&Frame::function(leaf)),
        ];
        let w = b.window(odp_profile::Window {
            profile_id: Uuid::nil(),
            host: "h".into(),
            agent_id: "a".into(),
            sequence,
            start_ms: sequence as i64 * 10_000,
            end_ms: sequence as i64 * 10_000 + 10_000,
            event: EventKind::CpuClock,
            period: 1_000_000,
            frequency_hz: 0,
        });
        b.samples(w, 1, &frames, samples);
        b.build()
    }

    /// Rules that read stacks with a frame matching `function`.
    fn reading(function: &str) -> Arc<RuleSet> {
        let rule = odp_rules::RuleDef {
            id: format!("reads-{function}"),
            title: "t".into(),
            explanation: "e".into(),
            fix: "f".into(),
            link: "https://example.invalid".into(),
            kind: odp_rules::stack_share::KIND.into(),
            spec: serde_json::json!({ "function": function }),
            threshold_pct: 1.0,
            service_thresholds: Default::default(),
            enabled: true,
        };
        Arc::new(RuleSet::compile([rule]).0)
    }

    #[test]
    fn reads_add_up_and_are_kept_while_their_profile_runs() {
        let rules = reading("");
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut pacer = Pacer::new(Duration::from_secs(10));
        // Not a running profile: summed, not kept.
        let once = pacer
            .add_read(id(1), 0, &windows(0, "a", 5), 3, &rules)
            .unwrap();
        assert_eq!(once.samples, 5);
        assert_eq!(pacer.last_window(id(1), &rules), 0);
        pacer.due_now(&[id(1), id(2)], &[], at(0));
        assert_eq!(pacer.take_due(at(10), ALL).len(), 2);
        pacer
            .add_read(id(1), 0, &windows(0, "a", 5), 3, &rules)
            .unwrap();
        let sum = pacer
            .add_read(id(1), 3, &windows(1, "b", 7), 8, &rules)
            .unwrap();
        assert_eq!((sum.samples, sum.stacks.len()), (12, 2));
        assert_eq!(pacer.last_window(id(1), &rules), 8);
        let held = pacer.held();
        assert_eq!(
            (held.profiles, held.stack_counts, held.table_stacks),
            (1, 2, 2)
        );
        assert!(held.bytes > 0);
        // An evaluation that read from window 3 after another read to 8
        // leaves the sum as it is: it already holds those windows.
        let again = pacer
            .add_read(id(1), 3, &windows(1, "b", 7), 8, &rules)
            .unwrap();
        assert_eq!(again.samples, 12);
        pacer
            .add_read(id(2), 0, &windows(0, "a", 1), 4, &rules)
            .unwrap();
        // Forgotten when the profile finishes, or goes quiet.
        pacer.due_now(&[id(1), id(2)], &[], at(12));
        assert_eq!(pacer.take_due(at(20), ALL).len(), 2);
        pacer.due_now(&[], &[id(1)], at(21));
        assert_eq!(pacer.last_window(id(1), &rules), 0);
        assert!(
            pacer
                .add_read(id(1), 8, &windows(2, "c", 1), 9, &rules)
                .is_none(),
            "what was read is forgotten: read it whole"
        );
        assert_eq!(pacer.last_window(id(2), &rules), 4);
        // Kept over a quiet spell between windows, forgotten after a minute.
        pacer.take_due(at(40), ALL);
        assert_eq!(pacer.last_window(id(2), &rules), 4);
        pacer.take_due(at(80), ALL);
        assert_eq!(pacer.last_window(id(2), &rules), 0);
        assert_eq!(pacer.remembered(), 0);
    }

    #[test]
    fn stacks_no_rule_reads_are_summed_as_one_and_new_rules_read_again() {
        let start = Instant::now();
        let mut pacer = Pacer::new(Duration::from_secs(10));
        pacer.due_now(&[id(1)], &[], start);
        let hot = reading("^hot$");
        pacer.add_read(id(1), 0, &windows(0, "hot", 5), 1, &hot);
        pacer.add_read(id(1), 1, &windows(1, "cold", 7), 2, &hot);
        let sum = pacer.add_read(id(1), 2, &windows(2, "warm", 2), 3, &hot);
        let sum = sum.unwrap();
        let counts: Vec<(usize, u64)> = sum
            .stacks
            .iter()
            .map(|s| (s.frames.len(), s.count))
            .collect();
        assert_eq!(counts, [(2, 5), (0, 9)], "main;hot, and the rest");
        assert_eq!(pacer.held().stack_counts, 1);
        // The same rules, re-read: the sums stay.
        assert_eq!(pacer.last_window(id(1), &reading("^hot$")), 3);
        // Other rules: the rest may hold what they read, so read again.
        let cold = reading("^cold$");
        assert_eq!(pacer.last_window(id(1), &cold), 0);
        assert!(pacer
            .add_read(id(1), 3, &windows(3, "cold", 1), 4, &cold)
            .is_none());
    }

    #[test]
    fn the_shared_table_drops_the_stacks_of_profiles_gone() {
        let rules = reading("");
        let start = Instant::now();
        let mut pacer = Pacer::new(Duration::from_secs(10));
        let running = id(u128::MAX);
        pacer.due_now(&[running], &[], start);
        let mut after = 0;
        // Profiles come and go, each with stacks of its own; one runs on.
        for n in 0..(2 * TABLE_FLOOR as u128 + 10) {
            pacer.due_now(&[id(n)], &[], start);
            pacer.add_read(id(n), 0, &windows(0, &format!("f{n}"), 1), 1, &rules);
            pacer.due_now(&[], &[id(n)], start);
            if n % 1000 == 0 {
                let leaf = format!("r{n}");
                pacer.add_read(
                    running,
                    after,
                    &windows(n as u64, &leaf, 1),
                    after + 1,
                    &rules,
                );
                after += 1;
            }
        }
        pacer.take_due(start, ALL);
        assert_eq!(pacer.table.stacks(), 41, "the running profile's stacks");
        let sum = pacer.add_read(running, after, &windows(99, "r0", 1), after + 1, &rules);
        let sum = sum.unwrap();
        assert_eq!((sum.samples, sum.stacks.len()), (42, 41));
    }

    #[test]
    fn the_shared_table_drops_the_frames_of_stacks_no_rule_reads() {
        let rules = reading("^hot$");
        let start = Instant::now();
        let mut pacer = Pacer::new(Duration::from_secs(10));
        let running = id(u128::MAX);
        pacer.due_now(&[running], &[], start);
        pacer.add_read(running, 0, &windows(0, "hot", 1), 1, &rules);
        // The fleet's code changes: frames come whose stacks no rule reads.
        for n in 0..(2 * TABLE_FLOOR as u64 + 10) {
            let part = windows(n + 1, &format!("f{n}"), 1);
            pacer.add_read(running, n as i64 + 1, &part, n as i64 + 2, &rules);
        }
        assert_eq!(pacer.table.stacks(), 1, "main;hot alone is read");
        pacer.take_due(start, ALL);
        assert_eq!(pacer.table.entries(), 3, "main, hot and main;hot");
        let sum = pacer.add_read(
            running,
            2 * TABLE_FLOOR as i64 + 11,
            &windows(0, "hot", 1),
            0,
            &rules,
        );
        let counts: Vec<u64> = sum.unwrap().stacks.iter().map(|s| s.count).collect();
        assert_eq!(
            counts,
            [2, 2 * TABLE_FLOOR as u64 + 10],
            "main;hot, and the rest"
        );
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
