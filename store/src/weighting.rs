//! Merging windows sampled at different rates.
//!
//! A sample stands for one period of the event: at 999 Hz 1 ms of CPU, at
//! 19 Hz 53 ms. FDA, the overhead budget and hosts with different settings
//! all make a profile or an aggregate whose windows have different periods,
//! and adding their raw counts overweights the fast windows: on the FDA
//! benchmark's phased workload the merged shares were off by 15 points.
//!
//! So a merged stack's count is its event total (count × period, summed
//! over windows) in units of the selection's mean period per sample. Shares
//! become shares of time (or bytes), and the counts still add up to the
//! number of samples taken, which is what a binomial standard error needs.
//! When every window has the same period the raw counts are returned as
//! they are.

use crate::{Result, StoreError};

/// The columns every merge query selects per group (stack, or host and
/// stack): `sum(s.count)::bigint`, `sum(s.count::float8 * n.period)`,
/// `min(n.period)`, `max(n.period)`.
pub(crate) const MERGED_COUNT_COLUMNS: &str = "sum(s.count)::bigint, \
     sum(s.count::float8 * n.period::float8), min(n.period), max(n.period)";

/// One group's row of [`MERGED_COUNT_COLUMNS`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MergedCount {
    pub(crate) samples: i64,
    /// Sum of count × period: the event total (nanoseconds, bytes...).
    pub(crate) event_total: f64,
    pub(crate) min_period: i64,
    pub(crate) max_period: i64,
}

impl From<(i64, f64, i64, i64)> for MergedCount {
    fn from((samples, event_total, min_period, max_period): (i64, f64, i64, i64)) -> Self {
        MergedCount {
            samples,
            event_total,
            min_period,
            max_period,
        }
    }
}

/// Each group's count, weighted by its windows' periods when they differ.
pub(crate) fn weighted_counts(rows: &[MergedCount]) -> Result<Vec<u64>> {
    let raw = rows
        .iter()
        .map(|r| {
            u64::try_from(r.samples)
                .map_err(|_| StoreError::Corrupt(format!("negative count {}", r.samples)))
        })
        .collect::<Result<Vec<u64>>>()?;
    let Some(scale) = samples_per_event_unit(rows) else {
        return Ok(raw);
    };
    Ok(rows
        .iter()
        .zip(raw)
        .map(|(row, raw)| {
            if raw == 0 {
                0
            } else {
                // A stack seen only in fast windows may weigh under half a
                // mean sample; it was still seen, so it stays visible.
                ((row.event_total * scale).round() as u64).max(1)
            }
        })
        .collect())
}

/// Samples per event unit over the whole selection, or `None` when the
/// periods are all the same (nothing to weight) or some are unknown (0:
/// weighting would drop those windows).
fn samples_per_event_unit(rows: &[MergedCount]) -> Option<f64> {
    let min = rows.iter().map(|r| r.min_period).min()?;
    let max = rows.iter().map(|r| r.max_period).max()?;
    if min == max || min <= 0 {
        return None;
    }
    let samples: i64 = rows.iter().map(|r| r.samples).sum();
    let event_total: f64 = rows.iter().map(|r| r.event_total).sum();
    (event_total > 0.0).then(|| samples as f64 / event_total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(samples: i64, periods: &[(i64, i64)]) -> MergedCount {
        // periods: (count, period) per window.
        assert_eq!(samples, periods.iter().map(|p| p.0).sum::<i64>());
        MergedCount {
            samples,
            event_total: periods.iter().map(|&(c, p)| (c * p) as f64).sum(),
            min_period: periods.iter().map(|p| p.1).min().unwrap(),
            max_period: periods.iter().map(|p| p.1).max().unwrap(),
        }
    }

    #[test]
    fn equal_periods_keep_raw_counts() {
        let rows = [row(3, &[(3, 1_000_000)]), row(7, &[(7, 1_000_000)])];
        assert_eq!(weighted_counts(&rows).unwrap(), vec![3, 7]);
        assert_eq!(weighted_counts(&[]).unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn different_periods_weigh_by_time_and_keep_the_total() {
        // One second at 1000 Hz on `fast` (1000 samples of 1 ms), one second
        // at 100 Hz on `slow` (100 samples of 10 ms): equal time, so equal
        // counts, and the 1100 samples taken are kept.
        let rows = [
            row(1000, &[(1000, 1_000_000)]),
            row(100, &[(100, 10_000_000)]),
        ];
        assert_eq!(weighted_counts(&rows).unwrap(), vec![550, 550]);
        // A stack in both windows.
        let rows = [
            row(600, &[(500, 1_000_000), (100, 10_000_000)]),
            row(500, &[(500, 1_000_000)]),
        ];
        let counts = weighted_counts(&rows).unwrap();
        // 1.5 s of 2 s, and 0.5 s of 2 s.
        assert_eq!(counts, vec![825, 275]);
    }

    #[test]
    fn a_stack_seen_only_fast_stays_visible_and_unknown_periods_are_not_weighted() {
        let rows = [row(1, &[(1, 1_000_000)]), row(1000, &[(1000, 50_000_000)])];
        assert_eq!(weighted_counts(&rows).unwrap(), vec![1, 1001]);
        let rows = [row(5, &[(5, 0)]), row(5, &[(5, 1_000_000)])];
        assert_eq!(weighted_counts(&rows).unwrap(), vec![5, 5]);
        let bad = MergedCount {
            samples: -1,
            event_total: 0.0,
            min_period: 1,
            max_period: 1,
        };
        assert!(weighted_counts(&[bad]).is_err());
    }
}
