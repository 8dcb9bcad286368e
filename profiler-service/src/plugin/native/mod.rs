//! The `native` plugin: on-CPU sampling of any process through
//! `perf_event_open`, symbolized from ELF symbol tables (debug files
//! included, local or from debuginfod servers), kallsyms and JIT perf
//! maps.
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
//!
//! CPU profiles of a process-name, command-line or cgroup target, and of a
//! pid with its children (`include_children`), sample per CPU instead
//! ([`cpu_wide`]), so that processes shorter than a rescan are caught from
//! their first sample; where per-CPU events cannot be
//! opened (no system-wide rights), or with [`NativePlugin::with_per_cpu`]
//! off, they sample per thread as pid targets do. Per thread, a pid's
//! children and every new thread are attached by the rescan (once a
//! second) that finds them: one living less than that is missed, a longer
//! one loses up to its first second, and a child whose parent exited
//! (re-parented away) is no longer followed.

pub mod blocked;
pub mod cpu_wide;
mod cpu_wide_session;
pub mod debug_files;
pub mod debuginfod;
pub mod elf_symbols;
pub mod kallsyms;
pub mod module_symbols;
pub mod modules;
pub mod perf;
pub mod perfmap;
pub mod process_table;
mod session;
pub mod switches;
pub mod symbolize;
pub mod unwind;

use std::borrow::Borrow;
use std::collections::HashMap;
use std::sync::Arc;

use odp_core::{EventKind, Frame, Language};
use tracing::warn;

use self::cpu_wide::CpuWideSet;
use self::cpu_wide_session::CpuWideSession;
use self::debuginfod::Debuginfod;
use self::perf::{OpenError, PerfSet, RawSample};
use self::session::NativeSession;
use self::switches::{SchedSwitch, SwitchSet};
use self::symbolize::{Symbols, UNKNOWN};
use super::{OpenOptions, Plugin, PluginError, Session, WindowSink};
use crate::targets::{ProcFs, Selector};

/// What a native session measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// On-CPU samples: cycles where a PMU exists, else the CPU clock.
    Cpu,
    /// Time switched out, at the stack where each thread blocked
    /// ([`switches`]).
    OffCpu,
    /// Both, in one unit: CPU-clock samples plus off-CPU time as samples
    /// of the same period, so a thread's whole latency shows.
    Wall,
}

impl Mode {
    pub fn event(self) -> EventKind {
        match self {
            Mode::Cpu => EventKind::CpuClock,
            Mode::OffCpu => EventKind::OffCpu,
            Mode::Wall => EventKind::Wall,
        }
    }
}

#[derive(Debug, Clone)]
pub struct NativePlugin {
    procfs: ProcFs,
    /// Whether samples carry user stack copies for DWARF unwinding.
    user_stacks: bool,
    mode: Mode,
    /// Where debug files of stripped modules are fetched from, if
    /// anywhere; shared by the clones, so one agent fetches a file once.
    debuginfod: Option<Arc<Debuginfod>>,
    /// Whether CPU profiles of broad targets sample per CPU.
    per_cpu: bool,
}

impl NativePlugin {
    pub fn new(procfs: ProcFs) -> Self {
        NativePlugin {
            procfs,
            user_stacks: true,
            mode: Mode::Cpu,
            debuginfod: None,
            per_cpu: true,
        }
    }

    /// Whether CPU profiles of process-name, command-line and cgroup
    /// targets sample per CPU (on by default), catching short-lived
    /// processes; off, they sample the threads a rescan finds.
    pub fn with_per_cpu(mut self, on: bool) -> Self {
        self.per_cpu = on;
        self
    }

    /// Names stripped modules from debug files `client` fetches (none
    /// without a client).
    pub fn with_debuginfod(mut self, client: Option<Arc<Debuginfod>>) -> Self {
        self.debuginfod = client;
        self
    }

    /// Switches user stack copies (and so DWARF unwinding) on or off; off,
    /// user stacks are the kernel's frame-pointer call chains alone.
    pub fn with_user_stacks(mut self, on: bool) -> Self {
        self.user_stacks = on;
        self
    }

    /// The same plugin measuring `mode`.
    pub fn measuring(mut self, mode: Mode) -> Self {
        self.mode = mode;
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

    fn language(&self) -> Language {
        Language::Native
    }

    fn measures(&self) -> &'static [EventKind] {
        match self.mode {
            Mode::Cpu => &[EventKind::CpuClock, EventKind::Cycles],
            Mode::OffCpu => &[EventKind::OffCpu],
            Mode::Wall => &[EventKind::Wall],
        }
    }

    fn open(
        &self,
        pids: &[u32],
        frequency_hz: u32,
        options: &OpenOptions,
    ) -> Result<Box<dyn Session>, PluginError> {
        if let Some(session) = self.open_cpu_wide(pids, frequency_hz, options) {
            return Ok(session);
        }
        let cpu = match self.mode {
            Mode::OffCpu => None,
            Mode::Cpu | Mode::Wall => Some(self.open_cpu(pids, frequency_hz)?),
        };
        let switches = match self.mode {
            Mode::Cpu => None,
            Mode::OffCpu | Mode::Wall => {
                let tracepoint = SchedSwitch::find()
                    .map_err(|e| PluginError::Unsupported(format!("off-CPU profiles: {e}")))?;
                Some(SwitchSet::new(
                    tracepoint,
                    frequency_hz,
                    self.user_stacks,
                    options.min_wait,
                ))
            }
        };
        let mut session = NativeSession::new(
            self.mode,
            cpu,
            switches,
            self.procfs.clone(),
            frequency_hz,
            self.debuginfod.clone(),
        );
        session.sync_targets(pids);
        session.check_attached(pids)?;
        Ok(Box::new(session))
    }
}

impl NativePlugin {
    /// A per-CPU session, for a CPU profile of a broad target or of a pid
    /// with its children when per-CPU events can be opened; `None` means
    /// per thread (saying why, when per-CPU events were tried).
    fn open_cpu_wide(
        &self,
        pids: &[u32],
        frequency_hz: u32,
        options: &OpenOptions,
    ) -> Option<Box<dyn Session>> {
        if self.mode != Mode::Cpu || !self.per_cpu {
            return None;
        }
        let target = options.target.as_ref()?;
        let selector = match Selector::of_profile(target, options.include_children) {
            Ok(
                selector @ (Selector::Name(_)
                | Selector::Cmdline(_)
                | Selector::Cgroup(_)
                | Selector::Descendants(_)),
            ) => selector,
            _ => return None,
        };
        let set = match CpuWideSet::open(frequency_hz, self.user_stacks) {
            Ok(set) => set,
            Err(e) => {
                warn!(error = %e, "per-CPU sampling unavailable (it needs root, CAP_PERFMON or \
                    kernel.perf_event_paranoid <= 0): sampling the target's threads, \
                    which misses processes shorter than a rescan");
                return None;
            }
        };
        let mut session = CpuWideSession::new(
            set,
            selector,
            self.procfs.clone(),
            frequency_hz,
            self.debuginfod.clone(),
        );
        session.sync_targets(pids);
        Some(Box::new(session))
    }

    /// The CPU events' set, whose first thread decides the event for all.
    fn open_cpu(&self, pids: &[u32], frequency_hz: u32) -> Result<PerfSet, PluginError> {
        // A wall profile adds CPU samples to time off CPU: they must be time.
        let cycles = self.mode == Mode::Cpu;
        for &pid in pids {
            for tid in self.procfs.threads(pid).unwrap_or_default() {
                match PerfSet::new(pid, tid, frequency_hz, self.user_stacks, cycles) {
                    Ok(set) => return Ok(set),
                    Err(OpenError::Gone { .. }) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Err(PluginError::NothingAttached(pids.to_vec()))
    }
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
        if let Some(state) = s.wait {
            // Keyed in pid 0's space below any kernel address.
            let key = (0, state as u64 + 1);
            stack.push(sink.frame(key, || Frame::function(state.frame_name())));
        }
        sink.name_thread(s.tid, || thread_names.get(&s.tid).cloned());
        sink.add_stack(stack, s.tid, s.weight);
    }
}
