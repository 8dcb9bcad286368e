//! What a window earned against what it holds: the samples the target
//! earned (its CPU time × the rate), and the samples lost, each with why.
//!
//! A profile that says nothing about its gaps reads as complete when it is
//! not: a frozen broker, a full ring buffer or a process found late all
//! leave fewer samples than the target earned. The agent measures what it
//! can of each and puts it in the window it concerns; what remains between
//! expected and captured plus lost is *unaccounted*, and shown as such.

use crate::wire::{Reader, WireError, Writer};

/// Why samples the target earned are not in the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LossReason {
    /// The kernel's ring buffer was full (`PERF_RECORD_LOST`).
    Overflow,
    /// The kernel throttled the event (`PERF_RECORD_THROTTLE`).
    Throttled,
    /// Cost control paused sampling (the duty cycle's off time).
    Paused,
    /// The process ran before the agent found it.
    Undiscovered,
    /// A window was sampled but never reached the pipeline (the agent's
    /// spool was full and dropped it).
    Transport,
}

impl LossReason {
    pub const ALL: [LossReason; 5] = [
        LossReason::Overflow,
        LossReason::Throttled,
        LossReason::Paused,
        LossReason::Undiscovered,
        LossReason::Transport,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LossReason::Overflow => "overflow",
            LossReason::Throttled => "throttled",
            LossReason::Paused => "paused",
            LossReason::Undiscovered => "undiscovered",
            LossReason::Transport => "transport",
        }
    }

    fn code(self) -> u8 {
        match self {
            LossReason::Overflow => 1,
            LossReason::Throttled => 2,
            LossReason::Paused => 3,
            LossReason::Undiscovered => 4,
            LossReason::Transport => 5,
        }
    }

    fn from_code(code: u8) -> Option<LossReason> {
        LossReason::ALL.into_iter().find(|r| r.code() == code)
    }
}

/// Samples lost, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Losses {
    pub overflow: u64,
    pub throttled: u64,
    pub paused: u64,
    pub undiscovered: u64,
    pub transport: u64,
}

impl Losses {
    pub fn get(&self, reason: LossReason) -> u64 {
        match reason {
            LossReason::Overflow => self.overflow,
            LossReason::Throttled => self.throttled,
            LossReason::Paused => self.paused,
            LossReason::Undiscovered => self.undiscovered,
            LossReason::Transport => self.transport,
        }
    }

    pub fn add(&mut self, reason: LossReason, samples: u64) {
        let slot = match reason {
            LossReason::Overflow => &mut self.overflow,
            LossReason::Throttled => &mut self.throttled,
            LossReason::Paused => &mut self.paused,
            LossReason::Undiscovered => &mut self.undiscovered,
            LossReason::Transport => &mut self.transport,
        };
        *slot = slot.saturating_add(samples);
    }

    pub fn total(&self) -> u64 {
        LossReason::ALL
            .into_iter()
            .fold(0u64, |sum, r| sum.saturating_add(self.get(r)))
    }

    /// The reasons with samples lost, in [`LossReason::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (LossReason, u64)> + '_ {
        LossReason::ALL
            .into_iter()
            .map(|r| (r, self.get(r)))
            .filter(|&(_, n)| n > 0)
    }

    pub fn merge(&mut self, other: &Losses) {
        for (reason, samples) in other.iter() {
            self.add(reason, samples);
        }
    }
}

/// What one window (or, summed, a profile) earned and lost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coverage {
    /// The samples the target earned: its CPU time in the window × the
    /// rate. `None` when the event is not CPU time or the plugin's samples
    /// do not follow it (JFR's execution samples skip native code).
    pub expected: Option<u64>,
    pub lost: Losses,
}

impl Coverage {
    pub fn is_empty(&self) -> bool {
        self.expected.is_none() && self.lost.total() == 0
    }

    /// The snapshot trailer: expected + 1 (0 = unknown), then the number
    /// of reasons and each reason's code and count.
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.varint(self.expected.map_or(0, |e| e.saturating_add(1)));
        let reasons: Vec<(LossReason, u64)> = self.lost.iter().collect();
        w.varint(reasons.len() as u64);
        for (reason, samples) in reasons {
            w.u8(reason.code());
            w.varint(samples);
        }
    }

    pub(crate) fn decode(r: &mut Reader<'_>, max_samples: u64) -> Result<Coverage, CoverageError> {
        let expected = match r.varint()? {
            0 => None,
            n => Some(n - 1),
        };
        if expected.is_some_and(|e| e > max_samples) {
            return Err(CoverageError::TooMany("expected"));
        }
        let count = r.count("loss reasons", 2)?;
        if count > LossReason::ALL.len() {
            return Err(CoverageError::TooManyReasons(count));
        }
        let mut lost = Losses::default();
        for _ in 0..count {
            let code = r.u8()?;
            let reason = LossReason::from_code(code).ok_or(CoverageError::UnknownReason(code))?;
            if lost.get(reason) > 0 {
                return Err(CoverageError::RepeatedReason(reason.as_str()));
            }
            let samples = r.varint()?;
            if samples > max_samples {
                return Err(CoverageError::TooMany(reason.as_str()));
            }
            lost.add(reason, samples);
        }
        Ok(Coverage { expected, lost })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CoverageError {
    #[error("{0}")]
    Wire(#[from] WireError),
    #[error("unknown loss reason code {0}")]
    UnknownReason(u8),
    #[error("loss reason {0} given twice")]
    RepeatedReason(&'static str),
    #[error("{0} loss reasons, more than there are")]
    TooManyReasons(usize),
    #[error("the window's {0} samples are over the per-window limit")]
    TooMany(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(coverage: Coverage) -> Coverage {
        let mut w = Writer::default();
        coverage.encode(&mut w);
        let bytes = w.into_inner();
        let mut r = Reader::new(&bytes);
        let back = Coverage::decode(&mut r, 1 << 40).unwrap();
        assert_eq!(r.remaining(), 0);
        back
    }

    #[test]
    fn coverage_survives_the_wire_with_unknown_and_zero_expected_apart() {
        let mut lost = Losses::default();
        lost.add(LossReason::Paused, 120);
        lost.add(LossReason::Overflow, 3);
        for expected in [None, Some(0), Some(4_950)] {
            let coverage = Coverage { expected, lost };
            assert_eq!(round_trip(coverage), coverage);
        }
        assert_eq!(round_trip(Coverage::default()), Coverage::default());
    }

    #[test]
    fn bad_trailers_are_refused() {
        let decode = |bytes: &[u8]| Coverage::decode(&mut Reader::new(bytes), 1 << 40);
        // An unknown reason, a repeated one, more reasons than exist.
        assert!(matches!(
            decode(&[0, 1, 9, 1]),
            Err(CoverageError::UnknownReason(9))
        ));
        assert!(matches!(
            decode(&[0, 2, 1, 1, 1, 1]),
            Err(CoverageError::RepeatedReason("overflow"))
        ));
        assert!(decode(&[0, 6]).is_err());
        // A count past the per-window limit.
        let mut w = Writer::default();
        w.varint((1 << 41) + 1);
        w.varint(0);
        assert!(matches!(
            decode(&w.into_inner()),
            Err(CoverageError::TooMany("expected"))
        ));
    }

    #[test]
    fn losses_sum_and_list_only_what_was_lost() {
        let mut a = Losses::default();
        a.add(LossReason::Transport, 10);
        let mut b = Losses::default();
        b.add(LossReason::Transport, 5);
        b.add(LossReason::Undiscovered, 7);
        a.merge(&b);
        assert_eq!(a.total(), 22);
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            vec![(LossReason::Undiscovered, 7), (LossReason::Transport, 15)]
        );
    }
}
