//! Samples as time: answers of time-based events (cpu-clock, wall, off-cpu,
//! lock) say how many nanoseconds one sample stands for (`unit`,
//! `period`), so tables can say how long, not only how often.

use odp_client::types::SampleUnit;
use odp_core::EventKind;

/// ` (1.52 s of wall time)` for an answer of `samples` samples of `event`
/// whose unit is time, else nothing.
pub(crate) fn time_of(units: &SampleUnit, event: Option<EventKind>, samples: u64) -> String {
    let timed = units.unit == "nanoseconds";
    let Some(period) = units.period.filter(|_| timed) else {
        return String::new();
    };
    let what = match event {
        Some(EventKind::Wall) => "wall time",
        Some(EventKind::OffCpu) => "time off CPU",
        Some(EventKind::Lock) => "time waiting for locks",
        _ => "CPU time",
    };
    format!(" ({} of {what})", duration(samples as f64 * period))
}

/// Nanoseconds as `812 us`, `45.3 ms` or `12.40 s`.
pub(crate) fn duration(nanos: f64) -> String {
    if nanos >= 1e9 {
        format!("{:.2} s", nanos / 1e9)
    } else if nanos >= 1e6 {
        format!("{:.1} ms", nanos / 1e6)
    } else {
        format!("{:.0} us", nanos / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_answers_say_how_long() {
        let unit = |unit: &str, period: Option<f64>| SampleUnit {
            unit: unit.into(),
            period,
        };
        let wall = unit("nanoseconds", Some(10_101_010.0));
        assert_eq!(
            time_of(&wall, Some(EventKind::Wall), 100),
            " (1.01 s of wall time)"
        );
        let off = unit("nanoseconds", Some(1e7));
        assert_eq!(
            time_of(&off, Some(EventKind::OffCpu), 3),
            " (30.0 ms of time off CPU)"
        );
        let bytes = unit("bytes", Some(512.0));
        assert_eq!(time_of(&bytes, Some(EventKind::AllocBytes), 3), "");
        assert_eq!(time_of(&unit("samples", None), None, 3), "");
        assert_eq!(duration(812_000.0), "812 us");
    }
}
