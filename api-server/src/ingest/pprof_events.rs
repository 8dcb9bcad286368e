//! Which ODP profiles a pushed pprof profile makes: one per sample type
//! that names an ODP event, with time values in nanoseconds turned into
//! samples (ODP counts a sampled event's samples, and a sample stands for
//! one period) so totals, rates and error bounds mean what they mean for
//! the agent's own profiles.

use odp_core::model::EventKind;
use odp_core::pprof::{self, Profile};

use crate::error::ApiError;
use crate::formats::{in_samples, Parsed};

/// How one sample type becomes an ODP event's counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Measure {
    pub event: EventKind,
    pub sample_type: String,
    /// The values are nanoseconds of a sampled event: each period of them
    /// is one sample.
    pub nanos_per_sample: bool,
}

/// The sample types, by name and unit, that ODP events are counted from;
/// the first match of each event wins (Go's CPU profiles carry both
/// `samples/count` and `cpu/nanoseconds`).
const MEASURES: &[(&str, &str, EventKind, bool)] = &[
    ("samples", "count", EventKind::CpuClock, false),
    ("cpu", "nanoseconds", EventKind::CpuClock, true),
    ("wall", "nanoseconds", EventKind::Wall, true),
    ("alloc_space", "bytes", EventKind::AllocBytes, false),
    (
        "alloc_in_new_tlab_bytes",
        "bytes",
        EventKind::AllocBytes,
        false,
    ),
    ("inuse_space", "bytes", EventKind::HeapBytes, false),
    ("delay", "nanoseconds", EventKind::Lock, false),
    ("lock_time", "nanoseconds", EventKind::Lock, false),
];

/// The profiles `types` (name, unit) make, one per event.
pub(crate) fn measures(types: &[(String, String)]) -> Vec<Measure> {
    let mut out: Vec<Measure> = Vec::new();
    for &(name, unit, event, nanos_per_sample) in MEASURES {
        let present = types.iter().any(|(n, u)| n == name && u == unit);
        if present && !out.iter().any(|m| m.event == event) {
            out.push(Measure {
                event,
                sample_type: name.to_owned(),
                nanos_per_sample,
            });
        }
    }
    out
}

/// What the sample type names measure, for the message of a profile none
/// of whose types ODP counts.
pub(crate) fn known_types() -> String {
    MEASURES
        .iter()
        .map(|(name, unit, ..)| format!("{name}/{unit}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The stacks of `measure` in `profile`, as an import's parse result.
pub(crate) fn parsed(profile: &Profile, measure: &Measure) -> Result<Parsed, ApiError> {
    let decoded = pprof::from_profile(profile, Some(&measure.sample_type))
        .map_err(|e| ApiError::Unprocessable(format!("not a usable pprof profile: {e}")))?;
    let stacks = if measure.nanos_per_sample {
        let period = decoded.period_nanos.ok_or_else(|| {
            ApiError::Unprocessable(format!(
                "sample type {:?} counts nanoseconds but the profile has no sampling \
                 period in nanoseconds to count samples by",
                measure.sample_type
            ))
        })?;
        in_samples(decoded.stacks, period as u64)
    } else {
        decoded.stacks
    };
    Ok(Parsed {
        stacks,
        sample_type: decoded.sample_type,
        event: Some(measure.event),
        period_nanos: decoded.period_nanos,
        time_nanos: decoded.time_nanos,
        duration_nanos: decoded.duration_nanos,
    })
}

/// The tags an SDK wrote on every sample of `profile`, as profile labels
/// (thread ids and names describe threads, not the profile).
pub(crate) fn sample_tags(profile: &Profile) -> Result<Vec<(String, String)>, ApiError> {
    let tags = pprof::common_labels(profile)
        .map_err(|e| ApiError::BadRequest(format!("not a usable pprof profile: {e}")))?;
    Ok(tags
        .into_iter()
        .filter(|(key, _)| !key.starts_with("thread"))
        .collect())
}

#[cfg(test)]
mod tests {
    use odp_core::WeightedStack;

    use super::*;

    fn types(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, u)| (n.to_string(), u.to_string()))
            .collect()
    }

    #[test]
    fn each_event_is_counted_from_its_first_sample_type() {
        let go_cpu = measures(&types(&[("samples", "count"), ("cpu", "nanoseconds")]));
        assert_eq!(
            go_cpu,
            vec![Measure {
                event: EventKind::CpuClock,
                sample_type: "samples".into(),
                nanos_per_sample: false
            }]
        );
        let go_heap = measures(&types(&[
            ("alloc_objects", "count"),
            ("alloc_space", "bytes"),
            ("inuse_objects", "count"),
            ("inuse_space", "bytes"),
        ]));
        let events: Vec<EventKind> = go_heap.iter().map(|m| m.event).collect();
        assert_eq!(events, [EventKind::AllocBytes, EventKind::HeapBytes]);
        assert!(measures(&types(&[("goroutine", "count")])).is_empty());
    }

    #[test]
    fn nanoseconds_become_samples_of_the_period() {
        let stacks = vec![
            WeightedStack {
                frames: vec!["a".into()],
                count: 240_000_000,
            },
            WeightedStack {
                frames: vec!["b".into()],
                count: 4_000_000,
            },
            WeightedStack {
                frames: vec!["c".into()],
                count: 6_000_000,
            },
        ];
        let counts: Vec<u64> = in_samples(stacks, 10_000_000)
            .iter()
            .map(|s| s.count)
            .collect();
        assert_eq!(counts, [24, 1]);
    }
}
