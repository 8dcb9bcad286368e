//! Per-CPU sampling: one `cpu-clock` event per online CPU for every
//! process (pid −1), as `perf record -a` opens them, with the side-band
//! records that say which process each sample belongs to and what it maps
//! (`COMM`, `FORK`/`EXIT`, `MMAP2` with build ids), all timed with the
//! monotonic clock (`sample_id_all`) so that records of different CPUs can
//! be put back in order.
//!
//! Why: a per-thread event can only be opened once a rescan has found the
//! thread, so a process living less than a rescan period is mostly missed.
//! A per-CPU event sees a process from its first sample. It needs
//! system-wide rights (root, CAP_PERFMON or `perf_event_paranoid` <= 0),
//! and sees every process: the session keeps the target's samples
//! (`cpu_wide_session`).
//!
//! Samples carry the user registers and stack copy for DWARF unwinding as
//! per-thread ones do (`perf.rs`), unwound with the modules the `MMAP2`
//! records mapped once the process may have exited; every process's
//! samples carry them, which costs a copy per sample of the CPU's
//! processes (the target's or not).
//!
//! Cost, measured by `tests/per_cpu.rs` (release build, 99 Hz, shared
//! 2-core VM, the sampling thread's CPU against `perf record -a -e
//! cpu-clock -F 99` over the same seconds): idle, 0.35 % of a core against
//! perf's 1.15 %; with a loop of 50 ms processes busy on one core, 1.47 %
//! against 1.47 %.

use std::borrow::Cow;
use std::io;

use perf_event::data::parse::Parser;
use perf_event::data::{Comm, Exit, Lost, Mmap2, RecordMetadata, Sample, Throttle, Visitor};
use perf_event::events::Software;
use perf_event::{Builder, Clock, SampleFlag, Sampler};
use perf_event_open_sys::bindings::perf_event_header;
use tracing::debug;

use super::modules::ExecMapping;
use super::perf::{raw_sample, DrainStats, RawSample, STACK_BYTES, USER_REGS_MASK};
use super::process_table::{RecordedMapping, TaskEvent, MISC_COMM_EXEC};

/// Ring buffer bytes per CPU: the samples of every process on that CPU and
/// the side-band records of every process started on it, for a drain every
/// 50 ms with room for bursts (`perf record` takes 512 KiB too).
const BUFFER_BYTES: usize = 512 << 10;
/// With stack copies: 60 samples of 16.5 KiB, 600 ms at 99 Hz.
const STACK_BUFFER_BYTES: usize = 1 << 20;
/// Whether stack copies are requested: the unwinder knows x86-64 only.
const STACK_COPIES: bool = cfg!(target_arch = "x86_64");
/// `PROT_EXEC` in an `MMAP2` record's protection.
const PROT_EXEC: u32 = 0x4;

/// One record of a per-CPU event, with its time.
#[derive(Debug, Clone)]
pub struct Timed {
    pub time: u64,
    pub record: CpuRecord,
}

#[derive(Debug, Clone)]
pub enum CpuRecord {
    Sample(RawSample),
    Task(TaskEvent),
}

/// What a record was, beyond the ones kept.
enum Parsed {
    Kept(Timed),
    Lost(u64),
    Throttle(u64),
    Unthrottle(u64),
    Other,
}

/// Turns the kernel's records into [`Parsed`], reading each one's time
/// from its `sample_id`.
struct RecordVisitor;

fn time_of(metadata: &RecordMetadata) -> u64 {
    metadata.sample_id().time().unwrap_or(0)
}

fn kept(metadata: &RecordMetadata, record: CpuRecord) -> Parsed {
    Parsed::Kept(Timed {
        time: time_of(metadata),
        record,
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl<'a> Visitor<'a> for RecordVisitor {
    type Output = Parsed;

    fn visit_unimplemented(self, _: RecordMetadata) -> Parsed {
        Parsed::Other
    }

    fn visit_sample(self, record: Sample<'a>, _: RecordMetadata) -> Parsed {
        Parsed::Kept(Timed {
            time: record.time().unwrap_or(0),
            record: CpuRecord::Sample(raw_sample(&record, 0)),
        })
    }

    fn visit_comm(self, record: Comm<'a>, metadata: RecordMetadata) -> Parsed {
        let event = TaskEvent::Comm {
            pid: record.pid,
            tid: record.tid,
            name: text(&record.comm),
            exec: metadata.misc() & MISC_COMM_EXEC != 0,
        };
        kept(&metadata, CpuRecord::Task(event))
    }

    fn visit_fork(self, record: Exit, metadata: RecordMetadata) -> Parsed {
        let event = TaskEvent::Fork {
            pid: record.pid,
            ppid: record.ppid,
            tid: record.tid,
            ptid: record.ptid,
        };
        Parsed::Kept(Timed {
            time: record.time,
            record: CpuRecord::Task(event),
        })
        .or_time(&metadata)
    }

    fn visit_exit(self, record: Exit, metadata: RecordMetadata) -> Parsed {
        let event = TaskEvent::Exit {
            pid: record.pid,
            tid: record.tid,
        };
        Parsed::Kept(Timed {
            time: record.time,
            record: CpuRecord::Task(event),
        })
        .or_time(&metadata)
    }

    fn visit_mmap2(self, record: Mmap2<'a>, metadata: RecordMetadata) -> Parsed {
        if record.prot & PROT_EXEC == 0 {
            return Parsed::Other;
        }
        let mapped = RecordedMapping {
            mapping: ExecMapping {
                start: record.addr,
                end: record.addr.saturating_add(record.len),
                offset: record.pgoff,
                path: text(&record.filename),
            },
            build_id: record.build_id().map(<[u8]>::to_vec),
        };
        let event = TaskEvent::Mmap {
            pid: record.pid,
            mapped,
        };
        kept(&metadata, CpuRecord::Task(event))
    }

    fn visit_lost(self, record: Lost, _: RecordMetadata) -> Parsed {
        Parsed::Lost(record.lost)
    }

    fn visit_throttle(self, record: Throttle, _: RecordMetadata) -> Parsed {
        Parsed::Throttle(record.time)
    }

    fn visit_unthrottle(self, record: Throttle, _: RecordMetadata) -> Parsed {
        Parsed::Unthrottle(record.time)
    }
}

impl Parsed {
    /// A task record's own time field is the time of the event; the
    /// `sample_id` time is the same clock, used should the former be 0.
    fn or_time(self, metadata: &RecordMetadata) -> Self {
        match self {
            Parsed::Kept(mut timed) if timed.time == 0 => {
                timed.time = time_of(metadata);
                Parsed::Kept(timed)
            }
            other => other,
        }
    }
}

struct CpuEvent {
    cpu: usize,
    sampler: Sampler,
    throttled_at: Option<u64>,
}

/// The per-CPU events of one profile.
pub struct CpuWideSet {
    events: Vec<CpuEvent>,
    /// Whether kernel frames are sampled.
    kernel: bool,
    /// Whether samples carry user stack copies.
    stacks: bool,
    frequency_hz: u32,
    paused: bool,
}

/// The online CPUs, from a list like `0-3,6` (`/sys/devices/system/cpu/online`).
pub fn parse_cpu_list(text: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (first, last) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(first), Ok(last)) = (first.parse::<usize>(), last.parse::<usize>()) {
            cpus.extend(first..=last);
        }
    }
    cpus
}

fn online_cpus() -> io::Result<Vec<usize>> {
    let cpus = parse_cpu_list(&std::fs::read_to_string("/sys/devices/system/cpu/online")?);
    if cpus.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "no online CPU listed",
        ));
    }
    Ok(cpus)
}

/// What each CPU's event is opened with.
#[derive(Debug, Clone, Copy)]
struct Options {
    kernel: bool,
    build_ids: bool,
    stacks: bool,
}

fn open_cpu(cpu: usize, frequency_hz: u32, options: Options) -> io::Result<Sampler> {
    let mut builder = Builder::new(Software::CPU_CLOCK);
    let mut flags = SampleFlag::CALLCHAIN | SampleFlag::TID | SampleFlag::TIME | SampleFlag::PERIOD;
    if options.stacks {
        flags |= SampleFlag::REGS_USER | SampleFlag::STACK_USER;
        builder
            .sample_regs_user(USER_REGS_MASK)
            .sample_stack_user(STACK_BYTES);
    }
    builder
        .any_pid()
        .one_cpu(cpu)
        .sample_frequency(u64::from(frequency_hz))
        .sample(flags)
        .comm(true)
        .comm_exec(true)
        .task(true)
        .mmap(true)
        .mmap2(true)
        .build_id(options.build_ids)
        .sample_id_all(true)
        .clockid(Clock::MONOTONIC)
        .exclude_kernel(!options.kernel)
        .exclude_hv(true)
        .enabled(false);
    let bytes = if options.stacks {
        STACK_BUFFER_BYTES
    } else {
        BUFFER_BYTES
    };
    let mut sampler = builder.build()?.sampled(bytes)?;
    sampler.enable()?;
    Ok(sampler)
}

fn is_denied(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM))
}

/// Opens every CPU's event, with build ids in `MMAP2` records where the
/// kernel has them (5.12+) and stack copies where it grants them; what
/// one CPU was refused is not asked of the next.
fn open_all(cpus: &[usize], frequency_hz: u32, options: &mut Options) -> io::Result<Vec<CpuEvent>> {
    let mut events = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        let sampler = loop {
            let e = match open_cpu(cpu, frequency_hz, *options) {
                Ok(sampler) => break sampler,
                Err(e) => e,
            };
            if is_denied(&e) {
                return Err(e);
            }
            if options.build_ids {
                debug!(cpu, error = %e, "no build ids in mmap records on this kernel");
                options.build_ids = false;
            } else if options.stacks {
                debug!(cpu, error = %e, "no user stack copies, frame pointers only");
                options.stacks = false;
            } else {
                return Err(e);
            }
        };
        events.push(CpuEvent {
            cpu,
            sampler,
            throttled_at: None,
        });
    }
    Ok(events)
}

impl CpuWideSet {
    /// Opens one event per online CPU, with kernel frames if allowed and
    /// user stack copies if `stacks` asks for them. The error says why
    /// not, for the caller to fall back to per-thread events.
    pub fn open(frequency_hz: u32, stacks: bool) -> io::Result<Self> {
        let cpus = online_cpus()?;
        let mut options = Options {
            kernel: true,
            build_ids: true,
            stacks: stacks && STACK_COPIES,
        };
        let events = match open_all(&cpus, frequency_hz, &mut options) {
            Ok(events) => events,
            Err(e) if is_denied(&e) => {
                debug!(error = %e, "per-CPU events with kernel frames denied, trying user frames");
                options.kernel = false;
                open_all(&cpus, frequency_hz, &mut options)?
            }
            Err(e) => return Err(e),
        };
        Ok(CpuWideSet {
            events,
            kernel: options.kernel,
            stacks: options.stacks,
            frequency_hz,
            paused: false,
        })
    }

    pub fn cpus(&self) -> usize {
        self.events.len()
    }

    pub fn samples_kernel(&self) -> bool {
        self.kernel
    }

    pub fn copies_stacks(&self) -> bool {
        self.stacks
    }

    /// Moves every buffered record into `out`, in no particular order
    /// across CPUs (each CPU's in time order).
    pub fn drain(&mut self, out: &mut Vec<Timed>) -> DrainStats {
        let mut stats = DrainStats::default();
        for event in &mut self.events {
            drain_event(event, out, &mut stats);
        }
        stats
    }

    pub fn frequency(&self) -> u32 {
        self.frequency_hz
    }

    /// Re-opens every CPU's event at a new frequency (perf-event2 has no
    /// safe `PERF_EVENT_IOC_PERIOD`); drain into `out` first, which this
    /// does, so no record of the old events is lost. A CPU whose new event
    /// cannot be opened keeps its old one.
    pub fn set_frequency(&mut self, frequency_hz: u32, out: &mut Vec<Timed>) -> DrainStats {
        let mut stats = self.drain(out);
        if frequency_hz == self.frequency_hz {
            return stats;
        }
        self.frequency_hz = frequency_hz;
        let mut options = Options {
            kernel: self.kernel,
            build_ids: true,
            stacks: self.stacks,
        };
        for event in &mut self.events {
            let reopened = open_cpu(event.cpu, frequency_hz, options).or_else(|_| {
                options.build_ids = false;
                open_cpu(event.cpu, frequency_hz, options)
            });
            match reopened {
                Ok(mut sampler) => {
                    if self.paused {
                        let _ = sampler.disable();
                    }
                    // What the old event wrote since the drain above.
                    drain_event(event, out, &mut stats);
                    event.sampler = sampler;
                }
                Err(e) => debug!(cpu = event.cpu, error = %e, "keeping the old frequency"),
            }
        }
        stats
    }

    /// Switches sampling off (`paused`) or back on. Side-band records stop
    /// too: a process born while paused is matched from `/proc` instead.
    pub fn set_paused(&mut self, paused: bool) {
        if paused == self.paused {
            return;
        }
        self.paused = paused;
        for event in &mut self.events {
            let done = if paused {
                event.sampler.disable()
            } else {
                event.sampler.enable()
            };
            if let Err(e) = done {
                debug!(cpu = event.cpu, paused, error = %e, "cannot switch a CPU's event");
            }
        }
    }
}

/// Moves one CPU's buffered records into `out`.
fn drain_event(event: &mut CpuEvent, out: &mut Vec<Timed>, stats: &mut DrainStats) {
    let config = event.sampler.as_counter().config().clone();
    while let Some(record) = event.sampler.next_record() {
        let header = perf_event_header {
            type_: record.ty(),
            misc: record.misc(),
            size: u16::try_from(record.len() + std::mem::size_of::<perf_event_header>())
                .unwrap_or(u16::MAX),
        };
        let data: Cow<'_, [u8]> = record.to_contiguous();
        let mut parser = Parser::new(&*data, config.clone());
        match parser.parse_record_with_header(RecordVisitor, header) {
            Ok(Parsed::Kept(timed)) => {
                if matches!(timed.record, CpuRecord::Sample(_)) {
                    stats.samples += 1;
                }
                out.push(timed);
            }
            Ok(Parsed::Lost(lost)) => stats.lost += lost,
            Ok(Parsed::Throttle(at)) => event.throttled_at = Some(at),
            Ok(Parsed::Unthrottle(at)) => {
                if let Some(since) = event.throttled_at.take() {
                    stats.throttled_ns += at.saturating_sub(since);
                }
            }
            Ok(Parsed::Other) => {}
            Err(e) => {
                debug!(cpu = event.cpu, error = %e, "skipping malformed perf record");
                stats.malformed += 1;
            }
        }
    }
}
