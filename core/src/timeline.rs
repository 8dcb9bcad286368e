//! A profile's timeline (its windows' headers) and what its target earned
//! against what the profile holds: the samples expected from its CPU
//! time, those captured, those lost with why, and the rest of the gap.
//! The store sums them from its rows; the API shows them as they are.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::EventKind;

/// One window of a profile on one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct TimelineWindow {
    pub host: String,
    pub window_start: DateTime<Utc>,
    pub window_end: DateTime<Utc>,
    pub event: EventKind,
    pub samples: i64,
    pub frequency_hz: i32,
    /// Samples the target earned in the window (its CPU time × the rate);
    /// null when the plugin's samples do not follow CPU time, or for
    /// windows of agents that did not measure it.
    #[serde(default)]
    pub expected: Option<i64>,
    /// Samples the target earned that the window lacks, by why.
    #[serde(default)]
    pub lost: LostSamples,
}

/// More missing than this share of what the target earned is warned
/// about.
pub const MISSING_WARNING_SHARE: f64 = 0.02;

/// Samples the target earned that are not in the profile, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct LostSamples {
    /// The sampler lost them: the kernel's ring buffer was full, or py-spy
    /// failed to read a Python stack.
    pub overflow: i64,
    /// The kernel throttled the sampling event.
    pub throttled: i64,
    /// Cost control had sampling paused (its duty cycle).
    pub paused: i64,
    /// The process ran before the agent found it.
    pub undiscovered: i64,
    /// Sampled, but dropped on the way (the agent's spool was full).
    pub transport: i64,
}

impl LostSamples {
    pub fn total(&self) -> i64 {
        self.reasons().iter().map(|(_, n)| n).sum()
    }

    /// Each reason and its samples, in a fixed order.
    pub fn reasons(&self) -> [(&'static str, i64); 5] {
        [
            ("overflow", self.overflow),
            ("throttled", self.throttled),
            ("paused", self.paused),
            ("undiscovered", self.undiscovered),
            ("transport", self.transport),
        ]
    }

    /// Both counts summed, reason by reason.
    pub fn plus(&self, other: &LostSamples) -> LostSamples {
        LostSamples {
            overflow: self.overflow.saturating_add(other.overflow),
            throttled: self.throttled.saturating_add(other.throttled),
            paused: self.paused.saturating_add(other.paused),
            undiscovered: self.undiscovered.saturating_add(other.undiscovered),
            transport: self.transport.saturating_add(other.transport),
        }
    }
}

/// A profile's (or a run's) samples against what its targets earned. The
/// default, nothing known, is what an answer of a server before coverage
/// reads as.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct SampleCoverage {
    /// Samples the targets earned (their CPU time × the rate), over the
    /// windows that measured it; null when none could (the event is not
    /// CPU time, or the plugin's samples do not follow it).
    pub expected: Option<i64>,
    /// Samples stored.
    pub captured: i64,
    pub lost: LostSamples,
    /// Expected less captured and lost: the gap no reason explains. Small
    /// negative values are sampling noise (and CPU time's 10 ms ticks).
    pub unaccounted: Option<i64>,
    /// The share of expected that is not captured, lost or unaccounted.
    pub missing_share: Option<f64>,
    /// Said when more than 2% of expected is missing.
    pub warning: Option<String>,
}

impl SampleCoverage {
    /// The coverage of `windows` summed.
    pub fn of(windows: &[TimelineWindow]) -> SampleCoverage {
        let mut lost = LostSamples::default();
        let mut expected: Option<i64> = None;
        let mut captured = 0i64;
        let mut captured_measured = 0i64;
        for window in windows {
            lost = lost.plus(&window.lost);
            captured = captured.saturating_add(window.samples);
            if let Some(e) = window.expected {
                expected = Some(expected.unwrap_or(0).saturating_add(e));
                captured_measured = captured_measured.saturating_add(window.samples);
            }
        }
        SampleCoverage::from_sums(expected, captured, captured_measured, lost)
    }

    /// From sums over windows: `captured_measured` is the samples of the
    /// windows that measured what they expected, `expected` their sum
    /// (`None` when none did).
    pub fn from_sums(
        expected: Option<i64>,
        captured: i64,
        captured_measured: i64,
        lost: LostSamples,
    ) -> SampleCoverage {
        let unaccounted = expected.map(|e| e - captured_measured - lost.total());
        let missing_share = expected
            .filter(|&e| e > 0)
            .map(|e| ((e - captured_measured) as f64 / e as f64).max(0.0));
        let warning = missing_share
            .filter(|&share| share > MISSING_WARNING_SHARE)
            .map(|share| warning(share, expected.unwrap_or(0), &lost, unaccounted));
        SampleCoverage {
            expected,
            captured,
            lost,
            unaccounted,
            missing_share,
            warning,
        }
    }
}

/// "4.1% of the samples the target earned are missing: 3.0% paused by
/// cost control, 1.1% unaccounted".
fn warning(share: f64, expected: i64, lost: &LostSamples, unaccounted: Option<i64>) -> String {
    let percent = |n: i64| 100.0 * n as f64 / expected as f64;
    let mut parts: Vec<String> = lost
        .reasons()
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(reason, n)| format!("{:.1}% {}", percent(*n), loss_in_words(reason)))
        .collect();
    if let Some(n) = unaccounted.filter(|&n| n > 0) {
        parts.push(format!("{:.1}% unaccounted", percent(n)));
    }
    format!(
        "{:.1}% of the samples the target earned are missing: {}",
        share * 100.0,
        parts.join(", ")
    )
}

/// A loss reason of [`LostSamples::reasons`] in plain words: "paused by
/// cost control".
pub fn loss_in_words(reason: &str) -> &'static str {
    match reason {
        "overflow" => "lost by the sampler (full ring buffers, failed reads)",
        "throttled" => "throttled by the kernel",
        "paused" => "paused by cost control",
        "undiscovered" => "before the agent found the process",
        _ => "dropped by the agent's spool",
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn window(samples: i64, expected: Option<i64>, lost: LostSamples) -> TimelineWindow {
        TimelineWindow {
            host: "h".into(),
            window_start: Utc.timestamp_opt(0, 0).unwrap(),
            window_end: Utc.timestamp_opt(10, 0).unwrap(),
            event: EventKind::CpuClock,
            samples,
            frequency_hz: 99,
            expected,
            lost,
        }
    }

    #[test]
    fn a_complete_profile_has_no_warning() {
        let c = SampleCoverage::of(&[
            window(990, Some(990), LostSamples::default()),
            window(985, Some(990), LostSamples::default()),
        ]);
        assert_eq!(
            (c.expected, c.captured, c.unaccounted),
            (Some(1980), 1975, Some(5))
        );
        assert!(c.missing_share.unwrap() < 0.01);
        assert_eq!(c.warning, None);
    }

    #[test]
    fn a_gap_is_split_into_its_reasons_and_the_rest() {
        let paused = LostSamples {
            paused: 300,
            ..LostSamples::default()
        };
        let c = SampleCoverage::of(&[
            window(600, Some(1000), paused),
            window(1000, Some(1000), LostSamples::default()),
        ]);
        assert_eq!((c.lost.total(), c.unaccounted), (300, Some(100)));
        assert_eq!(
            c.warning.as_deref(),
            Some(
                "20.0% of the samples the target earned are missing: \
                 15.0% paused by cost control, 5.0% unaccounted"
            )
        );
    }

    #[test]
    fn without_expected_nothing_is_claimed_missing() {
        let c = SampleCoverage::of(&[window(40, None, LostSamples::default())]);
        assert_eq!(
            (
                c.expected,
                c.captured,
                c.unaccounted,
                c.missing_share,
                c.warning
            ),
            (None, 40, None, None, None)
        );
    }
}
