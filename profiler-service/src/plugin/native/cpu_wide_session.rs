//! A CPU profile of a process-name, command-line or cgroup target, or of a
//! pid with its children, sampled per CPU ([`super::cpu_wide`]): every CPU's records are put in time
//! order, the side-band ones kept in a [`ProcessTable`], and the samples
//! of the processes the target designates symbolized by the mappings the
//! records gave, so that a process that lived 50 ms between two rescans is
//! profiled from its first sample to its last.
//!
//! Whether a process is the target's is decided once per program it runs:
//! by its name from `COMM` records for a process-name target, else from
//! `/proc/PID/cmdline` or `/proc/PID/cgroup` when its first sample is
//! drained (a forked child inherits its parent's answer; a command line
//! is read again after `exec`, a cgroup is kept). For a pid with its
//! children the `FORK` records decide exactly: the pid and its descendants
//! alive at the start are the rescan's, and a child forked by one of them
//! is kept from its first sample, across `exec`; a process no record
//! named is looked up by its parents in `/proc`. The rescan's processes
//! are the target's too. A command-line target can still miss a process
//! that ran `exec` and exited within one drain (50 ms): its command line
//! is gone by then.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use odp_core::EventKind;
use tracing::debug;

use super::add_samples;
use super::cpu_wide::{CpuRecord, CpuWideSet, Timed};
use super::debuginfod::Debuginfod;
use super::perf::{DrainStats, RawSample};
use super::process_table::{Change, ProcessTable, TaskEvent};
use super::session::unwind_user_stack;
use super::switches::monotonic_now;
use super::symbolize::Symbols;
use super::unwind::Unwinders;
use crate::plugin::{PluginError, PollStats, Session, WindowSink};
use crate::targets::{comm_matches, ProcFs, Selector};

/// Nanoseconds in a second, for the `cpu-clock` period.
const NANOS: u64 = 1_000_000_000;

/// What one pass over the records kept.
#[derive(Debug, Default, Clone, Copy)]
struct Kept {
    samples: u64,
    /// Samples of processes that exited before any rescan saw them.
    expected_as_sampled: u64,
}

pub(super) struct CpuWideSession {
    set: CpuWideSet,
    table: ProcessTable,
    selector: Selector,
    procfs: ProcFs,
    symbols: Symbols,
    unwinders: Unwinders,
    /// Reused for each sample's unwound stack.
    unwound: Vec<u64>,
    frequency_hz: u32,
    /// Records drained but not yet in order: those timed after the last
    /// drain began may still have earlier records on another CPU.
    pending: Vec<Timed>,
    /// The target's samples not yet symbolized, and their processes.
    batch: Vec<RawSample>,
    batch_pids: HashSet<u32>,
    thread_names: HashMap<u32, String>,
    /// The rescan's processes.
    pids: BTreeSet<u32>,
    /// Whether a sample of the target was kept since the last rescan.
    sampled_since_sync: bool,
    /// Counters of drains made outside a poll (a frequency change).
    carried: DrainStats,
}

impl CpuWideSession {
    pub(super) fn new(
        set: CpuWideSet,
        selector: Selector,
        procfs: ProcFs,
        frequency_hz: u32,
        debuginfod: Option<Arc<Debuginfod>>,
    ) -> Self {
        debug!(
            cpus = set.cpus(),
            kernel = set.samples_kernel(),
            stacks = set.copies_stacks(),
            "per-CPU native session open"
        );
        CpuWideSession {
            set,
            table: ProcessTable::new(),
            selector,
            symbols: Symbols::new(procfs.clone()).with_debuginfod(debuginfod),
            unwinders: Unwinders::new(procfs.clone()),
            unwound: Vec::new(),
            procfs,
            frequency_hz,
            pending: Vec::new(),
            batch: Vec::new(),
            batch_pids: HashSet::new(),
            thread_names: HashMap::new(),
            pids: BTreeSet::new(),
            sampled_since_sync: false,
            carried: DrainStats::default(),
        }
    }

    /// Whether the target designates `pid`, decided on first sight.
    fn matches(&mut self, pid: u32) -> bool {
        // The idle task and kernel threads are nobody's.
        if pid == 0 {
            return false;
        }
        let process = self.table.entry(pid);
        if let Some(matched) = process.matched {
            return matched;
        }
        let matched = match &self.selector {
            Selector::Name(name) if !process.comm.is_empty() => comm_matches(&process.comm, name),
            selector => self.procfs.designates(selector, pid),
        };
        process.matched = Some(matched);
        matched
    }

    /// Puts the drained records in time order and handles those up to
    /// `horizon`, keeping the target's samples.
    fn process_pending(&mut self, horizon: u64, sink: &mut WindowSink) -> Kept {
        self.pending.sort_by_key(|t| t.time);
        let ready = self.pending.partition_point(|t| t.time <= horizon);
        let mut kept = Kept::default();
        let records: Vec<Timed> = self.pending.drain(..ready).collect();
        for timed in records {
            match timed.record {
                CpuRecord::Sample(sample) => {
                    if self.matches(sample.pid) {
                        kept.samples += 1;
                        self.table.entry(sample.pid).sampled += 1;
                        self.batch_pids.insert(sample.pid);
                        self.batch.push(sample);
                    }
                }
                CpuRecord::Task(event) => self.apply(&event, sink),
            }
        }
        self.flush(sink);
        for (pid, process) in self.table.free_exited() {
            self.forget(pid);
            if !process.rescanned {
                kept.expected_as_sampled += process.sampled;
            }
        }
        kept
    }

    fn apply(&mut self, event: &TaskEvent, sink: &mut WindowSink) {
        let (pid, changes_code) = match event {
            TaskEvent::Comm { pid, exec, .. } => (*pid, *exec),
            TaskEvent::Fork { pid, ppid, .. } => (*pid, pid != ppid),
            TaskEvent::Mmap { pid, .. } => (*pid, true),
            TaskEvent::Exit { pid, .. } => (*pid, false),
        };
        // Samples taken before the change are symbolized as they were.
        if changes_code && self.batch_pids.contains(&pid) {
            self.flush(sink);
        }
        // A cgroup and a parent survive exec; a command line and a name
        // do not.
        let kept_across_exec = match (&self.selector, event) {
            (
                Selector::Cgroup(_) | Selector::Descendants(_),
                TaskEvent::Comm { exec: true, .. },
            ) => self.table.get(pid).and_then(|p| p.matched),
            _ => None,
        };
        match self.table.apply(event) {
            Change::AddressSpace(pid) => {
                self.forget(pid);
                if let Some(matched) = kept_across_exec {
                    self.table.entry(pid).matched = Some(matched);
                }
            }
            Change::Remapped(pid) => self.forget(pid),
            Change::Renamed(_) | Change::Nothing => {}
        }
    }

    /// Drops what was resolved for a pid that exited or runs another
    /// program now.
    fn forget(&mut self, pid: u32) {
        self.symbols.forget(pid);
        self.unwinders.forget(pid);
    }

    /// Unwinds and symbolizes the batch into the window.
    fn flush(&mut self, sink: &mut WindowSink) {
        if self.batch.is_empty() {
            return;
        }
        for &pid in &self.batch_pids {
            if let Some(maps) = self.table.get(pid).and_then(|p| p.maps.as_ref()) {
                self.symbols.set_recorded_maps(pid, maps);
                self.unwinders.set_recorded_maps(pid, maps);
            }
        }
        for s in &mut self.batch {
            unwind_user_stack(&mut self.unwinders, &mut self.unwound, s);
            // The copy is not needed any more.
            s.stack = Vec::new();
        }
        for s in &self.batch {
            if self.thread_names.contains_key(&s.tid) {
                continue;
            }
            if self.table.thread_name(s.tid).is_none() {
                // Read once: renames since come as COMM records.
                if let Some(name) = self.procfs.thread_comm(s.pid, s.tid) {
                    self.table.name_thread(s.pid, s.tid, name);
                }
            }
            if let Some(name) = self.table.thread_name(s.tid) {
                self.thread_names.insert(s.tid, name.to_owned());
            }
        }
        add_samples(&mut self.symbols, sink, &self.batch, &self.thread_names);
        self.batch.clear();
        self.batch_pids.clear();
        // Names as of this batch; the next one takes the table's again.
        self.thread_names.clear();
    }

    fn stats(&mut self, drained: DrainStats, kept: Kept) -> PollStats {
        let carried = std::mem::take(&mut self.carried);
        let throttled_ns = drained.throttled_ns + carried.throttled_ns;
        // Lost and throttled records are counted over every process on the
        // CPU, not only the target's: an upper bound of the target's loss.
        PollStats {
            samples: kept.samples,
            expected_as_sampled: kept.expected_as_sampled,
            lost: drained.lost + carried.lost,
            throttled: throttled_ns.saturating_mul(u64::from(self.frequency_hz)) / NANOS,
        }
    }

    fn drain_and_process(&mut self, horizon: u64, sink: &mut WindowSink) -> PollStats {
        let drained = self.set.drain(&mut self.pending);
        if drained.malformed > 0 {
            debug!(
                malformed = drained.malformed,
                "skipped malformed perf records"
            );
        }
        let kept = self.process_pending(horizon, sink);
        self.sampled_since_sync |= kept.samples > 0;
        self.stats(drained, kept)
    }
}

impl Session for CpuWideSession {
    fn event(&self) -> EventKind {
        EventKind::CpuClock
    }

    fn pids(&self) -> Vec<u32> {
        self.pids.iter().copied().collect()
    }

    fn window_period(&mut self) -> u64 {
        NANOS / u64::from(self.frequency_hz.max(1))
    }

    fn poll(&mut self, sink: &mut WindowSink) -> Result<PollStats, PluginError> {
        // Every record timed before now is in some CPU's buffer already.
        let horizon = monotonic_now();
        Ok(self.drain_and_process(horizon, sink))
    }

    fn finish(&mut self, sink: &mut WindowSink) -> Result<PollStats, PluginError> {
        let mut stats = self.drain_and_process(u64::MAX, sink);
        // The target's processes still running that no rescan saw yet.
        stats.expected_as_sampled += self
            .table
            .iter()
            .filter(|(_, p)| p.matched == Some(true) && !p.rescanned)
            .map(|(_, p)| p.sampled)
            .sum::<u64>();
        Ok(stats)
    }

    fn set_frequency(&mut self, frequency_hz: u32) {
        let drained = self.set.set_frequency(frequency_hz, &mut self.pending);
        self.carried.lost += drained.lost;
        self.carried.throttled_ns += drained.throttled_ns;
        self.frequency_hz = frequency_hz;
    }

    fn set_paused(&mut self, paused: bool) {
        self.set.set_paused(paused);
    }

    fn sync_targets(&mut self, pids: &[u32]) {
        for &pid in pids {
            let process = self.table.entry(pid);
            process.matched = Some(true);
            process.rescanned = true;
        }
        self.pids = pids.iter().copied().collect();
        self.sampled_since_sync = false;
    }

    fn follows_cpu_time(&self) -> bool {
        true
    }

    fn sees_new_processes(&self) -> bool {
        true
    }

    fn sampled_target_lately(&self) -> bool {
        self.sampled_since_sync
    }
}
