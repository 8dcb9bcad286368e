//! The files and payloads other profilers write, read into stacks ODP
//! stores: pprof and folded stacks here, JFR recordings and speedscope
//! files in [`rich`]. Pure (no HTTP, no database): the import route and
//! the ingest APIs (OTLP, Pyroscope) both read through it, and both store
//! what [`framed_to_snapshot`] builds.

pub(crate) mod rich;

use odp_core::model::EventKind;
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader, MAX_STACK_DEPTH};
use odp_core::{folded, pprof, Frame, Snapshot, StackCount, ThreadInfo, WeightedStack};
use uuid::Uuid;

use crate::error::ApiError;

/// The host samples are stored under when the file or client names none.
pub(crate) const DEFAULT_HOST: &str = "imported";

/// Stacks read from an uploaded file, and what the file says about them.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Parsed {
    pub stacks: Vec<WeightedStack>,
    /// The sample type the counts come from (pprof).
    pub sample_type: String,
    /// What the counts measure, when the file tells.
    pub event: Option<EventKind>,
    pub period_nanos: Option<i64>,
    pub time_nanos: Option<i64>,
    pub duration_nanos: Option<i64>,
}

/// Stacks of whole frames (module, file and line kept), by index into a
/// frame table, on threads: what JFR and speedscope imports read, and
/// what [`Parsed`] stacks become.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Framed {
    pub frames: Vec<Frame>,
    /// Frame indexes root first, with their thread (0: unknown).
    pub stacks: Vec<StackCount>,
    pub threads: Vec<ThreadInfo>,
    /// What the counts are, for messages (a pprof sample type, a JFR
    /// kind, a speedscope unit).
    pub sample_type: String,
    pub event: Option<EventKind>,
    /// What one count stands for: a sampling period, or 1 when the counts
    /// are the event's own unit (bytes, nanoseconds).
    pub period_nanos: Option<i64>,
    pub time_nanos: Option<i64>,
    pub duration_nanos: Option<i64>,
}

impl From<Parsed> for Framed {
    fn from(parsed: Parsed) -> Framed {
        let mut frames = Vec::new();
        let mut index: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        let stacks = parsed
            .stacks
            .into_iter()
            .map(|stack| StackCount {
                frames: stack
                    .frames
                    .into_iter()
                    .map(|name| {
                        *index.entry(name).or_insert_with_key(|name| {
                            frames.push(Frame::function(name.clone()));
                            frames.len() as u32 - 1
                        })
                    })
                    .collect(),
                tid: 0,
                count: stack.count,
            })
            .collect();
        Framed {
            frames,
            stacks,
            threads: Vec::new(),
            sample_type: parsed.sample_type,
            event: parsed.event,
            period_nanos: parsed.period_nanos,
            time_nanos: parsed.time_nanos,
            duration_nanos: parsed.duration_nanos,
        }
    }
}

pub(crate) fn parse_folded(body: &[u8]) -> Result<Parsed, ApiError> {
    let text = std::str::from_utf8(body)
        .map_err(|e| ApiError::Unprocessable(format!("folded stacks must be UTF-8 text: {e}")))?;
    let stacks = folded::parse_folded(text)
        .map_err(|e| ApiError::Unprocessable(format!("not folded stacks: {e}")))?;
    Ok(Parsed {
        stacks,
        sample_type: "samples".into(),
        event: Some(EventKind::CpuClock),
        ..Parsed::default()
    })
}

pub(crate) fn parse_pprof(body: &[u8], sample_type: Option<&str>) -> Result<Parsed, ApiError> {
    let decoded = pprof::decode(body, sample_type)
        .map_err(|e| ApiError::Unprocessable(format!("not a usable pprof profile: {e}")))?;
    let event = event_of_sample_type(&decoded.sample_type);
    // A sampled event's time in nanoseconds (Go's `cpu`): each period of
    // it is one sample, as ODP counts the event.
    let sampled = matches!(event, Some(EventKind::CpuClock | EventKind::Wall));
    let stacks = match decoded.period_nanos {
        Some(period) if sampled && decoded.unit == "nanoseconds" => {
            in_samples(decoded.stacks, period as u64)
        }
        _ => decoded.stacks,
    };
    Ok(Parsed {
        event,
        stacks,
        sample_type: decoded.sample_type,
        period_nanos: decoded.period_nanos,
        time_nanos: decoded.time_nanos,
        duration_nanos: decoded.duration_nanos,
    })
}

/// Nanosecond values as samples of `period` ns, rounded to the nearest;
/// a stack left with none is dropped.
pub(crate) fn in_samples(stacks: Vec<WeightedStack>, period: u64) -> Vec<WeightedStack> {
    stacks
        .into_iter()
        .filter_map(|mut stack| {
            stack.count = (stack.count + period / 2) / period;
            (stack.count > 0).then_some(stack)
        })
        .collect()
}

/// What a pprof sample type measures, for the names Go, perf converters
/// and ODP's own export use.
pub(crate) fn event_of_sample_type(name: &str) -> Option<EventKind> {
    match name {
        "samples" | "cpu" => Some(EventKind::CpuClock),
        "alloc_space" => Some(EventKind::AllocBytes),
        "inuse_space" => Some(EventKind::HeapBytes),
        other => other.parse().ok(),
    }
}

/// The header of a profile no agent sampled: its one window's times and
/// rate come from the file, in [`framed_to_snapshot`].
pub(crate) fn imported_header(
    profile_id: Uuid,
    host: &str,
    agent_id: &str,
    event: EventKind,
) -> SnapshotHeader {
    SnapshotHeader {
        profile_id,
        host: host.to_owned(),
        agent_id: agent_id.to_owned(),
        sequence: 0,
        window_start_ms: 0,
        window_end_ms: 0,
        event,
        period: 0,
        frequency_hz: 0,
    }
}

/// The snapshot an import is stored as: one window spanning the file's
/// time range (or the instant `now_ms` when it has none).
pub(crate) fn framed_to_snapshot(
    parsed: Framed,
    mut header: SnapshotHeader,
    now_ms: i64,
) -> Result<Snapshot, ApiError> {
    let invalid = |m: String| Err(ApiError::Unprocessable(m));
    let mut builder = SnapshotBuilder::new();
    let mut total: u64 = 0;
    // Each frame of the file interned once, when a stack first uses it.
    let mut interned: Vec<Option<u32>> = vec![None; parsed.frames.len()];
    for (i, stack) in parsed.stacks.iter().enumerate() {
        if stack.frames.len() > MAX_STACK_DEPTH {
            return invalid(format!(
                "stack {} is {} frames deep, more than {MAX_STACK_DEPTH}",
                i + 1,
                stack.frames.len()
            ));
        }
        total = match total.checked_add(stack.count) {
            Some(t) if t <= i64::MAX as u64 => t,
            _ => {
                return invalid(format!(
                    "the sample counts add up to more than {}",
                    i64::MAX
                ))
            }
        };
        let mut indexes = Vec::with_capacity(stack.frames.len());
        for &f in &stack.frames {
            let (Some(frame), Some(id)) =
                (parsed.frames.get(f as usize), interned.get_mut(f as usize))
            else {
                return invalid(format!(
                    "stack {} refers to frame {f}, which the file does not define",
                    i + 1
                ));
            };
            indexes.push(*id.get_or_insert_with(|| builder.intern(&storable(frame))));
        }
        builder.add_indexes(indexes, stack.tid, stack.count);
    }
    for thread in &parsed.threads {
        builder.name_thread(thread.tid, without_nul(&thread.name));
    }
    if builder.samples() == 0 {
        return invalid(format!(
            "the file has no samples (of sample type {:?})",
            parsed.sample_type
        ));
    }
    // A timestamp outside what Postgres and chrono represent is not one.
    const YEAR_9999_MS: i64 = 253_402_300_799_000;
    let start_ms = parsed
        .time_nanos
        .map(|t| t / 1_000_000)
        .filter(|t| (0..YEAR_9999_MS).contains(t))
        .unwrap_or(now_ms);
    let duration_ms = parsed
        .duration_nanos
        .map(|d| d / 1_000_000)
        .filter(|&d| (0..=366 * 24 * 3600 * 1000).contains(&d))
        .unwrap_or(0);
    header.window_start_ms = start_ms;
    header.window_end_ms = (start_ms + duration_ms).min(YEAR_9999_MS);
    if let Some(period) = parsed.period_nanos.filter(|&p| p > 0) {
        header.period = period as u64;
        // A count of the event's own unit is no sampling rate.
        if period > 1 {
            header.frequency_hz = u32::try_from((1_000_000_000 + period / 2) / period).unwrap_or(0);
        }
    }
    Ok(builder.build(header))
}

/// Postgres text cannot hold NUL.
fn without_nul(text: &str) -> String {
    text.replace('\0', "\u{fffd}")
}

/// A frame as the store can keep it.
fn storable(frame: &Frame) -> Frame {
    Frame {
        function: without_nul(&frame.function),
        module: without_nul(&frame.module),
        file: frame.file.as_deref().map(without_nul),
        line: frame.line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_snapshot(
        parsed: Parsed,
        header: SnapshotHeader,
        now_ms: i64,
    ) -> Result<Snapshot, ApiError> {
        framed_to_snapshot(Framed::from(parsed), header, now_ms)
    }

    fn header() -> SnapshotHeader {
        imported_header(Uuid::nil(), "h", "import", EventKind::CpuClock)
    }

    #[test]
    fn folded_text_becomes_one_window_at_the_upload_time() {
        let parsed = parse_folded(b"main;hot 6\nmain;warm 3\nmain;hot 1\n").unwrap();
        assert_eq!(parsed.event, Some(EventKind::CpuClock));
        let snapshot = to_snapshot(parsed, header(), 1_000).unwrap();
        assert_eq!(snapshot.total_samples(), 10);
        assert_eq!(snapshot.stacks.len(), 2, "equal stacks merge");
        assert_eq!(
            (snapshot.window_start_ms, snapshot.window_end_ms),
            (1_000, 1_000)
        );
        assert_eq!(snapshot.frames.len(), 3);
    }

    #[test]
    fn pprof_times_and_period_carry_over() {
        let bytes = pprof::encode(
            &[WeightedStack {
                frames: vec!["main".into(), "nul\0name".into()],
                count: 4,
            }],
            &pprof::PprofMeta {
                event: Some(odp_core::EventKind::CpuClock),
                period_nanos: Some(10_101_010),
                duration_nanos: Some(2_500_000_000),
                time_nanos: Some(1_700_000_000_123_456_789),
            },
        );
        let parsed = parse_pprof(&bytes, None).unwrap();
        let snapshot = to_snapshot(parsed, header(), 0).unwrap();
        assert_eq!(snapshot.window_start_ms, 1_700_000_000_123);
        assert_eq!(snapshot.window_end_ms, 1_700_000_002_623);
        assert_eq!((snapshot.period, snapshot.frequency_hz), (10_101_010, 99));
        assert_eq!(snapshot.frames[1].function, "nul\u{fffd}name");
    }

    #[test]
    fn bad_files_are_unprocessable() {
        let unprocessable = |r: Result<Parsed, ApiError>| {
            assert!(matches!(r, Err(ApiError::Unprocessable(_))), "{r:?}");
        };
        unprocessable(parse_folded(b"\xff\xfe not text"));
        unprocessable(parse_folded(b"main;x many\n"));
        unprocessable(parse_pprof(b"main;x 1\n", None));
        let empty = to_snapshot(parse_folded(b"main 0\n\n").unwrap(), header(), 0);
        assert!(matches!(empty, Err(ApiError::Unprocessable(_))));
        let huge = format!("a {}\nb {}\n", i64::MAX, 1);
        let overflow = to_snapshot(parse_folded(huge.as_bytes()).unwrap(), header(), 0);
        assert!(matches!(overflow, Err(ApiError::Unprocessable(_))));
        let deep = format!("{} 1\n", vec!["f"; MAX_STACK_DEPTH + 1].join(";"));
        let deep = to_snapshot(parse_folded(deep.as_bytes()).unwrap(), header(), 0);
        assert!(matches!(deep, Err(ApiError::Unprocessable(_))));
    }

    #[test]
    fn sample_types_name_their_events() {
        assert_eq!(event_of_sample_type("samples"), Some(EventKind::CpuClock));
        assert_eq!(event_of_sample_type("cycles"), Some(EventKind::Cycles));
        assert_eq!(
            event_of_sample_type("inuse_space"),
            Some(EventKind::HeapBytes)
        );
        assert_eq!(event_of_sample_type("contentions"), None);
    }
}
