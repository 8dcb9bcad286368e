//! What a sample counts, and when: its values or timestamps in the
//! shapes OTLP allows (one aggregated value, one value per timestamp, or
//! timestamps alone, each counting 1), and the profile's time range its
//! timestamps must lie in.

use opentelemetry_proto::tonic::profiles::v1development::{Profile, Sample};

use crate::ingest::pprof_events::Measure;

/// A sample's value: its one aggregated value, the sum of its values
/// per timestamp, or one per timestamp.
pub(super) fn observed(sample: &Sample, measure: &Measure) -> Result<u64, String> {
    let (values, timestamps) = (&sample.values, &sample.timestamps_unix_nano);
    match (values.len(), timestamps.len()) {
        (0, 0) => return Err("it has neither values nor timestamps".into()),
        (0, n) if measure.nanos_per_sample => {
            return Err(format!(
                "it has {n} timestamps and no values: sample type {:?} needs the \
                 nanoseconds each one stands for",
                measure.sample_type
            ))
        }
        (0, n) => return Ok(n as u64),
        (v, 0) if v > 1 => {
            return Err(format!(
                "it has {v} values and no timestamps: an OTLP profile has one sample type, so \
                 a sample holds one value, or one per timestamp (several sample types in one \
                 profile are not supported)"
            ))
        }
        (v, t) if t != 0 && v != t => {
            return Err(format!(
                "it has {v} values for {t} timestamps: they must pair up"
            ))
        }
        _ => {}
    }
    values.iter().try_fold(0u64, |sum, &v| {
        let v = u64::try_from(v).map_err(|_| format!("value {v} is negative"))?;
        sum.checked_add(v)
            .ok_or_else(|| format!("the values add up to more than {}", u64::MAX))
    })
}

/// The profile's time range, and the range its samples' timestamps span.
pub(super) struct TimeRange {
    start: u64,
    /// `None` when the profile has no duration.
    end: Option<u64>,
    first: Option<u64>,
    last: Option<u64>,
}

impl TimeRange {
    pub(super) fn of(profile: &Profile) -> Result<TimeRange, String> {
        let start = profile.time_unix_nano;
        if i64::try_from(start).is_err() {
            return Err(format!("time_unix_nano {start} is out of range"));
        }
        let end = match profile.duration_nano {
            0 => None,
            d => Some(
                start
                    .checked_add(d)
                    .filter(|&end| i64::try_from(end).is_ok())
                    .ok_or_else(|| format!("duration_nano {d} is out of range"))?,
            ),
        };
        Ok(TimeRange {
            start,
            end,
            first: None,
            last: None,
        })
    }

    /// Fails when one of the sample's timestamps lies outside the
    /// profile: before it started, or after it ended (its end is
    /// included, for producers that round it).
    pub(super) fn check(&mut self, sample: &Sample) -> Result<(), String> {
        for &t in &sample.timestamps_unix_nano {
            let before = self.start != 0 && t < self.start;
            if before || self.end.is_some_and(|end| t > end) {
                return Err(format!(
                    "timestamp {t} lies outside the profile's time range [{}, {}]",
                    self.start,
                    self.end.map_or("…".to_owned(), |e| e.to_string())
                ));
            }
            self.first = Some(self.first.map_or(t, |f| f.min(t)));
            self.last = Some(self.last.map_or(t, |l| l.max(t)));
        }
        Ok(())
    }

    /// The stored window: the profile's own, else what its samples span.
    pub(super) fn window(&self) -> (Option<i64>, Option<i64>) {
        let start = match self.start {
            0 => self.first,
            s => Some(s),
        };
        let end = self.end.or(self.last);
        let duration = match (start, end) {
            (Some(s), Some(e)) if e > s => Some((e - s) as i64),
            _ => None,
        };
        (start.map(|s| s as i64), duration)
    }
}
