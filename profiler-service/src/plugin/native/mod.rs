//! The `native` plugin: on-CPU sampling of any process through
//! `perf_event_open`, symbolized from ELF symbol tables (debug files
//! included), kallsyms and JIT perf maps.
//!
//! User stacks are unwound with DWARF CFI (`.eh_frame`) from a copy of the
//! user stack taken with each sample (`PERF_SAMPLE_REGS_USER` +
//! `PERF_SAMPLE_STACK_USER`, [`unwind`]), so code built without frame
//! pointers keeps its callers. The kernel's frame-pointer call chain is
//! still taken: its kernel part is always used, and its user part whenever
//! it is longer than the unwound one or the sample has no stack copy (not
//! x86-64, or the kernel refused stack dumps). JIT code has no unwind
//! information and is walked with frame pointers.
//!
//! Cost: a sample now carries a 16 KiB stack copy (ring buffers grow to
//! match, 256 KiB per thread at 99 Hz). The agent's CPU per sample, measured
//! by the ignored test `measure_cost_per_sample` (tests/unwind.rs: 10 s of
//! tests/data/unwind.c at 99 Hz, debug build, shared 2-core VM, two runs
//! each): 196-234 us per sample (0.85-1.18 % of a core) with frame-pointer
//! chains alone, 222-228 us (0.98-1.17 %) with stack copies and unwinding;
//! the difference is within run-to-run noise, the polling and symbolizing
//! around each sample costing more than the copy and the unwind.

pub mod debug_files;
pub mod elf_symbols;
pub mod kallsyms;
pub mod module_symbols;
pub mod modules;
pub mod perf;
pub mod perfmap;
pub mod symbolize;
pub mod unwind;

use std::borrow::Borrow;
use std::collections::{BTreeSet, HashMap, HashSet};

use odp_core::{EventKind, Frame};
use tracing::{debug, warn};

use self::perf::{OpenError, PerfSet, RawSample};
use self::symbolize::{Symbols, UNKNOWN};
use super::{Plugin, PluginError, PollStats, Session, WindowSink};
use crate::targets::ProcFs;

/// Nanoseconds in a second, for the `cpu-clock` period.
const NANOS: u64 = 1_000_000_000;

#[derive(Debug, Clone)]
pub struct NativePlugin {
    procfs: ProcFs,
    /// Whether samples carry user stack copies for DWARF unwinding.
    user_stacks: bool,
}

impl NativePlugin {
    pub fn new(procfs: ProcFs) -> Self {
        NativePlugin {
            procfs,
            user_stacks: true,
        }
    }

    /// Switches user stack copies (and so DWARF unwinding) on or off; off,
    /// user stacks are the kernel's frame-pointer call chains alone.
    pub fn with_user_stacks(mut self, on: bool) -> Self {
        self.user_stacks = on;
        self
    }
}

impl Default for NativePlugin {
    fn default() -> Self {
        NativePlugin::new(ProcFs::default())
    }
}

impl Plugin for NativePlugin {
    fn name(&self) -> &'static str {
        "native"
    }

    fn open(&self, pids: &[u32], frequency_hz: u32) -> Result<Box<dyn Session>, PluginError> {
        // The first thread that still exists decides the event for all.
        let mut first = None;
        'probe: for &pid in pids {
            for tid in self.procfs.threads(pid).unwrap_or_default() {
                match PerfSet::new(pid, tid, frequency_hz, self.user_stacks) {
                    Ok(set) => {
                        first = Some(set);
                        break 'probe;
                    }
                    Err(OpenError::Gone { .. }) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        let perf = first.ok_or_else(|| PluginError::NothingAttached(pids.to_vec()))?;
        let mut session = NativeSession {
            perf,
            symbols: Symbols::new(self.procfs.clone()),
            unwinders: unwind::Unwinders::new(self.procfs.clone()),
            unwound: Vec::new(),
            procfs: self.procfs.clone(),
            frequency_hz,
            pids: BTreeSet::new(),
            thread_names: HashMap::new(),
            refused: HashSet::new(),
            raw: Vec::new(),
        };
        session.sync_targets(pids);
        debug!(
            event = %session.perf.choice().event,
            kernel = session.perf.choice().kernel,
            threads = session.perf.len(),
            "native session open"
        );
        Ok(Box::new(session))
    }
}

struct NativeSession {
    perf: PerfSet,
    symbols: Symbols,
    unwinders: unwind::Unwinders,
    /// Reused for each sample's unwound stack.
    unwound: Vec<u64>,
    procfs: ProcFs,
    frequency_hz: u32,
    pids: BTreeSet<u32>,
    thread_names: HashMap<u32, String>,
    /// Threads whose event could not be opened.
    refused: HashSet<u32>,
    /// Reused between polls to avoid reallocating.
    raw: Vec<RawSample>,
}

/// The address to symbolize for the `i`-th frame of a leaf-first chain:
/// every frame but the leaf holds a return address, which points after the
/// call and may already be in the next function; one byte back is inside
/// the call instruction.
fn lookup_addr(i: usize, addr: u64) -> u64 {
    if i == 0 {
        addr
    } else {
        addr.saturating_sub(1)
    }
}

/// Adds drained samples to the window: every new address symbolized once,
/// batched per process, then one stack of interned frames per sample.
/// Public so the aggregation bench times exactly this.
pub fn add_samples<S: Borrow<RawSample>>(
    symbols: &mut Symbols,
    sink: &mut WindowSink,
    samples: &[S],
    thread_names: &HashMap<u32, String>,
) {
    let mut user: HashMap<u32, Vec<u64>> = HashMap::new();
    let mut kernel = Vec::new();
    for s in samples.iter().map(Borrow::borrow) {
        let addrs = user.entry(s.pid).or_default();
        addrs.extend(s.user.iter().enumerate().map(|(i, &a)| lookup_addr(i, a)));
        kernel.extend(s.kernel.iter().enumerate().map(|(i, &a)| lookup_addr(i, a)));
    }
    for (pid, addrs) in &user {
        symbols.resolve_user(*pid, addrs);
    }
    symbols.resolve_kernel(&kernel);

    let symbols = &*symbols;
    for s in samples.iter().map(Borrow::borrow) {
        let mut stack = Vec::with_capacity(s.user.len() + s.kernel.len());
        for (i, &a) in s.user.iter().enumerate().rev() {
            let addr = lookup_addr(i, a);
            stack.push(sink.frame((s.pid, addr), || symbols.user_frame(s.pid, addr)));
        }
        for (i, &a) in s.kernel.iter().enumerate().rev() {
            let addr = lookup_addr(i, a);
            // pid 0 is the idle task, never a target: a free key space.
            stack.push(sink.frame((0, addr), || symbols.kernel_frame(addr)));
        }
        if stack.is_empty() {
            // No call chain at all; still counted, so shares stay true.
            stack.push(sink.frame((0, 0), || Frame::function(UNKNOWN)));
        }
        sink.name_thread(s.tid, || thread_names.get(&s.tid).cloned());
        sink.add_stack(stack, s.tid, 1);
    }
}

impl NativeSession {
    /// Replaces each sample's frame-pointer user chain by the DWARF-unwound
    /// one, unless that found fewer frames (a truncated stack copy, or JIT
    /// code where frame pointers are all there is).
    fn unwind_user_stacks(&mut self, raw: &mut [RawSample]) {
        for s in raw.iter_mut() {
            let Some(regs) = s.regs.filter(|_| !s.stack.is_empty()) else {
                continue;
            };
            self.unwinders
                .unwind(s.pid, regs, &s.stack, &mut self.unwound);
            if self.unwound.len() >= s.user.len() {
                std::mem::swap(&mut s.user, &mut self.unwound);
            }
        }
    }
}

impl Session for NativeSession {
    fn event(&self) -> EventKind {
        self.perf.choice().event
    }

    fn pids(&self) -> Vec<u32> {
        self.pids.iter().copied().collect()
    }

    fn window_period(&mut self) -> u64 {
        let mean = self.perf.take_mean_period();
        match self.event() {
            // The CPU clock counts nanoseconds: at F Hz a sample is 1/F s.
            EventKind::CpuClock => NANOS / u64::from(self.frequency_hz.max(1)),
            // Cycles per sample vary with the clock speed; the kernel's own
            // mean over the window is the honest figure.
            _ => mean,
        }
    }

    fn poll(&mut self, sink: &mut WindowSink) -> Result<PollStats, PluginError> {
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        let drained = self.perf.drain(&mut raw);
        if drained.malformed > 0 {
            debug!(
                malformed = drained.malformed,
                "skipped malformed perf records"
            );
        }

        self.unwind_user_stacks(&mut raw);

        add_samples(&mut self.symbols, sink, &raw, &self.thread_names);
        self.raw = raw;
        Ok(PollStats {
            samples: drained.samples,
            lost: drained.lost,
        })
    }

    fn set_frequency(&mut self, frequency_hz: u32) {
        let kept_old = self.perf.set_frequency(frequency_hz);
        if kept_old > 0 {
            warn!(
                kept_old,
                frequency_hz, "some threads stay at the old frequency"
            );
        }
        self.frequency_hz = frequency_hz;
    }

    fn set_paused(&mut self, paused: bool) {
        self.perf.set_paused(paused);
    }

    fn sync_targets(&mut self, pids: &[u32]) {
        let wanted: BTreeSet<u32> = pids.iter().copied().collect();
        for gone in self.pids.difference(&wanted) {
            self.symbols.forget(*gone);
            self.unwinders.forget(*gone);
        }
        let mut live_tids = BTreeSet::new();
        for &pid in &wanted {
            let Ok(tids) = self.procfs.threads(pid) else {
                continue;
            };
            for tid in tids {
                live_tids.insert(tid);
                // Names change after start (pthread_setname_np), so re-read.
                if let Some(name) = self.procfs.thread_comm(pid, tid) {
                    self.thread_names.insert(tid, name);
                }
                if self.refused.contains(&tid) {
                    continue;
                }
                match self.perf.attach(pid, tid) {
                    Ok(()) | Err(OpenError::Gone { .. }) => {}
                    Err(e) => {
                        // Not retried: the same error would come every rescan.
                        warn!(pid, tid, error = %e, "cannot sample thread");
                        self.refused.insert(tid);
                    }
                }
            }
        }
        let stale: Vec<u32> = self
            .perf
            .attached()
            .filter(|(_, tid)| !live_tids.contains(tid))
            .map(|(_, tid)| tid)
            .collect();
        for tid in stale {
            self.perf.detach(tid);
            self.thread_names.remove(&tid);
        }
        self.refused.retain(|tid| live_tids.contains(tid));
        self.pids = wanted;
    }
}
