//! The `python` plugin: CPython stacks (function, file and line, per
//! thread) sampled by py-spy, run as its PyPI binary.
//!
//! py-spy writes its samples only when a recording ends, so the session
//! runs it in back-to-back one-second recordings per process
//! (`py-spy record --format raw --threads --duration 1`) and moves each
//! one's stacks into the window that is open when it ends. Short
//! recordings also mean a py-spy left behind by a crashed agent stops by
//! itself within a second. Idle threads are left out (py-spy's default), so
//! a sample stands for on-CPU time: the event is `cpu-clock`. The `wall`
//! variant ([`PythonPlugin::wall`]) runs py-spy with `--idle`: every thread
//! is sampled whether it runs or waits (on a lock, in `time.sleep`, on
//! I/O), so a sample stands for 1/F s of a thread's wall time. py-spy's
//! raw output does not say whether a sampled thread held the GIL, so wall
//! profiles carry no GIL state (`--gil` would drop the other samples).
//!
//! A process that exits ends its recordings quietly (the rescan of the
//! [sampling thread](crate::sampling_thread) ends the profile); a
//! recording that fails on a live process is retried, and after
//! [`MAX_FAILURES`] failures in a row the profile fails with py-spy's own
//! message.

pub mod raw;

use std::collections::{BTreeSet, HashMap};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use odp_core::{EventKind, Language};
use tracing::{debug, warn};

use super::{OpenOptions, Plugin, PluginError, PollStats, Session, WindowSink};
use crate::cost::budget::process_cpu_time;
use crate::targets::ProcFs;

/// Nanoseconds in a second, for the `cpu-clock` period.
const NANOS: u64 = 1_000_000_000;
/// Length of one py-spy recording, in seconds (its `--duration`).
const RECORDING_SECS: u64 = 1;
/// Failed recordings in a row on a live process before the profile fails.
pub const MAX_FAILURES: u32 = 3;
/// How long the last recordings get to end when the profile finishes.
const FINISH_WAIT: Duration = Duration::from_secs(RECORDING_SECS + 4);
const HINT: &str = "install it with `pip install py-spy` or pass --py-spy";

#[derive(Debug, Clone)]
pub struct PythonPlugin {
    procfs: ProcFs,
    py_spy: PathBuf,
    native_frames: bool,
    /// Whether idle threads are sampled too (`wall`).
    idle: bool,
}

impl PythonPlugin {
    /// `py_spy` is the executable (a bare name is looked up in `PATH`);
    /// `native_frames` adds the C frames of extensions and the interpreter.
    pub fn new(procfs: ProcFs, py_spy: PathBuf, native_frames: bool) -> Self {
        PythonPlugin {
            procfs,
            py_spy,
            native_frames,
            idle: false,
        }
    }

    /// The same plugin sampling wall time: idle threads included.
    pub fn wall(mut self) -> Self {
        self.idle = true;
        self
    }
}

impl Plugin for PythonPlugin {
    fn name(&self) -> &'static str {
        "python"
    }

    fn language(&self) -> Language {
        Language::Python
    }

    fn measures(&self) -> &'static [EventKind] {
        if self.idle {
            &[EventKind::Wall]
        } else {
            &[EventKind::CpuClock, EventKind::Cycles]
        }
    }

    fn open(
        &self,
        pids: &[u32],
        frequency_hz: u32,
        _options: &OpenOptions,
    ) -> Result<Box<dyn Session>, PluginError> {
        let dir = tempfile::Builder::new()
            .prefix("odp-py-spy-")
            .tempdir()
            .map_err(PluginError::WorkDir)?;
        let mut session = PythonSession {
            procfs: self.procfs.clone(),
            py_spy: self.py_spy.clone(),
            adopted: false,
            native_frames: self.native_frames,
            idle: self.idle,
            dir,
            rate_hz: frequency_hz.max(1),
            paused: false,
            pids: pids.iter().copied().collect(),
            recordings: HashMap::new(),
            failures: HashMap::new(),
            next_file: 0,
            reaped_cpu: Duration::ZERO,
        };
        // Started now, so a missing py-spy fails the start itself.
        session.start_recordings()?;
        Ok(Box::new(session))
    }
}

/// One py-spy run on one process.
struct Recording {
    child: Child,
    output: PathBuf,
    log: PathBuf,
    /// Its CPU time when last read.
    cpu: Duration,
}

struct PythonSession {
    procfs: ProcFs,
    py_spy: PathBuf,
    /// Whether `py_spy` is already the real executable (see
    /// [`PythonSession::adopt_real_executable`]).
    adopted: bool,
    native_frames: bool,
    idle: bool,
    /// Where recordings write; removed with the session.
    dir: tempfile::TempDir,
    rate_hz: u32,
    paused: bool,
    pids: BTreeSet<u32>,
    recordings: HashMap<u32, Recording>,
    /// Failed recordings in a row, per process.
    failures: HashMap<u32, u32>,
    next_file: u64,
    /// CPU of the recordings already reaped.
    reaped_cpu: Duration,
}

impl PythonSession {
    /// Starts a recording on every wanted live process that has none.
    fn start_recordings(&mut self) -> Result<(), PluginError> {
        let idle: Vec<u32> = self
            .pids
            .iter()
            .copied()
            .filter(|pid| !self.recordings.contains_key(pid))
            .collect();
        for pid in idle {
            if !self.procfs.is_alive(pid) {
                continue;
            }
            let recording = self.spawn(pid).map_err(|error| PluginError::ToolMissing {
                tool: "py-spy",
                path: self.py_spy.display().to_string(),
                error,
                hint: HINT,
            })?;
            self.recordings.insert(pid, recording);
        }
        Ok(())
    }

    fn spawn(&mut self, pid: u32) -> io::Result<Recording> {
        self.next_file += 1;
        let output = self
            .dir
            .path()
            .join(format!("{pid}-{}.txt", self.next_file));
        let log = output.with_extension("log");
        let log_file = File::create(&log)?;
        let mut command = Command::new(&self.py_spy);
        command
            .args(["record", "--format", "raw", "--threads", "--nonblocking"])
            .arg("--rate")
            .arg(self.rate_hz.to_string())
            .arg("--duration")
            .arg(RECORDING_SECS.to_string())
            .arg("--pid")
            .arg(pid.to_string())
            .arg("--output")
            .arg(&output);
        if self.native_frames {
            command.arg("--native");
        }
        if self.idle {
            command.arg("--idle");
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()?;
        Ok(Recording {
            child,
            output,
            log,
            cpu: Duration::ZERO,
        })
    }

    /// `py-spy` on `PATH` is often a wrapper (a pyenv shim is a shell
    /// script taking half a second) that execs the real binary. Once a
    /// recording runs, its `/proc/PID/exe` names the real one, which the
    /// next recordings run directly.
    fn adopt_real_executable(&mut self) {
        if self.adopted {
            return;
        }
        for recording in self.recordings.values() {
            let Some(exe) = self.procfs.exe(recording.child.id()) else {
                continue;
            };
            let named_py_spy = exe
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("py-spy"));
            if named_py_spy {
                debug!(exe = %exe.display(), "running py-spy directly");
                self.py_spy = exe;
                self.adopted = true;
                return;
            }
        }
    }

    /// Moves the stacks of every recording that ended into the sink.
    fn collect_ended(
        &mut self,
        sink: &mut WindowSink,
        stats: &mut PollStats,
    ) -> Result<(), PluginError> {
        let mut ended = Vec::new();
        for (&pid, recording) in &mut self.recordings {
            // Read before reaping: an exited child's stat holds its total.
            if let Some(cpu) = process_cpu_time(recording.child.id()) {
                recording.cpu = cpu;
            }
            match recording.child.try_wait() {
                Ok(Some(status)) => ended.push((pid, status)),
                Ok(None) => {}
                Err(e) => warn!(pid, error = %e, "cannot wait for py-spy"),
            }
        }
        for (pid, status) in ended {
            if let Some(recording) = self.recordings.remove(&pid) {
                self.reaped_cpu += recording.cpu;
                self.collect(pid, &recording, status, sink, stats)?;
            }
        }
        Ok(())
    }

    fn collect(
        &mut self,
        pid: u32,
        recording: &Recording,
        status: ExitStatus,
        sink: &mut WindowSink,
        stats: &mut PollStats,
    ) -> Result<(), PluginError> {
        let output = fs::read_to_string(&recording.output).unwrap_or_default();
        let log = fs::read_to_string(&recording.log).unwrap_or_default();
        remove(&recording.output);
        remove(&recording.log);
        let (stacks, malformed) = raw::parse(&output);
        for stack in &stacks {
            let tid = stack.tid.unwrap_or(pid);
            if let Some(name) = &stack.thread_name {
                sink.name_thread(tid, || Some(name.clone()));
            }
            let frames = stack.frames.iter().map(|f| sink.intern(f)).collect();
            sink.add_stack(frames, tid, stack.count);
            stats.samples += stack.count;
        }
        let errors = raw::parse_summary(&log).map_or(0, |(_, errors)| errors);
        stats.lost += errors + malformed as u64;
        if status.success() {
            self.failures.remove(&pid);
            return Ok(());
        }
        if !self.procfs.is_alive(pid) {
            // The target exited mid-recording: not py-spy's fault.
            debug!(pid, "python target exited");
            return Ok(());
        }
        let failures = self.failures.entry(pid).or_insert(0);
        *failures += 1;
        let message = error_message(&log, status);
        warn!(pid, failures = *failures, %message, "py-spy recording failed");
        if *failures >= MAX_FAILURES {
            return Err(PluginError::ToolFailed {
                tool: "py-spy",
                pid,
                message,
            });
        }
        Ok(())
    }
}

/// What py-spy said went wrong: its `Error:` line (it then prints a
/// backtrace), else its last line, else the exit status.
pub fn error_message(log: &str, status: ExitStatus) -> String {
    let lines = || log.lines().map(str::trim).filter(|l| !l.is_empty());
    lines()
        .find(|l| l.starts_with("Error:"))
        .or_else(|| lines().next_back())
        .map_or_else(|| format!("py-spy exited with {status}"), str::to_owned)
}

fn remove(path: &Path) {
    if let Err(e) = fs::remove_file(path) {
        if e.kind() != io::ErrorKind::NotFound {
            debug!(path = %path.display(), error = %e, "cannot remove py-spy output");
        }
    }
}

impl Session for PythonSession {
    fn event(&self) -> EventKind {
        if self.idle {
            EventKind::Wall
        } else {
            EventKind::CpuClock
        }
    }

    fn pids(&self) -> Vec<u32> {
        self.pids.iter().copied().collect()
    }

    fn window_period(&mut self) -> u64 {
        NANOS / u64::from(self.rate_hz)
    }

    fn poll(&mut self, sink: &mut WindowSink) -> Result<PollStats, PluginError> {
        let mut stats = PollStats::default();
        self.adopt_real_executable();
        self.collect_ended(sink, &mut stats)?;
        if !self.paused {
            self.start_recordings()?;
        }
        Ok(stats)
    }

    fn helper_cpu_time(&self) -> Duration {
        self.reaped_cpu + self.recordings.values().map(|r| r.cpu).sum::<Duration>()
    }

    fn set_frequency(&mut self, frequency_hz: u32) {
        // From the next recording on, within a second.
        self.rate_hz = frequency_hz.max(1);
    }

    fn set_paused(&mut self, paused: bool) {
        // Running recordings end within a second; no new one starts.
        self.paused = paused;
    }

    fn sync_targets(&mut self, pids: &[u32]) {
        // A process no longer wanted keeps its running recording to its
        // end (at most a second) and gets no new one.
        self.pids = pids.iter().copied().collect();
        self.failures.retain(|pid, _| self.pids.contains(pid));
    }

    fn finish(&mut self, sink: &mut WindowSink) -> Result<PollStats, PluginError> {
        let mut stats = PollStats::default();
        let deadline = Instant::now() + FINISH_WAIT;
        while !self.recordings.is_empty() && Instant::now() < deadline {
            self.collect_ended(sink, &mut stats)?;
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(stats)
    }
}

impl Drop for PythonSession {
    fn drop(&mut self) {
        for (pid, mut recording) in self.recordings.drain() {
            if let Err(e) = recording.child.kill() {
                debug!(pid, error = %e, "py-spy already gone");
            }
            let _ = recording.child.wait();
        }
    }
}
