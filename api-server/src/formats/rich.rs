//! The formats whose frames carry more than a name: JFR recordings (read
//! with the agent's own reader, `odp_profile::jfr`) and speedscope files
//! (`odp_core::speedscope::parse`). Both run on the blocking pool; both
//! refuse what would make them allocate far beyond the file's size.

use std::collections::HashMap;

use odp_core::speedscope::{self, WeightUnit};
use odp_core::{Frame, StackCount, ThreadInfo};
use odp_profile::jfr::recording::{self, Kind, Recording};

use super::Framed;
use crate::error::ApiError;

/// A JFR recording's samples or waits of the kind `sample_type` names
/// (`cpu`, `alloc`, `lock`); without one, CPU samples, or the first kind
/// the recording has.
pub(crate) fn parse_jfr(body: &[u8], sample_type: Option<&str>) -> Result<Framed, ApiError> {
    let wanted = match sample_type {
        Some(name) => Some(Kind::from_name(name).ok_or_else(|| {
            ApiError::Unprocessable(format!(
                "`sample_type` {name:?}: a JFR import counts {}",
                kinds_named()
            ))
        })?),
        None => None,
    };
    let mut recording = read_recording(body)?;
    let Some(kind) = wanted.or(recording.default_kind()) else {
        return Err(ApiError::Unprocessable(format!(
            "the recording has no events an import reads: {}",
            kinds_named()
        )));
    };
    if !recording.kinds_present().contains(&kind) {
        return Err(ApiError::Unprocessable(format!(
            "the recording has no {} events (sample_type {}); it has {}",
            kind.jfr_events(),
            kind.name(),
            what_it_has(&recording)
        )));
    }
    Ok(framed(&mut recording, kind))
}

/// Every kind of samples or waits a JFR recording holds, each as its own
/// stacks: what a JVM agent pushing its recordings means by them.
pub(crate) fn parse_jfr_kinds(body: &[u8]) -> Result<Vec<Framed>, ApiError> {
    let mut recording = read_recording(body)?;
    let kinds = recording.kinds_present();
    if kinds.is_empty() {
        return Err(ApiError::Unprocessable(format!(
            "the recording has no events ODP reads: {}",
            kinds_named()
        )));
    }
    Ok(kinds
        .into_iter()
        .map(|kind| framed(&mut recording, kind))
        .collect())
}

fn read_recording(body: &[u8]) -> Result<Recording, ApiError> {
    recording::read(body.to_vec())
        .map_err(|e| ApiError::Unprocessable(format!("not a usable JFR recording: {e}")))
}

/// The stacks of `kind`, taken out of `recording`.
fn framed(recording: &mut Recording, kind: Kind) -> Framed {
    let stacks = recording.kinds.remove(&kind).unwrap_or_default().stacks;
    let mut frames = Frames::default();
    let stacks = stacks
        .into_iter()
        .map(|stack| StackCount {
            frames: stack.frames.iter().map(|f| frames.intern(f)).collect(),
            tid: stack.tid,
            count: stack.weight,
        })
        .collect();
    Framed {
        frames: frames.all,
        stacks,
        threads: recording
            .threads
            .iter()
            .map(|(&tid, name)| ThreadInfo {
                tid,
                name: name.clone(),
            })
            .collect(),
        sample_type: kind.name().to_owned(),
        event: Some(kind.event()),
        period_nanos: match kind {
            Kind::Cpu => recording
                .cpu_period_nanos
                .and_then(|p| i64::try_from(p).ok()),
            // Each count is a byte or a nanosecond.
            Kind::Alloc | Kind::Lock => Some(1),
        },
        time_nanos: recording.start_nanos,
        duration_nanos: recording.duration_nanos,
    }
}

fn kinds_named() -> String {
    Kind::ALL
        .map(|k| format!("{} ({})", k.name(), k.jfr_events()))
        .join(", ")
}

/// `cpu (127 events), lock (397 events)`.
fn what_it_has(recording: &Recording) -> String {
    let present: Vec<String> = recording
        .kinds_present()
        .into_iter()
        .map(|k| format!("{} ({} events)", k.name(), recording.kinds[&k].events))
        .collect();
    if present.is_empty() {
        "none of them".to_owned()
    } else {
        present.join(", ")
    }
}

/// Frames interned by value.
#[derive(Default)]
struct Frames {
    all: Vec<Frame>,
    index: HashMap<Frame, u32>,
}

impl Frames {
    fn intern(&mut self, frame: &Frame) -> u32 {
        if let Some(&i) = self.index.get(frame) {
            return i;
        }
        self.all.push(frame.clone());
        let i = self.all.len() as u32 - 1;
        self.index.insert(frame.clone(), i);
        i
    }
}

/// A speedscope file's profiles, merged.
pub(crate) fn parse_speedscope(body: &[u8]) -> Result<Framed, ApiError> {
    let imported = speedscope::parse(body)
        .map_err(|e| ApiError::Unprocessable(format!("not a usable speedscope file: {e}")))?;
    Ok(Framed {
        frames: imported.frames,
        stacks: imported.stacks,
        threads: imported.threads,
        sample_type: imported.unit.as_str().to_owned(),
        event: Some(imported.unit.event()),
        period_nanos: match imported.unit {
            WeightUnit::Samples => None,
            // Each count is a nanosecond or a byte.
            WeightUnit::Nanoseconds | WeightUnit::Bytes => Some(1),
        },
        time_nanos: None,
        duration_nanos: None,
    })
}

#[cfg(test)]
mod tests {
    use odp_core::model::EventKind;
    use odp_core::snapshot::SnapshotHeader;
    use uuid::Uuid;

    use super::*;
    use crate::formats::framed_to_snapshot;

    const JFR: &[u8] = include_bytes!("../../../core/tests/fixtures/import-workload.jfr");
    const PY_SPY: &[u8] = include_bytes!("../../../core/tests/fixtures/py-spy.speedscope.json");

    fn header(event: EventKind) -> SnapshotHeader {
        crate::formats::imported_header(Uuid::nil(), "h", "import", event)
    }

    fn message(result: Result<Framed, ApiError>) -> String {
        match result {
            Err(ApiError::Unprocessable(m)) => m,
            other => panic!("not a 422: {other:?}"),
        }
    }

    #[test]
    fn each_kind_of_a_recording_is_a_snapshot_of_its_event() {
        let cpu = parse_jfr(JFR, None).unwrap();
        assert_eq!(
            (cpu.event, cpu.period_nanos),
            (Some(EventKind::CpuClock), Some(10_000_000))
        );
        let snapshot = framed_to_snapshot(cpu, header(EventKind::CpuClock), 0).unwrap();
        assert_eq!(snapshot.total_samples(), 127);
        assert_eq!((snapshot.period, snapshot.frequency_hz), (10_000_000, 100));
        assert!(snapshot.window_start_ms > 1_700_000_000_000);
        let spin = snapshot
            .frames
            .iter()
            .find(|f| f.function == "ImportWorkload.spin")
            .unwrap();
        assert!(spin.line.is_some() && spin.module.is_empty());
        assert!(snapshot.threads.iter().any(|t| t.name == "contender-1"));
        let alloc = parse_jfr(JFR, Some("alloc")).unwrap();
        let snapshot = framed_to_snapshot(alloc, header(EventKind::AllocBytes), 0).unwrap();
        assert_eq!(snapshot.total_samples(), 136_750_880);
        assert_eq!((snapshot.period, snapshot.frequency_hz), (1, 0));
        let lock = parse_jfr(JFR, Some("lock")).unwrap();
        assert_eq!(lock.event, Some(EventKind::Lock));
    }

    #[test]
    fn a_missing_kind_names_the_ones_the_recording_has() {
        assert!(message(parse_jfr(JFR, Some("heap"))).contains("cpu (jdk.ExecutionSample)"));
        assert!(message(parse_jfr(&JFR[..JFR.len() / 2], None)).contains("not a usable JFR"));
    }

    #[test]
    fn py_spy_captures_are_wall_nanoseconds() {
        let parsed = parse_speedscope(PY_SPY).unwrap();
        assert_eq!(parsed.event, Some(EventKind::Wall));
        let snapshot = framed_to_snapshot(parsed, header(EventKind::Wall), 5).unwrap();
        assert_eq!(snapshot.total_samples(), 4_090_000_000);
        assert_eq!((snapshot.period, snapshot.window_start_ms), (1, 5));
        assert!(snapshot
            .frames
            .iter()
            .any(|f| f.function == "crunch_numbers"
                && f.file.as_deref() == Some("speedscope_workload.py")));
        assert!(message(parse_speedscope(b"{not json")).contains("not speedscope JSON"));
    }

    /// An imported py-spy capture's flame graph names each node's file
    /// and line ("view source"): the first of a function's lines sampled.
    #[test]
    fn a_py_spy_captures_flame_graph_names_files_and_lines() {
        let parsed = parse_speedscope(PY_SPY).unwrap();
        let snapshot = framed_to_snapshot(parsed, header(EventKind::Wall), 5).unwrap();
        let profile = odp_profile::Profile::from_snapshot(&snapshot);
        let names = odp_profile::NameTree::new(&profile);
        let view = names.view(&profile.select(&Default::default(), &names).samples);
        let root = odp_profile::flame::build(&view, usize::MAX, None);
        let mut located = Vec::new();
        let mut todo = vec![&root];
        while let Some(node) = todo.pop() {
            if node.name == "crunch_numbers" || node.name == "light_work" {
                located.push((node.name.as_str(), node.file.as_deref(), node.line));
            }
            todo.extend(&node.children);
        }
        located.sort();
        // crunch_numbers was sampled at lines 15 and 16.
        assert_eq!(
            located,
            [
                ("crunch_numbers", Some("speedscope_workload.py"), Some(15)),
                ("light_work", Some("speedscope_workload.py"), Some(21)),
            ]
        );
        assert_eq!((root.file, root.line), (None, None));
    }
}
