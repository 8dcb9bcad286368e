//! `perf_event_open` through perf-event2's safe API: one sampling event per
//! thread of the target, each with its own ring buffer, drained by polling.
//!
//! Why per thread and not per CPU: a per-CPU event for one process needs
//! cgroup or system-wide rights and sees every process; a per-thread event
//! only needs ptrace-level access to the target. Threads started after the
//! profile starts are picked up by the caller re-scanning `/proc/PID/task`.
//!
//! Each sample also carries the user registers and a copy of the top of
//! the user stack (x86-64), for the DWARF unwinder in `unwind.rs`; a thread
//! whose event cannot be opened that way (no stack dumps on this kernel,
//! or the bigger buffer refused) is sampled with the call chain alone.
//!
//! Why polling instead of `poll(2)` on the fds: waiting on many fds needs
//! `unsafe` libc calls, while draining every buffer every few tens of
//! milliseconds is cheap and bounded by the buffer size chosen from the
//! sampling frequency.

use std::collections::HashMap;
use std::io;

use odp_core::EventKind;
use perf_event::data::{Record as PerfRecord, SampleRegsAbi};
use perf_event::events::{Hardware, Software};
use perf_event::{Builder, SampleFlag, Sampler};
use tracing::{debug, warn};

/// Call chain context markers (`enum perf_callchain_context`): any value at
/// or above `PERF_CONTEXT_MAX` switches context instead of being an address.
const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
/// Start of the x86-64 kernel half, used only for chains without markers.
const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;

/// How much ring buffer one sample takes at most on average (header, tid,
/// time, period and a deep call chain), to size buffers from the frequency.
const BYTES_PER_SAMPLE: usize = 512;
const MIN_BUFFER: usize = 16 << 10;
const MAX_BUFFER: usize = 256 << 10;

/// Bytes of user stack copied per sample. The kernel reserves all of it in
/// every record whatever the stack's depth, so it is the main cost of a
/// sample; 16 KiB holds the frames of all but very deep (or
/// stack-array-heavy) call chains, and the unwinder stops where the copy
/// ends, keeping the frames found so far.
pub const STACK_BYTES: u32 = 16 << 10;
/// With stack copies a sample is mostly the copy; at 999 Hz a 50 ms drain
/// interval needs about 900 KiB.
const MAX_STACK_BUFFER: usize = 1 << 20;
/// Whether stack copies are requested: the unwinder knows x86-64 only.
const STACK_COPIES: bool = cfg!(target_arch = "x86_64");
/// `PERF_REG_X86_BP`, `_SP` and `_IP`: the registers framehop needs.
const REG_BP: u32 = 6;
const REG_SP: u32 = 7;
const REG_IP: u32 = 8;
pub(super) const USER_REGS_MASK: u64 = 1 << REG_BP | 1 << REG_SP | 1 << REG_IP;

/// The user registers of a sample, as DWARF unwinding starts from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRegs {
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
}

/// One sample, addresses leaf first as the kernel gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSample {
    pub pid: u32,
    pub tid: u32,
    pub kernel: Vec<u64>,
    pub user: Vec<u64>,
    /// The user registers, when the event records them and the sample
    /// interrupted a thread with a user context.
    pub regs: Option<UserRegs>,
    /// The user stack from `regs.sp` up (empty without a copy).
    pub stack: Vec<u8>,
    /// The samples this one stands for: 1 for a CPU sample, the length of
    /// the wait in samples of the profile's period for an off-CPU one.
    pub weight: u64,
    /// Why the thread was off CPU, for off-CPU samples.
    pub wait: Option<WaitState>,
}

impl Default for RawSample {
    fn default() -> Self {
        RawSample {
            pid: 0,
            tid: 0,
            kernel: Vec::new(),
            user: Vec::new(),
            regs: None,
            stack: Vec::new(),
            weight: 1,
            wait: None,
        }
    }
}

/// The state a thread left the CPU in (`prev_state` of `sched_switch`),
/// shown as the leaf frame of its off-CPU stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaitState {
    /// Runnable but switched out for another thread (`R`): waiting for a
    /// CPU, not for an event.
    Preempted,
    /// Interruptible sleep (`S`): a lock, a condition, a read, a sleep.
    Sleeping,
    /// Uninterruptible sleep (`D`): usually disk I/O or a kernel lock.
    Uninterruptible,
    /// Stopped, traced, or a state this agent does not name.
    Other,
}

impl WaitState {
    /// From the `prev_state` field of `sched:sched_switch`: the kernel
    /// reports `TASK_RUNNING` as 0 and flags the preempted case with a bit
    /// above the state bits.
    pub fn from_prev_state(state: u64) -> Self {
        match state & 0xff {
            0 => WaitState::Preempted,
            s if s & 0x1 != 0 => WaitState::Sleeping,
            s if s & 0x2 != 0 => WaitState::Uninterruptible,
            _ => WaitState::Other,
        }
    }

    /// The leaf frame's name.
    pub fn frame_name(self) -> &'static str {
        match self {
            WaitState::Preempted => "[preempted]",
            WaitState::Sleeping => "[sleeping]",
            WaitState::Uninterruptible => "[uninterruptible]",
            WaitState::Other => "[stopped or other]",
        }
    }
}

/// Picks ip, sp and bp out of a sample's registers, which the kernel
/// writes in the order of their bits in the mask.
pub fn user_regs(mask: u64, values: &[u64]) -> Option<UserRegs> {
    let value = |reg: u32| {
        if mask & (1 << reg) == 0 {
            return None;
        }
        let rank = (mask & ((1 << reg) - 1)).count_ones() as usize;
        values.get(rank).copied()
    };
    Some(UserRegs {
        ip: value(REG_IP)?,
        sp: value(REG_SP)?,
        bp: value(REG_BP)?,
    })
}

/// Splits a kernel call chain into its kernel and user parts, dropping
/// context markers and guest or hypervisor parts.
pub fn split_callchain(chain: &[u64], kernel: &mut Vec<u64>, user: &mut Vec<u64>) {
    #[derive(Clone, Copy)]
    enum Ctx {
        Unknown,
        Kernel,
        User,
        Other,
    }
    let mut ctx = Ctx::Unknown;
    for &ip in chain {
        if ip >= PERF_CONTEXT_MAX {
            ctx = match ip {
                PERF_CONTEXT_KERNEL => Ctx::Kernel,
                PERF_CONTEXT_USER => Ctx::User,
                _ => Ctx::Other,
            };
            continue;
        }
        match ctx {
            Ctx::Kernel => kernel.push(ip),
            Ctx::User => user.push(ip),
            Ctx::Unknown if ip >= KERNEL_HALF => kernel.push(ip),
            Ctx::Unknown => user.push(ip),
            Ctx::Other => {}
        }
    }
}

/// The stack, registers and stack copy of a kernel sample record.
pub(super) fn raw_sample(sample: &perf_event::data::Sample<'_>, pid: u32) -> RawSample {
    let mut raw = RawSample {
        pid: sample.pid().unwrap_or(pid),
        tid: sample.tid().unwrap_or_default(),
        ..RawSample::default()
    };
    if let Some(chain) = sample.callchain() {
        split_callchain(chain, &mut raw.kernel, &mut raw.user);
    }
    // ABI "none" means no user context (a kernel thread).
    raw.regs = sample
        .regs_user()
        .filter(|r| r.abi != SampleRegsAbi::NONE)
        .and_then(|r| user_regs(r.mask, &r.regs));
    if let Some(stack) = sample.stack_user() {
        raw.stack.extend_from_slice(stack);
    }
    raw
}

/// Ring buffer bytes for one thread: about 100 ms of samples, so a drain
/// every 50 ms has room to spare. With stack copies the floor is room for
/// a few samples: a record bigger than the buffer would never fit.
pub fn buffer_bytes(frequency_hz: u32, stack_copies: bool) -> usize {
    let (per_sample, min, max) = if stack_copies {
        let per_sample = BYTES_PER_SAMPLE + STACK_BYTES as usize;
        (per_sample, 4 * per_sample, MAX_STACK_BUFFER)
    } else {
        (BYTES_PER_SAMPLE, MIN_BUFFER, MAX_BUFFER)
    };
    let want = (frequency_hz as usize).saturating_mul(per_sample) / 10;
    want.clamp(min, max).next_power_of_two()
}

/// What `perf_event_open` is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventChoice {
    pub event: EventKind,
    /// Whether kernel frames are sampled (needs perf_event_paranoid <= 1 or
    /// CAP_PERFMON).
    pub kernel: bool,
}

/// Why no sampling event could be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("perf_event_open denied for tid {tid} ({source}); run as root, grant CAP_PERFMON or set kernel.perf_event_paranoid <= 1")]
    Denied { tid: u32, source: io::Error },
    #[error("tid {tid} no longer exists")]
    Gone { tid: u32 },
    #[error("perf_event_open failed for tid {tid}: cycles: {cycles}; cpu-clock: {cpu_clock}")]
    Unsupported {
        tid: u32,
        cycles: io::Error,
        cpu_clock: io::Error,
    },
    #[error("perf_event_open failed for tid {tid} with {event}: {source}")]
    Other {
        tid: u32,
        event: EventKind,
        source: io::Error,
    },
}

/// Opens one thread's event, with stack copies when `stacks` asks for them
/// and the kernel grants them, else with the call chain alone.
fn open(choice: EventChoice, tid: u32, frequency_hz: u32, stacks: bool) -> io::Result<Sampler> {
    if stacks && STACK_COPIES {
        match open_with(choice, tid, frequency_hz, true) {
            Ok(sampler) => return Ok(sampler),
            Err(e) if is_gone(&e) => return Err(e),
            Err(e) => debug!(tid, error = %e, "no user stack copies, frame pointers only"),
        }
    }
    open_with(choice, tid, frequency_hz, false)
}

fn open_with(
    choice: EventChoice,
    tid: u32,
    frequency_hz: u32,
    stacks: bool,
) -> io::Result<Sampler> {
    let mut builder = match choice.event {
        EventKind::Cycles => Builder::new(Hardware::CPU_CYCLES),
        _ => Builder::new(Software::CPU_CLOCK),
    };
    let pid = i32::try_from(tid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    let mut flags = SampleFlag::CALLCHAIN | SampleFlag::TID | SampleFlag::TIME | SampleFlag::PERIOD;
    if stacks {
        flags |= SampleFlag::REGS_USER | SampleFlag::STACK_USER;
        builder
            .sample_regs_user(USER_REGS_MASK)
            .sample_stack_user(STACK_BYTES);
    }
    builder
        .observe_pid(pid)
        .any_cpu()
        .sample_frequency(u64::from(frequency_hz))
        .sample(flags)
        .exclude_kernel(!choice.kernel)
        .exclude_hv(true)
        .enabled(false);
    let mut sampler = builder
        .build()?
        .sampled(buffer_bytes(frequency_hz, stacks))?;
    // Enabled only once the buffer is mapped so no early sample is dropped.
    sampler.enable()?;
    Ok(sampler)
}

fn is_denied(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES))
}

fn is_gone(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ESRCH)
}

/// Opens the first event of a profile, choosing what the machine supports:
/// hardware cycles first (unless `cycles` is false: a wall profile needs
/// samples of time), the software CPU clock when there is no PMU, and
/// user-only call chains when kernel sampling is denied.
pub fn probe(
    tid: u32,
    frequency_hz: u32,
    stacks: bool,
    cycles: bool,
) -> Result<(EventChoice, Sampler), OpenError> {
    let mut last_denied = None;
    for kernel in [true, false] {
        let cycles_choice = EventChoice {
            event: EventKind::Cycles,
            kernel,
        };
        let cycles_err = if cycles {
            match open(cycles_choice, tid, frequency_hz, stacks) {
                Ok(sampler) => return Ok((cycles_choice, sampler)),
                Err(e) if is_gone(&e) => return Err(OpenError::Gone { tid }),
                Err(e) => e,
            }
        } else {
            io::Error::new(io::ErrorKind::Unsupported, "not asked for")
        };
        debug!(tid, kernel, error = %cycles_err, "cycles event unavailable, trying cpu-clock");
        let clock = EventChoice {
            event: EventKind::CpuClock,
            kernel,
        };
        match open(clock, tid, frequency_hz, stacks) {
            Ok(sampler) => return Ok((clock, sampler)),
            Err(e) if is_gone(&e) => return Err(OpenError::Gone { tid }),
            Err(e) if is_denied(&e) => {
                if kernel {
                    warn!(tid, error = %e, "kernel sampling denied, retrying with user frames only");
                }
                last_denied = Some(e);
            }
            Err(cpu_clock) => {
                return Err(OpenError::Unsupported {
                    tid,
                    cycles: cycles_err,
                    cpu_clock,
                })
            }
        }
    }
    Err(OpenError::Denied {
        tid,
        source: last_denied.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EACCES)),
    })
}

struct ThreadEvent {
    pid: u32,
    sampler: Sampler,
    /// When the kernel throttled the event (`PERF_RECORD_THROTTLE`'s
    /// time), until it lets it go again.
    throttled_at: Option<u64>,
}

/// Counters of one drain.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DrainStats {
    pub samples: u64,
    /// Samples the kernel dropped because a buffer was full.
    pub lost: u64,
    /// Nanoseconds the kernel held events back for interrupting too often
    /// (throttle to unthrottle), summed over threads.
    pub throttled_ns: u64,
    /// Records that failed to parse (skipped).
    pub malformed: u64,
}

/// The events of one profile, one per sampled thread, all of the same kind.
pub struct PerfSet {
    choice: EventChoice,
    /// Whether user stack copies are asked for.
    stacks: bool,
    frequency_hz: u32,
    /// Whether sampling is switched off (duty cycle); new threads are
    /// attached switched off too.
    paused: bool,
    threads: HashMap<u32, ThreadEvent>,
    period_sum: u64,
    period_count: u64,
}

impl PerfSet {
    /// Opens the first thread, which decides the event for the whole set;
    /// `stacks` asks for user stack copies (for DWARF unwinding), `cycles`
    /// lets the set count CPU cycles where a PMU exists.
    pub fn new(
        pid: u32,
        tid: u32,
        frequency_hz: u32,
        stacks: bool,
        cycles: bool,
    ) -> Result<Self, OpenError> {
        let (choice, sampler) = probe(tid, frequency_hz, stacks, cycles)?;
        let mut threads = HashMap::new();
        threads.insert(
            tid,
            ThreadEvent {
                pid,
                sampler,
                throttled_at: None,
            },
        );
        Ok(PerfSet {
            choice,
            stacks,
            frequency_hz,
            paused: false,
            threads,
            period_sum: 0,
            period_count: 0,
        })
    }

    pub fn choice(&self) -> EventChoice {
        self.choice
    }

    pub fn is_attached(&self, tid: u32) -> bool {
        self.threads.contains_key(&tid)
    }

    pub fn len(&self) -> usize {
        self.threads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// The attached thread ids with their process.
    pub fn attached(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.threads.iter().map(|(&tid, t)| (t.pid, tid))
    }

    /// Attaches one more thread with the set's event.
    pub fn attach(&mut self, pid: u32, tid: u32) -> Result<(), OpenError> {
        if self.is_attached(tid) {
            return Ok(());
        }
        let sampler = open(self.choice, tid, self.frequency_hz, self.stacks).map_err(|source| {
            if is_gone(&source) {
                OpenError::Gone { tid }
            } else if is_denied(&source) {
                OpenError::Denied { tid, source }
            } else {
                OpenError::Other {
                    tid,
                    event: self.choice.event,
                    source,
                }
            }
        })?;
        let mut event = ThreadEvent {
            pid,
            sampler,
            throttled_at: None,
        };
        if self.paused {
            if let Err(e) = event.sampler.disable() {
                debug!(tid, error = %e, "cannot pause a new thread's event");
            }
        }
        self.threads.insert(tid, event);
        Ok(())
    }

    pub fn frequency(&self) -> u32 {
        self.frequency_hz
    }

    /// Samples at a new frequency from now on. perf-event2 has no safe
    /// `PERF_EVENT_IOC_PERIOD`, so every thread's event is re-opened: drain
    /// first, what is still buffered is lost. A thread whose new event
    /// cannot be opened keeps its old one; the count of those is returned.
    pub fn set_frequency(&mut self, frequency_hz: u32) -> usize {
        if frequency_hz == self.frequency_hz {
            return 0;
        }
        self.frequency_hz = frequency_hz;
        let mut kept_old = 0;
        let mut gone = Vec::new();
        for (&tid, thread) in &mut self.threads {
            match open(self.choice, tid, frequency_hz, self.stacks) {
                Ok(mut sampler) => {
                    if self.paused {
                        let _ = sampler.disable();
                    }
                    thread.sampler = sampler;
                }
                Err(e) if is_gone(&e) => gone.push(tid),
                Err(e) => {
                    debug!(tid, error = %e, "cannot re-open event at the new frequency");
                    kept_old += 1;
                }
            }
        }
        for tid in gone {
            self.threads.remove(&tid);
        }
        self.period_sum = 0;
        self.period_count = 0;
        kept_old
    }

    /// Switches every thread's sampling off (`paused`) or back on.
    pub fn set_paused(&mut self, paused: bool) {
        if paused == self.paused {
            return;
        }
        self.paused = paused;
        for (tid, thread) in &mut self.threads {
            let done = if paused {
                thread.sampler.disable()
            } else {
                thread.sampler.enable()
            };
            if let Err(e) = done {
                debug!(tid, paused, error = %e, "cannot switch a thread's event");
            }
        }
    }

    /// Closes a thread's event. Drain first: what is still buffered is lost.
    pub fn detach(&mut self, tid: u32) {
        self.threads.remove(&tid);
    }

    /// Moves every buffered sample into `out`.
    pub fn drain(&mut self, out: &mut Vec<RawSample>) -> DrainStats {
        let mut stats = DrainStats::default();
        for thread in self.threads.values_mut() {
            while let Some(record) = thread.sampler.next_record() {
                match record.parse_record() {
                    Ok(PerfRecord::Sample(sample)) => {
                        let raw = raw_sample(&sample, thread.pid);
                        if let Some(period) = sample.period() {
                            self.period_sum = self.period_sum.saturating_add(period);
                            self.period_count += 1;
                        }
                        stats.samples += 1;
                        out.push(raw);
                    }
                    Ok(PerfRecord::Lost(lost)) => stats.lost += lost.lost,
                    Ok(PerfRecord::Throttle(at)) => thread.throttled_at = Some(at.time),
                    Ok(PerfRecord::Unthrottle(at)) => {
                        if let Some(since) = thread.throttled_at.take() {
                            stats.throttled_ns += at.time.saturating_sub(since);
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        debug!(pid = thread.pid, error = %e, "skipping malformed perf record");
                        stats.malformed += 1;
                    }
                }
            }
        }
        stats
    }

    /// The mean sampling period since the last call, in event units (cycles
    /// or nanoseconds), or 0 without samples.
    pub fn take_mean_period(&mut self) -> u64 {
        let mean = self.period_sum.checked_div(self.period_count).unwrap_or(0);
        self.period_sum = 0;
        self.period_count = 0;
        mean
    }
}

#[cfg(test)]
mod tests;
