//! Samples as time: answers of time-based events (cpu-clock, wall, off-cpu,
//! lock) say how many nanoseconds one sample stands for (`unit`,
//! `period`), so tables can say how long, not only how often.

use serde_json::Value;

/// ` (1.52 s of wall time)` for an answer of `samples` samples whose unit is
/// time, else nothing.
pub(crate) fn time_of(answer: &Value, samples: u64) -> String {
    let timed = answer["unit"].as_str() == Some("nanoseconds");
    let Some(period) = answer["period"].as_f64().filter(|_| timed) else {
        return String::new();
    };
    let what = match answer["event"].as_str() {
        Some("wall") => "wall time",
        Some("off-cpu") => "time off CPU",
        Some("lock") => "time waiting for locks",
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
        let wall =
            serde_json::json!({"event": "wall", "unit": "nanoseconds", "period": 10_101_010.0});
        assert_eq!(time_of(&wall, 100), " (1.01 s of wall time)");
        let off = serde_json::json!({"event": "off-cpu", "unit": "nanoseconds", "period": 1e7});
        assert_eq!(time_of(&off, 3), " (30.0 ms of time off CPU)");
        let bytes = serde_json::json!({"event": "alloc-bytes", "unit": "bytes", "period": 512.0});
        assert_eq!(time_of(&bytes, 3), "");
        assert_eq!(time_of(&serde_json::json!({}), 3), "");
        assert_eq!(duration(812_000.0), "812 us");
    }
}
