//! The overhead budget: the CPU a profile costs the agent, held under a
//! share of one core by capping its sampling frequency.
//!
//! What is measured is the profile's own sampling thread, which does all
//! the per-sample work (draining ring buffers, symbolizing, aggregating);
//! publishing is once per window and shared. The kernel's cost of taking
//! samples is charged to the target, not to the agent, and is bounded by
//! the frequency itself.
//!
//! The agent's cost grows about linearly with the samples, so over budget
//! the cap becomes f · budget / used (at most halving per window, to ride
//! out a one-off spike); well under budget (below half) it relaxes by 1/0.8
//! per window back towards the requested frequency. The first window is not
//! judged: it pays once for loading the target's symbol tables.

use std::fs;
use std::time::Duration;

/// Nanoseconds per clock tick of `/proc/*/stat`.
const TICK_NANOS: u64 = 1_000_000_000 / crate::targets::TICKS_PER_SECOND;

#[derive(Debug, Clone)]
pub struct Budget {
    share: f64,
    floor_hz: u32,
    ceiling_hz: u32,
    cap_hz: u32,
    windows: u64,
}

impl Budget {
    /// A budget of `share` of one core for a profile that asked for
    /// `ceiling_hz` and may go down to `floor_hz`.
    pub fn new(share: f64, floor_hz: u32, ceiling_hz: u32) -> Self {
        Budget {
            share,
            floor_hz: floor_hz.clamp(1, ceiling_hz.max(1)),
            ceiling_hz,
            cap_hz: ceiling_hz,
            windows: 0,
        }
    }

    /// The highest frequency the budget allows now.
    pub fn cap(&self) -> u32 {
        self.cap_hz
    }

    /// Takes one window's CPU time `used` over `wall`, sampled at `hz`;
    /// returns the share of a core it used.
    pub fn observe(&mut self, used: Duration, wall: Duration, hz: u32) -> Option<f64> {
        if wall.is_zero() {
            return None;
        }
        let cpu_share = used.as_secs_f64() / wall.as_secs_f64();
        self.windows += 1;
        if self.windows == 1 {
            return Some(cpu_share);
        }
        if cpu_share > self.share {
            let scaled = f64::from(hz) * (self.share / cpu_share).max(0.5);
            let cap = (scaled.floor() as u32).min(hz.saturating_sub(1));
            self.cap_hz = cap.clamp(self.floor_hz, self.ceiling_hz);
        } else if cpu_share < self.share / 2.0 && self.cap_hz < self.ceiling_hz {
            let relaxed = (f64::from(self.cap_hz) / 0.8).ceil() as u32;
            self.cap_hz = relaxed.min(self.ceiling_hz);
        }
        Some(cpu_share)
    }
}

/// CPU time the calling thread has used: nanoseconds from
/// `/proc/thread-self/schedstat`, or clock ticks from
/// `/proc/thread-self/stat` where schedstat is missing.
pub fn thread_cpu_time() -> Option<Duration> {
    if let Ok(text) = fs::read_to_string("/proc/thread-self/schedstat") {
        if let Some(ns) = text.split_whitespace().next().and_then(|v| v.parse().ok()) {
            return Some(Duration::from_nanos(ns));
        }
    }
    let stat = fs::read_to_string("/proc/thread-self/stat").ok()?;
    parse_stat_ticks(&stat).map(|ticks| Duration::from_nanos(ticks.saturating_mul(TICK_NANOS)))
}

/// CPU time a whole process has used (all its threads), from
/// `/proc/PID/stat`; still readable once it exited until it is reaped.
pub fn process_cpu_time(pid: u32) -> Option<Duration> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_ticks(&stat).map(|ticks| Duration::from_nanos(ticks.saturating_mul(TICK_NANOS)))
}

/// utime + stime of a `/proc/*/stat` line.
fn parse_stat_ticks(stat: &str) -> Option<u64> {
    crate::targets::parse_stat_cpu(stat).map(|ticks| ticks.used)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn lowers_the_cap_over_budget_and_relaxes_under_half() {
        let mut budget = Budget::new(0.01, 19, 999);
        // The first window (symbol loading) is reported, not judged.
        assert_eq!(budget.observe(100 * MS, SEC, 999), Some(0.1));
        assert_eq!(budget.cap(), 999);
        // 2 % used of a 1 % budget: half the frequency.
        budget.observe(20 * MS, SEC, 999);
        assert_eq!(budget.cap(), 499);
        // Far over: never below half per window, nor below the floor.
        budget.observe(500 * MS, SEC, 499);
        assert_eq!(budget.cap(), 249);
        for _ in 0..10 {
            let cap = budget.cap();
            budget.observe(500 * MS, SEC, cap);
        }
        assert_eq!(budget.cap(), 19);
        // In budget but above half: stays.
        budget.observe(7 * MS, SEC, 19);
        assert_eq!(budget.cap(), 19);
        // Well under: relaxes by 1/0.8 per window up to the ceiling.
        budget.observe(MS, SEC, 19);
        assert_eq!(budget.cap(), 24);
        for _ in 0..40 {
            let cap = budget.cap();
            budget.observe(MS, SEC, cap);
        }
        assert_eq!(budget.cap(), 999);
        assert_eq!(budget.observe(MS, Duration::ZERO, 999), None);
    }

    #[test]
    fn reads_this_threads_cpu_time() {
        let before = thread_cpu_time().expect("procfs");
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let after = thread_cpu_time().unwrap();
        assert!(after >= before);
    }

    #[test]
    fn parses_stat_lines_with_spaces_in_the_command() {
        let line = "42 (a b) S 1 42 42 0 -1 4194304 100 0 0 0 7 3 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_stat_ticks(line), Some(10));
        assert_eq!(parse_stat_ticks("garbage"), None);
    }
}
