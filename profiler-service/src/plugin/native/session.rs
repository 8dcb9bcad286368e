//! A running native profile: its CPU events, its off-CPU events, or both
//! (see [`Mode`]), over the threads of the target's processes.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use odp_core::EventKind;
use tracing::{debug, info, warn};

use super::debuginfod::Debuginfod;
use super::perf::{OpenError, PerfSet, RawSample};
use super::switches::{monotonic_now, SwitchSet, Wait};
use super::symbolize::Symbols;
use super::{add_samples, blocked, unwind, Mode};
use crate::plugin::waits::DurationSampler;
use crate::plugin::{PluginError, PollStats, Session, WaitSampling, WindowSink};
use crate::targets::ProcFs;

/// Nanoseconds in a second, for the `cpu-clock` period.
const NANOS: u64 = 1_000_000_000;
/// How often the off-CPU sub-sampling period is re-chosen.
const ADAPT_EVERY: Duration = Duration::from_secs(1);

pub(super) struct NativeSession {
    mode: Mode,
    cpu: Option<PerfSet>,
    switches: Option<SwitchSet>,
    /// Off-CPU time as samples of the profile's period.
    waits: DurationSampler,
    last_adapt: Instant,
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
    ended_waits: Vec<Wait>,
}

impl NativeSession {
    pub(super) fn new(
        mode: Mode,
        cpu: Option<PerfSet>,
        switches: Option<SwitchSet>,
        procfs: ProcFs,
        frequency_hz: u32,
        debuginfod: Option<Arc<Debuginfod>>,
    ) -> Self {
        NativeSession {
            mode,
            cpu,
            switches,
            waits: DurationSampler::seeded(frequency_hz),
            last_adapt: Instant::now(),
            symbols: Symbols::new(procfs.clone()).with_debuginfod(debuginfod),
            unwinders: unwind::Unwinders::new(procfs.clone()),
            unwound: Vec::new(),
            procfs,
            frequency_hz,
            pids: BTreeSet::new(),
            thread_names: HashMap::new(),
            refused: HashSet::new(),
            raw: Vec::new(),
            ended_waits: Vec::new(),
        }
    }

    /// Fails when no thread of `pids` could be traced off CPU, the first
    /// refusal saying why.
    pub(super) fn check_attached(&mut self, pids: &[u32]) -> Result<(), PluginError> {
        let Some(switches) = &mut self.switches else {
            debug!(
                threads = self.cpu.as_ref().map_or(0, PerfSet::len),
                "native session open"
            );
            return Ok(());
        };
        if !switches.is_empty() {
            debug!(mode = ?self.mode, threads = switches.len(), "native session open");
            return Ok(());
        }
        // Attach one thread again to learn why none could be.
        for &pid in pids {
            for tid in self.procfs.threads(pid).unwrap_or_default() {
                match switches.attach(pid, tid) {
                    Ok(()) => return Ok(()),
                    Err(OpenError::Gone { .. }) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Err(PluginError::NothingAttached(pids.to_vec()))
    }

    fn drain_cpu(&mut self, raw: &mut Vec<RawSample>, stats: &mut PollStats) {
        let Some(cpu) = &mut self.cpu else {
            return;
        };
        let drained = cpu.drain(raw);
        if drained.malformed > 0 {
            debug!(
                malformed = drained.malformed,
                "skipped malformed perf records"
            );
        }
        for s in raw.iter_mut() {
            unwind_user_stack(&mut self.unwinders, &mut self.unwound, s);
        }
        stats.samples += drained.samples;
        stats.lost += drained.lost;
        stats.throttled += drained
            .throttled_ns
            .saturating_mul(u64::from(self.frequency_hz))
            / NANOS;
    }

    /// Adds the waits that ended (or went on) since the last poll, each as
    /// samples of the period, weighted by the sub-sampling.
    fn drain_switches(&mut self, raw: &mut Vec<RawSample>, stats: &mut PollStats) {
        let Some(switches) = &mut self.switches else {
            return;
        };
        let (unwinders, unwound) = (&mut self.unwinders, &mut self.unwound);
        let mut waits = std::mem::take(&mut self.ended_waits);
        let drained = switches.drain(
            monotonic_now(),
            &mut |s| unwind_user_stack(unwinders, unwound, s),
            &mut waits,
        );
        for wait in waits.drain(..) {
            let weight = self.waits.samples(wait.nanos.saturating_mul(wait.weight));
            if weight > 0 {
                raw.push(RawSample {
                    weight,
                    ..wait.sample
                });
            }
        }
        self.ended_waits = waits;
        stats.samples += drained.samples;
        stats.lost += drained.lost;
        let elapsed = self.last_adapt.elapsed();
        if elapsed >= ADAPT_EVERY {
            self.last_adapt = Instant::now();
            if let Some(every) = switches.adapt(elapsed) {
                info!(
                    sampled_one_in = every,
                    "off-CPU: sampling 1 switch in {every} at this switch rate"
                );
            }
        }
    }
}

/// Replaces a sample's frame-pointer user chain by the DWARF-unwound one,
/// unless that found fewer frames (a truncated stack copy, or JIT code
/// where frame pointers are all there is).
pub(super) fn unwind_user_stack(
    unwinders: &mut unwind::Unwinders,
    unwound: &mut Vec<u64>,
    s: &mut RawSample,
) {
    let Some(regs) = s.regs.filter(|_| !s.stack.is_empty()) else {
        return;
    };
    unwinders.unwind(s.pid, regs, &s.stack, unwound);
    if unwound.len() >= s.user.len() {
        std::mem::swap(&mut s.user, unwound);
    }
}

/// Unwinds a wait found at attach (see [`blocked`]), whose frame pointer
/// is unknown: the longest walk over the candidates.
fn unwind_blocked(unwinders: &mut unwind::Unwinders, unwound: &mut Vec<u64>, s: &mut RawSample) {
    let Some(regs) = s.regs else {
        return;
    };
    let mut best = Vec::new();
    let candidates = blocked::frame_pointer_candidates(&s.stack, regs.sp);
    for bp in std::iter::once(0).chain(candidates) {
        let regs = super::perf::UserRegs { bp, ..regs };
        unwinders.unwind(s.pid, regs, &s.stack, unwound);
        if unwound.len() > best.len() {
            std::mem::swap(&mut best, unwound);
        }
    }
    s.user = best;
}

impl Session for NativeSession {
    fn event(&self) -> EventKind {
        match (self.mode, &self.cpu) {
            (Mode::Cpu, Some(cpu)) => cpu.choice().event,
            (mode, _) => mode.event(),
        }
    }

    fn pids(&self) -> Vec<u32> {
        self.pids.iter().copied().collect()
    }

    fn follows_cpu_time(&self) -> bool {
        self.event() == EventKind::CpuClock
    }

    fn window_period(&mut self) -> u64 {
        let mean = self.cpu.as_mut().map_or(0, PerfSet::take_mean_period);
        match self.event() {
            // Cycles per sample vary with the clock speed; the kernel's own
            // mean over the window is the honest figure.
            EventKind::Cycles => mean,
            // The CPU clock counts nanoseconds: at F Hz a sample is 1/F s,
            // and waits are counted in samples of that period.
            _ => NANOS / u64::from(self.frequency_hz.max(1)),
        }
    }

    fn poll(&mut self, sink: &mut WindowSink) -> Result<PollStats, PluginError> {
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        let mut stats = PollStats::default();
        self.drain_cpu(&mut raw, &mut stats);
        self.drain_switches(&mut raw, &mut stats);
        add_samples(&mut self.symbols, sink, &raw, &self.thread_names);
        self.raw = raw;
        Ok(stats)
    }

    fn take_wait_sampling(&mut self) -> Option<WaitSampling> {
        let switches = self.switches.as_mut()?;
        Some(WaitSampling {
            switches: switches.take_switches(),
            sampled_one_in: switches.every(),
        })
    }

    fn set_frequency(&mut self, frequency_hz: u32) {
        if let Some(cpu) = &mut self.cpu {
            let kept_old = cpu.set_frequency(frequency_hz);
            if kept_old > 0 {
                warn!(
                    kept_old,
                    frequency_hz, "some threads stay at the old frequency"
                );
            }
        }
        if let Some(switches) = &mut self.switches {
            switches.set_frequency(frequency_hz);
        }
        self.waits.set_frequency(frequency_hz);
        self.frequency_hz = frequency_hz;
    }

    fn set_paused(&mut self, paused: bool) {
        if let Some(cpu) = &mut self.cpu {
            cpu.set_paused(paused);
        }
        if let Some(switches) = &mut self.switches {
            switches.set_paused(paused);
        }
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
                if !self.refused.contains(&tid) {
                    self.attach(pid, tid);
                }
            }
        }
        self.detach_gone(&live_tids);
        self.refused.retain(|tid| live_tids.contains(tid));
        self.pids = wanted;
    }
}

impl NativeSession {
    /// Opens a new thread's events; a thread refused is not retried, since
    /// the same error would come every rescan.
    fn attach(&mut self, pid: u32, tid: u32) {
        let cpu = self.cpu.as_mut().map(|cpu| cpu.attach(pid, tid));
        let switches = self.switches.as_mut().map(|s| {
            let new = !s.is_attached(tid);
            let attached = s.attach(pid, tid);
            if new && attached.is_ok() {
                if let Some(mut wait) = blocked::wait_under_way(&self.procfs, pid, tid) {
                    unwind_blocked(&mut self.unwinders, &mut self.unwound, &mut wait);
                    wait.stack = Vec::new();
                    wait.regs = None;
                    s.seed_wait(tid, wait, monotonic_now());
                }
            }
            attached
        });
        for result in [cpu, switches].into_iter().flatten() {
            match result {
                Ok(()) | Err(OpenError::Gone { .. }) => {}
                Err(e) => {
                    warn!(pid, tid, error = %e, "cannot sample thread");
                    self.refused.insert(tid);
                }
            }
        }
    }

    fn detach_gone(&mut self, live_tids: &BTreeSet<u32>) {
        let mut stale: Vec<u32> = Vec::new();
        if let Some(cpu) = &self.cpu {
            stale.extend(cpu.attached().map(|(_, tid)| tid));
        }
        if let Some(switches) = &self.switches {
            stale.extend(switches.attached().map(|(_, tid)| tid));
        }
        stale.retain(|tid| !live_tids.contains(tid));
        for tid in stale {
            if let Some(cpu) = &mut self.cpu {
                cpu.detach(tid);
            }
            if let Some(switches) = &mut self.switches {
                switches.detach(tid);
            }
            self.thread_names.remove(&tid);
        }
    }
}
