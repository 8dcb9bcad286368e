//! Off-CPU time through the `sched:sched_switch` tracepoint.
//!
//! One event per thread of the target, like the CPU events of
//! [`super::perf`]: the tracepoint fires in the context of the thread
//! leaving the CPU, so a per-thread event samples exactly the target's
//! switch-outs, with the kernel and user call chain (and the user stack
//! copy for DWARF unwinding) where it blocked. The same event asks for
//! context-switch records (`PERF_RECORD_SWITCH`), whose switch-in record
//! ends the wait: its length is switch-in time less the sample's time, on
//! `CLOCK_MONOTONIC` so that a wait still under way at a poll is counted
//! up to the poll, and a thread blocked for a whole window shows in it.
//!
//! Cost: the kernel writes a sample (16 KiB with the stack copy) on every
//! sampled switch-out, and a 32-byte record on every switch. A target that
//! switches very often is sub-sampled: the tracepoint's sample period
//! keeps 1 switch-out in `every`, and each kept wait weighs `every` times
//! its length, which keeps the totals unbiased; the period is chosen so
//! that each thread yields about the profile's frequency in samples per
//! second, and reported with each window.
//!
//! A wait already under way when a thread is attached has no sample (its
//! switch-out came before the event existed): [`super::blocked`] reads its
//! stack from procfs instead, and it counts from the attach.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use perf_event::data::Record as PerfRecord;
use perf_event::events::Tracepoint;
use perf_event::{Builder, Clock, SampleFlag, Sampler};
use tracing::{debug, info};

use super::perf::{
    buffer_bytes, raw_sample, DrainStats, OpenError, RawSample, WaitState, STACK_BYTES,
    USER_REGS_MASK,
};

/// `PERF_RECORD_SWITCH`, and the `misc` bit of its switch-out records.
const PERF_RECORD_SWITCH: u32 = 14;
const PERF_RECORD_MISC_SWITCH_OUT: u16 = 1 << 13;
/// Where tracefs is found, newest first.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
/// Longest sub-sampling period: a thread switching a million times a
/// second still yields samples.
const MAX_EVERY: u64 = 1 << 16;

/// The `sched_switch` tracepoint: its id and where its record keeps
/// `prev_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedSwitch {
    pub id: u64,
    /// Byte offset and size of `prev_state` in the raw record.
    pub prev_state: Option<(usize, usize)>,
}

impl SchedSwitch {
    /// Reads the tracepoint from tracefs, mounting tracefs first when it is
    /// not (as perf does): reading its ids needs root anyway.
    pub fn find() -> io::Result<Self> {
        let dir = match TRACEFS.iter().map(Path::new).find(|d| has_events(d)) {
            Some(dir) => dir.to_path_buf(),
            None => mount_tracefs()?,
        };
        let event = dir.join("events/sched/sched_switch");
        let id = std::fs::read_to_string(event.join("id"))?
            .trim()
            .parse()
            .map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidData, format!("tracepoint id: {e}"))
            })?;
        let format = std::fs::read_to_string(event.join("format")).unwrap_or_default();
        Ok(SchedSwitch {
            id,
            prev_state: field(&format, "prev_state"),
        })
    }

    /// The state a raw `sched_switch` record says its thread left in.
    pub fn wait_state(&self, raw: Option<&[u8]>) -> WaitState {
        let value = self.prev_state.zip(raw).and_then(|((offset, size), raw)| {
            let bytes = raw.get(offset..offset + size)?;
            let mut buf = [0u8; 8];
            buf.get_mut(..size)?.copy_from_slice(bytes);
            Some(u64::from_ne_bytes(buf))
        });
        value.map_or(WaitState::Other, WaitState::from_prev_state)
    }
}

fn has_events(dir: &Path) -> bool {
    dir.join("events/sched/sched_switch/id").exists()
}

fn mount_tracefs() -> io::Result<PathBuf> {
    let dir = PathBuf::from(TRACEFS[0]);
    rustix::mount::mount(
        "nodev",
        &dir,
        "tracefs",
        rustix::mount::MountFlags::empty(),
        None,
    )
    .map_err(|e| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "tracefs is not mounted and cannot be mounted on {} ({e}); run as root",
                dir.display()
            ),
        )
    })?;
    info!(path = %dir.display(), "mounted tracefs for the sched_switch tracepoint");
    if has_events(&dir) {
        Ok(dir)
    } else {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            "this kernel has no sched:sched_switch tracepoint",
        ))
    }
}

/// Offset and size of `name` in a tracepoint's `format` file, from a line
/// like `field:long prev_state; offset:32; size:8; signed:1;`.
pub fn field(format: &str, name: &str) -> Option<(usize, usize)> {
    format.lines().find_map(|line| {
        let mut parts = line.trim().split(';').map(str::trim);
        let declaration = parts.next()?.strip_prefix("field:")?;
        if declaration.rsplit(' ').next()? != name {
            return None;
        }
        let mut value =
            |key: &str| -> Option<usize> { parts.next()?.strip_prefix(key)?.parse().ok() };
        Some((value("offset:")?, value("size:")?))
    })
}

/// The monotonic clock the events time their records with, in ns.
pub fn monotonic_now() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (now.tv_sec as u64).saturating_mul(1_000_000_000) + now.tv_nsec as u64
}

/// A sampled switch-out whose switch-in has not come yet.
struct Pending {
    sample: RawSample,
    /// When the thread left the CPU.
    started: u64,
    /// Up to when the wait has been counted already.
    counted_to: u64,
    /// The switch-outs it stands for: 1 in how many was sampled when it
    /// was (1 for a wait found at attach, which is certain).
    weight: u64,
}

struct ThreadSwitches {
    pid: u32,
    sampler: Sampler,
    pending: Option<Pending>,
}

/// A wait (or the part of one since the last poll) and how long it lasted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub sample: RawSample,
    pub nanos: u64,
    /// The waits it stands for (see [`SwitchSet::adapt`]): its length
    /// counts this many times.
    pub weight: u64,
}

/// The off-CPU events of one profile, one per thread.
pub struct SwitchSet {
    tracepoint: SchedSwitch,
    stacks: bool,
    /// Sample 1 switch-out in `every`.
    every: u64,
    /// Target samples per second and thread.
    frequency_hz: u32,
    min_wait: u64,
    paused: bool,
    threads: HashMap<u32, ThreadSwitches>,
    /// Switch-outs seen (sampled or not) since the last [`Self::adapt`].
    switch_outs: u64,
    /// Switch-outs since the last [`Self::take_switches`], for the reports.
    window_switch_outs: u64,
}

impl SwitchSet {
    /// An empty set; `stacks` asks for user stack copies, `min_wait` drops
    /// waits shorter than it.
    pub fn new(
        tracepoint: SchedSwitch,
        frequency_hz: u32,
        stacks: bool,
        min_wait: Option<Duration>,
    ) -> Self {
        SwitchSet {
            tracepoint,
            stacks,
            every: 1,
            frequency_hz: frequency_hz.max(1),
            min_wait: min_wait.map_or(0, |d| d.as_nanos() as u64),
            paused: false,
            threads: HashMap::new(),
            switch_outs: 0,
            window_switch_outs: 0,
        }
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

    pub fn attached(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.threads.iter().map(|(&tid, t)| (t.pid, tid))
    }

    /// 1 in how many switch-outs is sampled.
    pub fn every(&self) -> u64 {
        self.every
    }

    /// Switch-outs of the target since the last call.
    pub fn take_switches(&mut self) -> u64 {
        std::mem::take(&mut self.window_switch_outs)
    }

    fn open(&self, tid: u32) -> Result<Sampler, OpenError> {
        let first = open(
            &self.tracepoint,
            tid,
            self.every,
            self.frequency_hz,
            self.stacks,
        );
        let sampler = match first {
            Err(e) if self.stacks && !is_gone(&e) => {
                debug!(tid, error = %e, "no user stack copies for off-CPU samples");
                open(&self.tracepoint, tid, self.every, self.frequency_hz, false)
            }
            other => other,
        };
        sampler.map_err(|source| match source.raw_os_error() {
            Some(libc::ESRCH) => OpenError::Gone { tid },
            Some(libc::EPERM | libc::EACCES) => OpenError::Denied { tid, source },
            _ => OpenError::Other {
                tid,
                event: odp_core::EventKind::OffCpu,
                source,
            },
        })
    }

    pub fn attach(&mut self, pid: u32, tid: u32) -> Result<(), OpenError> {
        if self.is_attached(tid) {
            return Ok(());
        }
        let mut sampler = self.open(tid)?;
        if self.paused {
            let _ = sampler.disable();
        }
        self.threads.insert(
            tid,
            ThreadSwitches {
                pid,
                sampler,
                pending: None,
            },
        );
        Ok(())
    }

    /// Counts `sample` (a wait the thread was already in when attached,
    /// see [`super::blocked`]) from `now` until its switch-in, unless a
    /// switch-out came first.
    pub fn seed_wait(&mut self, tid: u32, sample: RawSample, now: u64) {
        if let Some(thread) = self.threads.get_mut(&tid) {
            thread.pending.get_or_insert(Pending {
                sample,
                started: now,
                counted_to: now,
                weight: 1,
            });
        }
    }

    pub fn detach(&mut self, tid: u32) {
        self.threads.remove(&tid);
    }

    pub fn set_paused(&mut self, paused: bool) {
        if paused == self.paused {
            return;
        }
        self.paused = paused;
        for (tid, thread) in &mut self.threads {
            // A wait that spans a pause is not known to have lasted.
            thread.pending = None;
            let done = if paused {
                thread.sampler.disable()
            } else {
                thread.sampler.enable()
            };
            if let Err(e) = done {
                debug!(tid, paused, error = %e, "cannot switch a thread's off-CPU event");
            }
        }
    }

    pub fn set_frequency(&mut self, frequency_hz: u32) {
        self.frequency_hz = frequency_hz.max(1);
    }

    /// Moves the waits that ended since the last drain, and the part up to
    /// `now` of those still under way, into `out`. `unwind` runs once on
    /// each new sample (to unwind its stack copy, which is then dropped,
    /// so that a long wait counted at many polls is unwound once).
    pub fn drain(
        &mut self,
        now: u64,
        unwind: &mut impl FnMut(&mut RawSample),
        out: &mut Vec<Wait>,
    ) -> DrainStats {
        let mut stats = DrainStats::default();
        let min_wait = self.min_wait;
        for thread in self.threads.values_mut() {
            while let Some(record) = thread.sampler.next_record() {
                if record.ty() == PERF_RECORD_SWITCH {
                    let Some(time) = switch_time(&record.to_contiguous()) else {
                        stats.malformed += 1;
                        continue;
                    };
                    if record.misc() & PERF_RECORD_MISC_SWITCH_OUT != 0 {
                        self.switch_outs += 1;
                        self.window_switch_outs += 1;
                    } else if let Some(pending) = thread.pending.take() {
                        push_wait(pending, time, min_wait, out);
                    }
                    continue;
                }
                match record.parse_record() {
                    Ok(PerfRecord::Sample(sample)) => {
                        let mut raw = raw_sample(&sample, thread.pid);
                        raw.wait = Some(self.tracepoint.wait_state(sample.raw()));
                        unwind(&mut raw);
                        raw.stack = Vec::new();
                        raw.regs = None;
                        let started = sample.time().unwrap_or(now);
                        stats.samples += 1;
                        thread.pending = Some(Pending {
                            sample: raw,
                            started,
                            counted_to: started,
                            weight: self.every,
                        });
                    }
                    Ok(PerfRecord::Lost(lost)) => {
                        stats.lost += lost.lost;
                        // The switch-in of the pending wait may be lost too.
                        thread.pending = None;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        debug!(pid = thread.pid, error = %e, "skipping malformed perf record");
                        stats.malformed += 1;
                    }
                }
            }
            if let Some(pending) = &mut thread.pending {
                let long_enough = now.saturating_sub(pending.started) >= min_wait;
                if long_enough && now > pending.counted_to {
                    out.push(Wait {
                        sample: pending.sample.clone(),
                        nanos: now - pending.counted_to,
                        weight: pending.weight,
                    });
                    pending.counted_to = now;
                }
            }
        }
        stats
    }

    /// Re-chooses the sub-sampling period from the switch rate seen over
    /// `elapsed`, so that each thread yields about the frequency in samples
    /// per second. Events are re-opened only when the period should at
    /// least double or fall to a quarter, so it does not flap. Returns the
    /// new period when it changed.
    pub fn adapt(&mut self, elapsed: Duration) -> Option<u64> {
        let seconds = elapsed.as_secs_f64();
        let switches = std::mem::take(&mut self.switch_outs);
        if seconds <= 0.0 || self.threads.is_empty() {
            return None;
        }
        let per_thread = switches as f64 / seconds / self.threads.len() as f64;
        let wanted = (per_thread / f64::from(self.frequency_hz)).ceil().max(1.0) as u64;
        let wanted = wanted.next_power_of_two().min(MAX_EVERY);
        let change = wanted >= 2 * self.every || wanted * 4 <= self.every;
        if !change {
            return None;
        }
        self.every = wanted;
        let tids: Vec<u32> = self.threads.keys().copied().collect();
        for tid in tids {
            match self.open(tid) {
                Ok(mut sampler) => {
                    if self.paused {
                        let _ = sampler.disable();
                    }
                    if let Some(thread) = self.threads.get_mut(&tid) {
                        // Pending waits carry over: their switch-in comes
                        // to the new event.
                        thread.sampler = sampler;
                    }
                }
                Err(OpenError::Gone { .. }) => {
                    self.threads.remove(&tid);
                }
                Err(e) => debug!(tid, error = %e, "cannot re-open the off-CPU event"),
            }
        }
        Some(wanted)
    }
}

fn push_wait(pending: Pending, switch_in: u64, min_wait: u64, out: &mut Vec<Wait>) {
    if switch_in.saturating_sub(pending.started) < min_wait {
        return;
    }
    if switch_in > pending.counted_to {
        out.push(Wait {
            nanos: switch_in - pending.counted_to,
            sample: pending.sample,
            weight: pending.weight,
        });
    }
}

/// The time of a switch record: its body is the `sample_id` trailer,
/// pid and tid (u32 each) then the time.
fn switch_time(body: &[u8]) -> Option<u64> {
    let bytes: [u8; 8] = body.get(8..16)?.try_into().ok()?;
    Some(u64::from_ne_bytes(bytes))
}

fn is_gone(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ESRCH)
}

fn open(
    tracepoint: &SchedSwitch,
    tid: u32,
    every: u64,
    frequency_hz: u32,
    stacks: bool,
) -> io::Result<Sampler> {
    let pid = i32::try_from(tid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    let mut builder = Builder::new(Tracepoint::with_id(tracepoint.id));
    let mut flags = SampleFlag::CALLCHAIN | SampleFlag::TID | SampleFlag::TIME | SampleFlag::RAW;
    if stacks {
        flags |= SampleFlag::REGS_USER | SampleFlag::STACK_USER;
        builder
            .sample_regs_user(USER_REGS_MASK)
            .sample_stack_user(STACK_BYTES);
    }
    builder
        .observe_pid(pid)
        .any_cpu()
        .sample_period(every)
        .sample(flags)
        .context_switch(true)
        .sample_id_all(true)
        .clockid(Clock::MONOTONIC)
        // A tracepoint fires in the kernel: excluding it excludes all.
        .exclude_kernel(false)
        .exclude_hv(true)
        .enabled(false);
    // Room for the samples of 100 ms at twice the target rate, and for the
    // switch records between them.
    let bytes = buffer_bytes(frequency_hz.saturating_mul(2), stacks).max(256 << 10);
    let mut sampler = builder.build()?.sampled(bytes)?;
    sampler.enable()?;
    Ok(sampler)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMAT: &str = "name: sched_switch\nID: 372\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
        \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n";

    #[test]
    fn finds_fields_in_a_format_file() {
        assert_eq!(field(FORMAT, "prev_state"), Some((32, 8)));
        assert_eq!(field(FORMAT, "prev_pid"), Some((24, 4)));
        assert_eq!(field(FORMAT, "next_pid"), None);
    }

    #[test]
    fn reads_the_wait_state_from_a_raw_record() {
        let tp = SchedSwitch {
            id: 1,
            prev_state: Some((32, 8)),
        };
        let mut raw = vec![0u8; 64];
        let state = |raw: &mut Vec<u8>, value: u64| {
            raw[32..40].copy_from_slice(&value.to_ne_bytes());
            tp.wait_state(Some(raw))
        };
        assert_eq!(state(&mut raw, 0), WaitState::Preempted);
        // `R+`: the kernel's preempted flag above the state bits.
        assert_eq!(state(&mut raw, 0x100), WaitState::Preempted);
        assert_eq!(state(&mut raw, 1), WaitState::Sleeping);
        assert_eq!(state(&mut raw, 2), WaitState::Uninterruptible);
        assert_eq!(state(&mut raw, 4), WaitState::Other);
        assert_eq!(tp.wait_state(Some(&raw[..16])), WaitState::Other);
        assert_eq!(tp.wait_state(None), WaitState::Other);
    }

    #[test]
    fn a_wait_counts_from_its_last_poll_to_its_switch_in() {
        let pending = |started, counted_to| Pending {
            sample: RawSample::default(),
            started,
            counted_to,
            weight: 4,
        };
        let mut out = Vec::new();
        push_wait(pending(100, 100), 350, 0, &mut out);
        push_wait(pending(100, 300), 350, 0, &mut out);
        // Shorter than the minimum wait: dropped whole.
        push_wait(pending(100, 100), 150, 60, &mut out);
        let nanos: Vec<u64> = out.iter().map(|w| w.nanos).collect();
        assert_eq!(nanos, [250, 50]);
        assert!(out.iter().all(|w| w.weight == 4));
    }

    #[test]
    fn switch_records_carry_their_time_after_the_ids() {
        let mut body = vec![1, 0, 0, 0, 2, 0, 0, 0];
        body.extend_from_slice(&123_456u64.to_ne_bytes());
        assert_eq!(switch_time(&body), Some(123_456));
        assert_eq!(switch_time(&body[..12]), None);
    }
}
