//! Per window, what the target earned and what the agent lost of it.
//!
//! A CPU profile at F Hz earns F samples per CPU second of its target. The
//! kernel keeps every process's CPU time (`/proc/PID/stat`), so the agent
//! reads it as the window goes (every [`READ_EVERY`], at each re-scan, at
//! each pause and resume, and when the window closes) and reports it
//! beside what it captured.
//! What it knows it lost is reported with the reason: samples the ring
//! buffer dropped or the kernel throttled, CPU time spent while cost
//! control had sampling paused,
//! and the CPU a process used before the agent found it. The rest of any
//! gap (threads found late, a process that exited between two reads) is
//! left for readers to show as unaccounted.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use odp_core::coverage::{Coverage, LossReason, Losses};

use crate::plugin::PollStats;
use crate::targets::{ProcFs, TICKS_PER_SECOND};

/// How often the tracked processes' CPU time is read. A process that exits
/// takes the CPU it used since the last read with it (its parent reaps it
/// at once), so this bounds what a short-lived process's expected count
/// misses. Each read costs about 10 µs per process: past 10 processes the
/// interval grows with their number (`PER_PROCESS` each), keeping the reads
/// near 100 a second.
pub const READ_EVERY: Duration = Duration::from_millis(100);
const PER_PROCESS: Duration = Duration::from_millis(10);

pub struct CoverageMeter {
    procfs: ProcFs,
    /// Whether the plugin's samples follow CPU time (a CPU profile of the
    /// native or Python plugin): without it, nothing is expected.
    follows_cpu: bool,
    /// When the profile began, in ticks since boot: a process started
    /// later earned all its CPU inside the profile.
    began: u64,
    /// Each tracked process's CPU ticks when last read.
    seen: HashMap<u32, u64>,
    last_read: Instant,
    paused: bool,
    /// This window's CPU ticks: all, while paused, before discovery.
    earned: u64,
    paused_ticks: u64,
    undiscovered_ticks: u64,
    /// Samples lost this window for reasons the plugin reports.
    /// Whether the session samples new processes from their start, so
    /// that their CPU time before a rescan finds them is not lost.
    sees_new: bool,
    /// Samples of processes only the session saw (born and gone between
    /// two rescans), expected as taken: nothing else measured their CPU.
    expected_as_sampled: u64,
    lost: Losses,
}

impl CoverageMeter {
    /// Starts measuring `pids` now; their CPU time so far is not counted.
    /// A session whose samples do not follow CPU time reads nothing.
    pub fn start(procfs: ProcFs, pids: &[u32], follows_cpu: bool) -> Self {
        let began = procfs.uptime_ticks().unwrap_or(u64::MAX);
        let seen = pids
            .iter()
            .filter(|_| follows_cpu)
            .filter_map(|&pid| Some((pid, procfs.cpu_ticks(pid)?.used)))
            .collect();
        CoverageMeter {
            procfs,
            follows_cpu,
            began,
            seen,
            last_read: Instant::now(),
            paused: false,
            earned: 0,
            paused_ticks: 0,
            undiscovered_ticks: 0,
            sees_new: false,
            expected_as_sampled: 0,
            lost: Losses::default(),
        }
    }

    /// For sessions that see new processes from their first sample (the
    /// native per-CPU mode): a process found late was sampled all along.
    pub fn seeing_new_processes(mut self, sees_new: bool) -> Self {
        self.sees_new = sees_new;
        self
    }

    /// Reads the processes' CPU time when [`READ_EVERY`] has passed.
    pub fn tick(&mut self, now: Instant) {
        let every = READ_EVERY.max(PER_PROCESS * self.seen.len() as u32);
        if now.saturating_duration_since(self.last_read) >= every {
            self.read();
        }
    }

    /// The target's processes after a re-scan: new ones are measured from
    /// their start when it falls inside the profile (what they used until
    /// now was not sampled), from now otherwise; gone ones are dropped.
    pub fn track(&mut self, pids: &[u32]) {
        if !self.follows_cpu {
            return;
        }
        self.read();
        for &pid in pids {
            if self.seen.contains_key(&pid) {
                continue;
            }
            let Some(ticks) = self.procfs.cpu_ticks(pid) else {
                continue;
            };
            if ticks.started >= self.began {
                self.earned += ticks.used;
                if !self.sees_new {
                    self.undiscovered_ticks += ticks.used;
                }
            }
            self.seen.insert(pid, ticks.used);
        }
        self.seen.retain(|pid, _| pids.contains(pid));
    }

    /// Sampling paused or resumed by cost control: CPU time while paused
    /// is earned and lost.
    pub fn set_paused(&mut self, paused: bool) {
        self.read();
        self.paused = paused;
    }

    pub fn add_lost(&mut self, reason: LossReason, samples: u64) {
        self.lost.add(reason, samples);
    }

    /// What a plugin's poll says it lost, and the samples it expects as
    /// taken (of processes no rescan saw).
    pub fn add_poll(&mut self, stats: &PollStats) {
        self.add_lost(LossReason::Overflow, stats.lost);
        self.add_lost(LossReason::Throttled, stats.throttled);
        self.expected_as_sampled += stats.expected_as_sampled;
    }

    /// Whether the open window has anything to report: CPU time earned or
    /// samples lost. A last window without samples is still sent then, or
    /// what the target earned while sampling was paused would go unsaid.
    pub fn has_pending(&mut self) -> bool {
        self.read();
        (self.follows_cpu && self.earned + self.expected_as_sampled > 0) || self.lost.total() > 0
    }

    /// Closes the window sampled at `frequency_hz`: its coverage, and a
    /// fresh count for the next one.
    pub fn close(&mut self, frequency_hz: u32) -> Coverage {
        self.read();
        let samples = |ticks: u64| {
            (ticks.saturating_mul(u64::from(frequency_hz)) + TICKS_PER_SECOND / 2)
                / TICKS_PER_SECOND
        };
        let mut lost = std::mem::take(&mut self.lost);
        let expected = self.follows_cpu.then(|| {
            lost.add(LossReason::Paused, samples(self.paused_ticks));
            lost.add(LossReason::Undiscovered, samples(self.undiscovered_ticks));
            samples(self.earned) + self.expected_as_sampled
        });
        self.earned = 0;
        self.expected_as_sampled = 0;
        self.paused_ticks = 0;
        self.undiscovered_ticks = 0;
        Coverage { expected, lost }
    }

    /// Adds what each tracked process used since it was last read. A
    /// process that exited keeps its last reading until a re-scan drops it.
    fn read(&mut self) {
        self.last_read = Instant::now();
        for (&pid, last) in self.seen.iter_mut() {
            let Some(ticks) = self.procfs.cpu_ticks(pid) else {
                continue;
            };
            let used = ticks.used.saturating_sub(*last);
            *last = ticks.used.max(*last);
            self.earned += used;
            if self.paused {
                self.paused_ticks += used;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;

    /// A `/proc` with an uptime and processes of given CPU and start ticks.
    struct FakeProc {
        dir: tempfile::TempDir,
    }

    impl FakeProc {
        fn new(uptime_ticks: u64) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let seconds = uptime_ticks as f64 / TICKS_PER_SECOND as f64;
            fs::write(dir.path().join("uptime"), format!("{seconds:.2} 1.00\n")).unwrap();
            FakeProc { dir }
        }

        fn set(&self, pid: u32, used: u64, started: u64) {
            let dir = self.dir.path().join(pid.to_string());
            fs::create_dir_all(&dir).unwrap();
            // utime holds all of it; stime 0.
            let stat = format!(
                "{pid} (a worker) R 1 {pid} {pid} 0 -1 0 0 0 0 0 {used} 0 0 0 20 0 1 0 {started} 0 0"
            );
            fs::write(dir.join("stat"), stat).unwrap();
        }

        fn procfs(&self) -> ProcFs {
            ProcFs::at(Path::new(self.dir.path()))
        }
    }

    #[test]
    fn a_window_expects_the_cpu_time_its_processes_used_at_the_rate() {
        let proc = FakeProc::new(10_000);
        proc.set(7, 500, 100);
        let mut meter = CoverageMeter::start(proc.procfs(), &[7], true);
        // 2 CPU seconds in the window (200 ticks) at 99 Hz: 198 samples.
        proc.set(7, 700, 100);
        let coverage = meter.close(99);
        assert_eq!(coverage.expected, Some(198));
        assert_eq!(coverage.lost.total(), 0);
        // The next window starts from there.
        assert!(!meter.has_pending());
        proc.set(7, 710, 100);
        assert!(meter.has_pending());
        assert_eq!(meter.close(99).expected, Some(10));
    }

    #[test]
    fn a_session_that_sees_new_processes_loses_nothing_to_late_discovery() {
        let proc = FakeProc::new(10_000);
        proc.set(7, 0, 100);
        let mut meter = CoverageMeter::start(proc.procfs(), &[7], true).seeing_new_processes(true);
        proc.set(8, 30, 10_050);
        meter.track(&[7, 8]);
        // A process that lived between two rescans: its samples stand for
        // its CPU time.
        meter.add_poll(&PollStats {
            samples: 5,
            expected_as_sampled: 5,
            ..PollStats::default()
        });
        let coverage = meter.close(100);
        assert_eq!(coverage.expected, Some(30 + 5));
        assert_eq!(coverage.lost.undiscovered, 0);
        assert_eq!(meter.close(100).expected, Some(0));
    }

    #[test]
    fn cpu_while_paused_and_before_discovery_is_lost_with_its_reason() {
        let proc = FakeProc::new(10_000);
        proc.set(7, 0, 100);
        let mut meter = CoverageMeter::start(proc.procfs(), &[7], true);
        proc.set(7, 100, 100);
        meter.set_paused(true);
        proc.set(7, 150, 100);
        meter.set_paused(false);
        // Found at a re-scan: started after the profile, 30 ticks in.
        proc.set(8, 30, 10_050);
        // Started before the profile: only what it uses from now counts.
        proc.set(9, 4_000, 50);
        meter.track(&[7, 8, 9]);
        proc.set(9, 4_010, 50);
        meter.add_lost(LossReason::Overflow, 4);
        let coverage = meter.close(100);
        assert_eq!(coverage.expected, Some(150 + 30 + 10));
        assert_eq!(coverage.lost.paused, 50);
        assert_eq!(coverage.lost.undiscovered, 30);
        assert_eq!(coverage.lost.overflow, 4);
        // A process gone is dropped at the next re-scan.
        meter.track(&[7]);
        proc.set(8, 90, 10_050);
        assert_eq!(meter.close(100).expected, Some(0));
    }

    #[test]
    fn plugins_whose_samples_do_not_follow_cpu_expect_nothing() {
        let proc = FakeProc::new(10_000);
        proc.set(7, 0, 100);
        let mut meter = CoverageMeter::start(proc.procfs(), &[7], false);
        proc.set(7, 300, 100);
        meter.set_paused(true);
        proc.set(7, 400, 100);
        meter.add_lost(LossReason::Overflow, 2);
        let coverage = meter.close(100);
        assert_eq!(coverage.expected, None);
        assert_eq!((coverage.lost.overflow, coverage.lost.paused), (2, 0));
    }
}
