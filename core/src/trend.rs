//! A function's trend: its share of a service's samples, and the CPU (or
//! wall time) it takes, step by step over a time range, each with its
//! standard error.
//!
//! The samples of one window are not independent draws: a process that
//! spends a second in a function fills a window with it. So a step's share
//! is a ratio estimate over its windows, the clusters: `p = Σm / Σn` with
//! the variance `k/(k−1) · Σ(mᵢ − p·nᵢ)² / (Σn)²` over its `k` windows
//! (`mᵢ` of `nᵢ` samples in the function). A step of one window falls
//! back to the binomial `p(1−p)/n`, which is all that window can tell.
//! The rate (event units per second of the step: cores, for CPU time) is
//! the function's event total over the step's length, its error the same
//! clustered spread of the windows' totals.

use serde::{Deserialize, Serialize};

use crate::model::EventKind;

/// One stored window's samples, and those in the function.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCount {
    pub host: String,
    pub start_ms: i64,
    pub end_ms: i64,
    /// Event units one sample stands for (nanoseconds of CPU).
    pub period: u64,
    pub samples: u64,
    pub matched: u64,
}

/// One step of a trend.
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendPoint {
    /// Unix milliseconds: the step is `[start_ms, end_ms)`.
    pub start_ms: i64,
    pub end_ms: i64,
    /// Windows (whose start falls in the step) and the hosts they came
    /// from.
    pub windows: u64,
    pub hosts: u64,
    pub samples: u64,
    /// Samples with the function on their stack.
    pub matched: u64,
    /// `matched / samples`, `None` without samples.
    pub share: Option<f64>,
    pub share_stderr: Option<f64>,
    /// The function's samples per second of the step.
    pub samples_per_second: f64,
    /// For CPU time: the cores the function kept busy on average over the
    /// step, summed over hosts.
    pub cores: Option<f64>,
    pub cores_stderr: Option<f64>,
}

/// The trend of `windows` over `[since_ms, until_ms)` in steps of
/// `step_ms`, each window counted in the step its start falls in. Steps
/// without windows are kept (with no share), so a chart shows the gap.
pub fn trend(
    windows: &[WindowCount],
    event: EventKind,
    since_ms: i64,
    until_ms: i64,
    step_ms: i64,
) -> Vec<TrendPoint> {
    assert!(step_ms > 0, "a step of {step_ms} ms");
    let steps = ((until_ms - since_ms).max(0) as u64).div_ceil(step_ms as u64) as usize;
    let mut grouped: Vec<Vec<&WindowCount>> = vec![Vec::new(); steps];
    for window in windows {
        if window.start_ms < since_ms || window.start_ms >= until_ms {
            continue;
        }
        grouped[((window.start_ms - since_ms) / step_ms) as usize].push(window);
    }
    grouped
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let start_ms = since_ms + i as i64 * step_ms;
            point(step, event, start_ms, (start_ms + step_ms).min(until_ms))
        })
        .collect()
}

fn point(windows: &[&WindowCount], event: EventKind, start_ms: i64, end_ms: i64) -> TrendPoint {
    let samples: u64 = windows.iter().map(|w| w.samples).sum();
    let matched: u64 = windows.iter().map(|w| w.matched).sum();
    let mut hosts: Vec<&str> = windows.iter().map(|w| w.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let seconds = (end_ms - start_ms) as f64 / 1000.0;
    let share = (samples > 0).then(|| matched as f64 / samples as f64);
    let share_stderr = share.map(|p| share_stderr(windows, p, samples));
    // Event units per second of the step, and their clustered spread.
    let totals: Vec<f64> = windows
        .iter()
        .map(|w| w.matched as f64 * w.period as f64)
        .collect();
    let rate = totals.iter().sum::<f64>() / seconds;
    let rate_stderr = total_stderr(&totals, windows) / seconds;
    let is_cpu = matches!(event, EventKind::CpuClock);
    TrendPoint {
        start_ms,
        end_ms,
        windows: windows.len() as u64,
        hosts: hosts.len() as u64,
        samples,
        matched,
        share,
        share_stderr,
        samples_per_second: matched as f64 / seconds,
        cores: is_cpu.then(|| rate / 1e9),
        cores_stderr: is_cpu.then(|| rate_stderr / 1e9),
    }
}

/// The ratio estimate's standard error over the windows as clusters, or
/// the binomial one for a single window.
fn share_stderr(windows: &[&WindowCount], p: f64, samples: u64) -> f64 {
    let n = samples as f64;
    let clusters: Vec<&&WindowCount> = windows.iter().filter(|w| w.samples > 0).collect();
    let k = clusters.len() as f64;
    if clusters.len() < 2 {
        return (p * (1.0 - p) / n).sqrt();
    }
    let spread: f64 = clusters
        .iter()
        .map(|w| (w.matched as f64 - p * w.samples as f64).powi(2))
        .sum();
    (k / (k - 1.0) * spread).sqrt() / n
}

/// The standard error of a sum of per-window totals: the windows' spread
/// around their mean, scaled to their number; for one window, its
/// Poisson count's.
fn total_stderr(totals: &[f64], windows: &[&WindowCount]) -> f64 {
    match totals.len() {
        0 => 0.0,
        1 => (windows[0].matched as f64).sqrt() * windows[0].period as f64,
        k => {
            let k = k as f64;
            let mean = totals.iter().sum::<f64>() / k;
            let variance = totals.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (k - 1.0);
            (variance * k).sqrt()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10 s windows at 99 Hz (10,101,010 ns a sample).
    fn window(host: &str, start_s: i64, samples: u64, matched: u64) -> WindowCount {
        WindowCount {
            host: host.into(),
            start_ms: start_s * 1000,
            end_ms: (start_s + 10) * 1000,
            period: 10_101_010,
            samples,
            matched,
        }
    }

    #[test]
    fn steps_sum_their_windows_and_keep_the_gaps() {
        let windows = [
            window("a", 0, 990, 594),
            window("b", 0, 990, 600),
            window("a", 10, 990, 588),
            // None in [20, 30).
            window("a", 30, 990, 300),
            // Outside the range.
            window("a", 40, 990, 990),
        ];
        let points = trend(&windows, EventKind::CpuClock, 0, 40_000, 20_000);
        assert_eq!(points.len(), 2);
        let first = &points[0];
        assert_eq!((first.windows, first.hosts), (3, 2));
        assert_eq!((first.samples, first.matched), (2970, 1782));
        assert!((first.share.unwrap() - 0.6).abs() < 1e-9);
        // 1,782 samples of 10.1 ms over 20 s: 0.9 cores.
        assert!((first.cores.unwrap() - 0.9).abs() < 1e-3, "{first:?}");
        assert!((first.samples_per_second - 89.1).abs() < 1e-9);
        let second = &points[1];
        assert_eq!((second.windows, second.matched), (1, 300));
        // One window: the binomial error.
        let p: f64 = 300.0 / 990.0;
        assert!((second.share_stderr.unwrap() - (p * (1.0 - p) / 990.0).sqrt()).abs() < 1e-12);
        let empty = trend(&[], EventKind::CpuClock, 0, 30_000, 10_000);
        assert_eq!(empty.len(), 3);
        assert!(empty.iter().all(|p| p.share.is_none() && p.samples == 0));
    }

    #[test]
    fn windows_that_disagree_widen_the_error_beyond_the_binomial() {
        // Same pooled share (0.5), once from steady windows and once from
        // windows that are all or nothing: the second is far less sure.
        let steady: Vec<WindowCount> = (0..6).map(|i| window("a", i * 10, 100, 50)).collect();
        let bursty: Vec<WindowCount> = (0..6)
            .map(|i| window("a", i * 10, 100, if i % 2 == 0 { 100 } else { 0 }))
            .collect();
        let steady = &trend(&steady, EventKind::CpuClock, 0, 60_000, 60_000)[0];
        let bursty = &trend(&bursty, EventKind::CpuClock, 0, 60_000, 60_000)[0];
        assert_eq!(steady.share, bursty.share);
        let binomial = (0.25f64 / 600.0).sqrt();
        assert!(steady.share_stderr.unwrap() < binomial, "{steady:?}");
        assert!(bursty.share_stderr.unwrap() > 10.0 * binomial, "{bursty:?}");
        assert!(bursty.cores_stderr.unwrap() > steady.cores_stderr.unwrap());
    }

    #[test]
    fn the_last_step_ends_at_the_range_and_wall_time_has_no_cores() {
        let points = trend(&[window("a", 0, 10, 5)], EventKind::Wall, 0, 25_000, 10_000);
        assert_eq!(points.last().unwrap().end_ms, 25_000);
        assert!(points[0].cores.is_none());
    }
}
