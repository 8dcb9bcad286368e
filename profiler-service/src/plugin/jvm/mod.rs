//! The `jvm` plugin: Java stacks from the JVM's own flight recorder.
//!
//! Per JVM, the session starts a JFR recording holding only the sample
//! event it needs (`JFR.start settings=none +jdk.ExecutionSample#...`),
//! dumps it every [`DUMP_INTERVAL`] (`JFR.dump`, which also closes the
//! recording's current chunk) and reads the dumped chunks in Rust
//! ([`jfr`]: `odp_profile::jfr`, which imports of `.jfr` files share). A
//! chunk read once is recognised by its start time and never counted
//! twice. A frequency change, a pause or the end of the profile
//! dump what was recorded and stop the recording; a new one starts with
//! the new period. Commands travel over the JVM's attach socket
//! ([`attach`]).
//!
//! CPU samples (`jdk.ExecutionSample`) are taken by JFR from threads
//! running Java code, at most a few threads per period, so a sample stands
//! for one period of on-CPU Java time: the event is `cpu-clock`.
//! Allocation samples weigh the bytes they stand for: `alloc-bytes`.
//! `heap-bytes` is no JFR recording but one class histogram taken when the
//! profile ends ([`heap`]). `lock` records JFR's wait events instead of
//! samples, each wait read as samples of the profile's period
//! ([`super::waits`]) under a leaf naming what it waited for ([`lock`]).

pub mod attach;
pub mod heap;
pub mod lock;

pub use odp_profile::jfr;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use odp_core::{EventKind, Language};
use tracing::{debug, warn};

use self::attach::Attach;
use self::jfr::SampleEvent;
use super::waits::DurationSampler;
use super::{OpenOptions, Plugin, PluginError, PollStats, Session, WindowSink};
use crate::targets::ProcFs;

const NANOS: u64 = 1_000_000_000;
/// How often recordings are dumped and read.
pub const DUMP_INTERVAL: Duration = Duration::from_secs(1);
/// Failed commands in a row on a live JVM before the profile fails.
const MAX_FAILURES: u32 = 3;
/// Chunk start times remembered per JVM, to skip chunks read before.
const SEEN_CHUNKS: usize = 64;
/// What the JVM keeps of a recording on disk (dumps read far more often).
const MAX_AGE: &str = "2m";

#[derive(Debug, Clone)]
pub struct JvmPlugin {
    procfs: ProcFs,
    jcmd: PathBuf,
    measure: Measure,
}

/// What a JVM session measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measure {
    /// A JFR sample event, read every [`DUMP_INTERVAL`].
    Samples(SampleEvent),
    /// JFR's wait events, read every [`DUMP_INTERVAL`] ([`lock`]).
    Locks,
    /// The live heap by class, once at the end ([`heap`]).
    Heap,
}

impl JvmPlugin {
    /// CPU sampling; `jcmd` is the fallback when the attach socket cannot
    /// be used.
    pub fn new(procfs: ProcFs, jcmd: PathBuf) -> Self {
        JvmPlugin {
            procfs,
            jcmd,
            measure: Measure::Samples(SampleEvent::Execution),
        }
    }

    /// The same plugin sampling allocations instead (bytes).
    pub fn allocations(mut self) -> Self {
        self.measure = Measure::Samples(SampleEvent::Allocation);
        self
    }

    /// The same plugin measuring where threads wait for locks, monitors
    /// and conditions (nanoseconds, read as samples of the period).
    pub fn locks(mut self) -> Self {
        self.measure = Measure::Locks;
        self
    }

    /// The same plugin measuring the live heap by class (bytes), once when
    /// the profile ends.
    pub fn heap(mut self) -> Self {
        self.measure = Measure::Heap;
        self
    }
}

impl Plugin for JvmPlugin {
    fn name(&self) -> &'static str {
        "jvm"
    }

    fn language(&self) -> Language {
        Language::Jvm
    }

    fn measures(&self) -> &'static [EventKind] {
        match self.measure {
            Measure::Samples(SampleEvent::Execution) => &[EventKind::CpuClock, EventKind::Cycles],
            Measure::Samples(SampleEvent::Allocation) => &[EventKind::AllocBytes],
            Measure::Locks => &[EventKind::Lock],
            Measure::Heap => &[EventKind::HeapBytes],
        }
    }

    fn open(
        &self,
        pids: &[u32],
        frequency_hz: u32,
        options: &OpenOptions,
    ) -> Result<Box<dyn Session>, PluginError> {
        let recording = match self.measure {
            Measure::Samples(event) => Recording::Samples(event),
            Measure::Locks => Recording::Waits {
                min_wait: options.min_wait.unwrap_or(lock::DEFAULT_MIN_WAIT),
                sampler: DurationSampler::seeded(frequency_hz),
            },
            Measure::Heap => {
                let session =
                    heap::HeapSession::open(self.procfs.clone(), self.jcmd.clone(), pids)?;
                return Ok(Box::new(session));
            }
        };
        let mut session = JvmSession {
            procfs: self.procfs.clone(),
            jcmd: self.jcmd.clone(),
            recording,
            // Unique per session so concurrent profiles of one JVM do not
            // touch each other's recordings.
            name: format!("odp-{}", uuid::Uuid::new_v4().simple()),
            rate_hz: frequency_hz.max(1),
            paused: false,
            targets: BTreeMap::new(),
            next_file: 0,
        };
        session.sync_targets(pids);
        // Recordings start now, so a JVM that refuses fails the start.
        let mut sink = WindowSink::new();
        let mut stats = PollStats::default();
        let mut refused = None;
        for &pid in pids {
            if let Err(message) = session.drive_one(pid, &mut sink, &mut stats, false) {
                refused = Some((pid, message));
            }
        }
        if session.targets.values().all(|t| t.running_hz.is_none()) {
            return Err(attach_failure("JFR", refused, pids));
        }
        Ok(Box::new(session))
    }
}

/// Why a session attached to none of its JVMs: the last refusal (pid and
/// message) when one refused, else that there was nothing to attach.
/// Why driving one JVM's recording failed.
#[derive(Debug, thiserror::Error)]
enum RecordingError {
    /// The attach socket or `jcmd` failed.
    #[error("{0}")]
    Attach(#[from] std::io::Error),
    /// The JVM answered the command without doing it: its answer.
    #[error("{0}")]
    Refused(String),
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Parse(#[from] jfr::JfrError),
}

fn attach_failure(
    tool: &'static str,
    refusal: Option<(u32, impl ToString)>,
    pids: &[u32],
) -> PluginError {
    match refusal {
        Some((pid, message)) => PluginError::ToolFailed {
            tool,
            pid,
            message: message.to_string(),
        },
        None => PluginError::NothingAttached(pids.to_vec()),
    }
}

/// One JVM of the profile.
struct JvmTarget {
    attach: Attach,
    /// The period of the recording running now, as a frequency (0 for
    /// recordings that do not depend on it).
    running_hz: Option<u32>,
    /// When that recording started, in Unix nanoseconds: waits count
    /// from then.
    started_nanos: i64,
    last_dump: Instant,
    seen_chunks: VecDeque<i64>,
    failures: u32,
}

impl JvmTarget {
    /// Whether a chunk of the recording is read for the first time (and
    /// remembers it).
    fn first_read(&mut self, chunk_start: i64) -> bool {
        if self.seen_chunks.contains(&chunk_start) {
            return false;
        }
        if self.seen_chunks.len() == SEEN_CHUNKS {
            self.seen_chunks.pop_front();
        }
        self.seen_chunks.push_back(chunk_start);
        true
    }
}

/// What a session records.
enum Recording {
    Samples(SampleEvent),
    /// Waits of at least `min_wait`, as samples of the period.
    Waits {
        min_wait: Duration,
        sampler: DurationSampler,
    },
}

struct JvmSession {
    procfs: ProcFs,
    jcmd: PathBuf,
    recording: Recording,
    name: String,
    rate_hz: u32,
    paused: bool,
    targets: BTreeMap<u32, JvmTarget>,
    next_file: u64,
}

impl JvmSession {
    fn start_line(&self) -> String {
        let event = match &self.recording {
            Recording::Samples(event) => *event,
            Recording::Waits { min_wait, .. } => {
                return format!(
                    "JFR.start name={} settings=none {} maxage={MAX_AGE}",
                    self.name,
                    lock::event_settings(*min_wait)
                );
            }
        };
        let name = event.jfr_name();
        let sampling = match event {
            SampleEvent::Execution => {
                let period_ms = (1000 / self.rate_hz).max(1);
                format!("+{name}#period={period_ms}ms")
            }
            SampleEvent::Allocation => format!("+{name}#throttle={}/s", self.rate_hz),
        };
        format!(
            "JFR.start name={} settings=none +{name}#enabled=true +{name}#stackTrace=true \
             {sampling} maxage={MAX_AGE}",
            self.name
        )
    }

    /// The rate the recording runs at, as the JFR settings see it: a wait
    /// recording is the same at every rate (only the sampler's period
    /// changes), so a new rate does not restart it.
    fn recording_hz(&self) -> u32 {
        match self.recording {
            Recording::Samples(_) => self.rate_hz,
            Recording::Waits { .. } => 0,
        }
    }

    /// Brings every JVM's recording to what the session wants (running at
    /// the current rate, or stopped while paused), dumping what a stopped
    /// or replaced recording holds and, when due, the running ones.
    fn drive(&mut self, sink: &mut WindowSink, force_dump: bool) -> Result<PollStats, PluginError> {
        let mut stats = PollStats::default();
        let pids: Vec<u32> = self.targets.keys().copied().collect();
        for pid in pids {
            let result = self.drive_one(pid, sink, &mut stats, force_dump);
            let Some(target) = self.targets.get_mut(&pid) else {
                continue;
            };
            match result {
                Ok(()) => target.failures = 0,
                Err(_) if !self.procfs.is_alive(pid) => {
                    debug!(pid, "JVM exited");
                    self.targets.remove(&pid);
                }
                Err(message) => {
                    target.failures += 1;
                    warn!(pid, failures = target.failures, %message, "JFR command failed");
                    if target.failures >= MAX_FAILURES {
                        return Err(PluginError::ToolFailed {
                            tool: "JFR",
                            pid,
                            message: message.to_string(),
                        });
                    }
                }
            }
        }
        Ok(stats)
    }

    fn drive_one(
        &mut self,
        pid: u32,
        sink: &mut WindowSink,
        stats: &mut PollStats,
        force_dump: bool,
    ) -> Result<(), RecordingError> {
        let wanted_hz = (!self.paused).then_some(self.recording_hz());
        let target = &self.targets[&pid];
        let running = target.running_hz;
        let due = force_dump || target.last_dump.elapsed() >= DUMP_INTERVAL;
        if running.is_some() && (due || running != wanted_hz) {
            self.dump(pid, sink, stats)?;
        }
        if running.is_some() && running != wanted_hz {
            let attach = &self.targets[&pid].attach;
            attach.command(&format!("JFR.stop name={}", self.name))?;
            self.targets.get_mut(&pid).expect("target").running_hz = None;
        }
        if wanted_hz.is_some() && self.targets[&pid].running_hz.is_none() {
            let line = self.start_line();
            let started_nanos = unix_nanos();
            let output = self.targets[&pid].attach.command(&line)?;
            if !output.contains("Started recording") {
                return Err(RecordingError::Refused(output.trim().to_owned()));
            }
            let target = self.targets.get_mut(&pid).expect("target");
            target.running_hz = wanted_hz;
            target.started_nanos = started_nanos;
            target.last_dump = Instant::now();
        }
        Ok(())
    }

    /// Dumps a JVM's recording and moves the chunks not read before into
    /// the sink.
    fn dump(
        &mut self,
        pid: u32,
        sink: &mut WindowSink,
        stats: &mut PollStats,
    ) -> Result<(), RecordingError> {
        self.next_file += 1;
        // Written by the JVM in its own file system, read through its root.
        let file = PathBuf::from(format!("/tmp/{}-{pid}-{}.jfr", self.name, self.next_file));
        let target = self.targets.get_mut(&pid).expect("target");
        // Only the chunks since the last dump (whole chunks, so the ones
        // already read are skipped below).
        let since = target.last_dump.elapsed().as_secs() + 2;
        let line = format!(
            "JFR.dump name={} filename={} begin=-{since}s",
            self.name,
            file.display()
        );
        let output = target.attach.command(&line)?;
        target.last_dump = Instant::now();
        if !output.contains("Dumped recording") {
            return Err(RecordingError::Refused(output.trim().to_owned()));
        }
        let local = self.procfs.in_root(pid, &file);
        let bytes = fs::read(&local);
        remove(&local);
        let bytes = bytes.map_err(|source| RecordingError::Read {
            path: local.clone(),
            source,
        })?;
        let target = self.targets.get_mut(&pid).expect("target");
        match &mut self.recording {
            Recording::Samples(event) => {
                let chunks = jfr::parse(bytes, *event)?;
                for chunk in chunks {
                    if !target.first_read(chunk.start_nanos) {
                        continue;
                    }
                    for sample in &chunk.samples {
                        let tid = thread(pid, sample.tid, &sample.thread_name, sink);
                        let frames = sample.frames.iter().map(|f| sink.intern(f)).collect();
                        sink.add_stack(frames, tid, sample.weight);
                        stats.samples += 1;
                    }
                }
            }
            Recording::Waits { sampler, .. } => {
                let chunks = lock::parse(bytes)?;
                for chunk in chunks {
                    if !target.first_read(chunk.start_nanos) {
                        continue;
                    }
                    for wait in &chunk.events {
                        let samples = sampler.samples(wait.nanos_since(target.started_nanos));
                        if samples == 0 {
                            continue;
                        }
                        let tid = thread(pid, wait.tid, &wait.thread_name, sink);
                        let frames = wait
                            .frames
                            .iter()
                            .chain([&wait.blocker])
                            .map(|f| sink.intern(f))
                            .collect();
                        sink.add_stack(frames, tid, samples);
                        stats.samples += samples;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The thread of an event (the JVM's pid when JFR did not say), named in
/// the window.
fn thread(pid: u32, tid: u32, name: &Option<String>, sink: &mut WindowSink) -> u32 {
    let tid = if tid == 0 { pid } else { tid };
    if let Some(name) = name {
        sink.name_thread(tid, || Some(name.clone()));
    }
    tid
}

fn unix_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn remove(path: &Path) {
    if let Err(e) = fs::remove_file(path) {
        debug!(path = %path.display(), error = %e, "cannot remove JFR dump");
    }
}

impl Session for JvmSession {
    fn event(&self) -> EventKind {
        match self.recording {
            Recording::Samples(SampleEvent::Execution) => EventKind::CpuClock,
            Recording::Samples(SampleEvent::Allocation) => EventKind::AllocBytes,
            Recording::Waits { .. } => EventKind::Lock,
        }
    }

    fn pids(&self) -> Vec<u32> {
        self.targets.keys().copied().collect()
    }

    fn window_period(&mut self) -> u64 {
        match &self.recording {
            Recording::Samples(SampleEvent::Execution) => NANOS / u64::from(self.rate_hz),
            // Each sample already weighs its bytes.
            Recording::Samples(SampleEvent::Allocation) => 1,
            Recording::Waits { sampler, .. } => sampler.period(),
        }
    }

    fn poll(&mut self, sink: &mut WindowSink) -> Result<PollStats, PluginError> {
        self.drive(sink, false)
    }

    fn set_frequency(&mut self, frequency_hz: u32) {
        // The next poll dumps the recording and starts one at this rate
        // (a wait recording runs on; its waits from now on read as samples
        // of the new period).
        self.rate_hz = frequency_hz.max(1);
        if let Recording::Waits { sampler, .. } = &mut self.recording {
            sampler.set_frequency(self.rate_hz);
        }
    }

    fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
    }

    fn sync_targets(&mut self, pids: &[u32]) {
        let wanted: HashSet<u32> = pids.iter().copied().collect();
        let gone: Vec<u32> = self
            .targets
            .keys()
            .copied()
            .filter(|pid| !wanted.contains(pid))
            .collect();
        for pid in gone {
            if let Some(target) = self.targets.remove(&pid) {
                stop(&self.name, pid, &target);
            }
        }
        for &pid in pids {
            self.targets.entry(pid).or_insert_with(|| JvmTarget {
                attach: Attach::new(self.procfs.clone(), pid, self.jcmd.clone()),
                running_hz: None,
                started_nanos: 0,
                last_dump: Instant::now(),
                seen_chunks: VecDeque::new(),
                failures: 0,
            });
        }
    }

    fn finish(&mut self, sink: &mut WindowSink) -> Result<PollStats, PluginError> {
        self.paused = true;
        self.drive(sink, true)
    }
}

/// Stops a recording the session no longer reads, so the JVM does not
/// keep recording for nobody.
fn stop(name: &str, pid: u32, target: &JvmTarget) {
    if target.running_hz.is_none() {
        return;
    }
    if let Err(e) = target.attach.command(&format!("JFR.stop name={name}")) {
        debug!(pid, error = %e, "cannot stop the JFR recording");
    }
}

impl Drop for JvmSession {
    fn drop(&mut self) {
        for (pid, target) in &self.targets {
            stop(&self.name, *pid, target);
        }
    }
}
