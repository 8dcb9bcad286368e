//! Golden fixtures of the language plugins' parsers: real output captured
//! from the test programs in tests/data (py-spy's raw format, a JFR
//! recording) under tests/fixtures/, and the folded stacks each must parse
//! into, frame by frame with file, line and module.
//!
//! `ODP_REGENERATE_FIXTURES=1 cargo test -p odp-profiler-service --test
//! plugin_fixtures` captures the tool output afresh from the live programs
//! (needs py-spy and a JDK) and rewrites the expected files; review the
//! diff before committing it.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::Snapshot;
use odp_core::{EventKind, Frame};
use odp_profile::{flame, NameTree, Profile, Selection};
use odp_profiler_service::plugin::jvm::attach::Attach;
use odp_profiler_service::plugin::jvm::jfr::{self, SampleEvent};
use odp_profiler_service::plugin::python::raw;
use odp_profiler_service::targets::ProcFs;

mod support;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn regenerate() -> bool {
    std::env::var_os("ODP_REGENERATE_FIXTURES").is_some_and(|v| v == "1")
}

/// A frame as the expected files show it: `function (file:line) [module]`,
/// each part only when known.
fn render_frame(frame: &Frame) -> String {
    let mut out = frame.function.clone();
    match (&frame.file, frame.line) {
        (Some(file), Some(line)) => out += &format!(" ({file}:{line})"),
        (Some(file), None) => out += &format!(" ({file})"),
        (None, Some(line)) => out += &format!(" (:{line})"),
        (None, None) => {}
    }
    if !frame.module.is_empty() {
        out += &format!(" [{}]", frame.module);
    }
    out
}

/// Folded lines, sorted, identical stacks summed: `thread;frame;... count`.
fn folded<'a>(stacks: impl IntoIterator<Item = (String, &'a [Frame], u64)>) -> String {
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    for (thread, frames, count) in stacks {
        let mut line = thread;
        for frame in frames {
            line.push(';');
            line += &render_frame(frame);
        }
        *lines.entry(line).or_insert(0) += count;
    }
    lines
        .into_iter()
        .map(|(line, count)| format!("{line} {count}\n"))
        .collect()
}

/// Compares with the expected file, or rewrites it when regenerating.
fn check_golden(expected: &Path, actual: &str) {
    if regenerate() {
        fs::write(expected, actual).unwrap();
        return;
    }
    let want = fs::read_to_string(expected).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (ODP_REGENERATE_FIXTURES=1 creates it)",
            expected.display()
        )
    });
    assert!(
        want == actual,
        "{} differs from the parser's output (ODP_REGENERATE_FIXTURES=1 rewrites it):\n{actual}",
        expected.display()
    );
}

#[test]
fn py_spy_raw_output_parses_into_the_expected_stacks() {
    let input = fixtures().join("py-spy/hot_python.raw");
    if regenerate() {
        let python = support::start_python(10);
        let status = Command::new("py-spy")
            .args(["record", "--format", "raw", "--threads", "--nonblocking"])
            .args(["--rate", "100", "--duration", "2", "--pid"])
            .arg(python.id().to_string())
            .arg("--output")
            .arg(&input)
            .status()
            .expect("py-spy is needed to regenerate the fixture");
        assert!(status.success());
    }
    let text = fs::read_to_string(&input).unwrap();
    let (stacks, malformed) = raw::parse(&text);
    assert_eq!(malformed, 0);
    // Every line of a real capture is a thread's stack with file and line.
    assert!(stacks
        .iter()
        .all(|s| s.tid.is_some() && s.frames.iter().all(|f| f.line.is_some())));
    let actual = folded(stacks.iter().map(|s| {
        let thread = format!(
            "thread {} {}",
            s.tid.unwrap_or(0),
            s.thread_name.as_deref().unwrap_or("")
        );
        (thread, &s.frames[..], s.count)
    }));
    assert!(actual.contains("crunch_numbers (hot_python.py:"));
    check_golden(&fixtures().join("py-spy/hot_python.folded"), &actual);
}

/// The captured Python frames keep their file and line through the
/// agent's snapshot up to the flame graph a read answers: each node names its function's file and the
/// first of its lines the samples show (`odp_profile::sources`).
#[test]
fn py_spy_frames_reach_the_flame_graph_with_file_and_line() {
    let text = fs::read_to_string(fixtures().join("py-spy/hot_python.raw")).unwrap();
    let (stacks, _) = raw::parse(&text);
    // As the agent sends them: one window's snapshot, on the wire.
    let mut b = SnapshotBuilder::new();
    for stack in &stacks {
        b.add(&stack.frames, stack.tid.unwrap_or(0), stack.count);
    }
    let sent = b.build(SnapshotHeader {
        profile_id: uuid::Uuid::nil(),
        host: "h".into(),
        agent_id: "a".into(),
        sequence: 0,
        window_start_ms: 0,
        window_end_ms: 2_000,
        event: EventKind::Wall,
        period: 10_000_000,
        frequency_hz: 100,
    });
    let profile = Profile::from_snapshot(&Snapshot::decode(&sent.encode()).unwrap());
    let names = NameTree::new(&profile);
    let view = names.view(&profile.select(&Selection::default(), &names).samples);
    let root = flame::build(&view, usize::MAX, None);
    let node = |path: &[&str]| {
        path.iter().fold(&root, |node, name| {
            let found = node.children.iter().find(|c| c.name == *name);
            found.unwrap_or_else(|| panic!("no {name} under {}", node.name))
        })
    };
    let source = |path: &[&str]| {
        let n = node(path);
        (n.file.as_deref(), n.line)
    };
    assert_eq!(source(&["<module>"]), (Some("hot_python.py"), Some(41)));
    // main at lines 34, 35 and 36; crunch_numbers at 15 and 16.
    assert_eq!(
        source(&["<module>", "main"]),
        (Some("hot_python.py"), Some(34))
    );
    let crunch = ["<module>", "main", "crunch_numbers"];
    assert_eq!(source(&crunch), (Some("hot_python.py"), Some(15)));
    assert_eq!(node(&crunch).total, 145 + 28);
    let run = ["_bootstrap", "_bootstrap_inner", "run"];
    assert_eq!(source(&run), (Some("threading.py"), Some(982)));
    assert_eq!(root.file, None);
}

#[test]
fn jfr_recording_parses_into_the_expected_cpu_and_allocation_stacks() {
    let input = fixtures().join("jfr/hot_table.jfr");
    if regenerate() {
        capture_jfr(&input);
    }
    let bytes = fs::read(&input).unwrap();
    assert!(bytes.len() < 200_000, "keep the JFR fixture small");
    for (event, expected, must_have) in [
        (
            SampleEvent::Execution,
            "jfr/hot_table.cpu.folded",
            "HotTable.fillTable",
        ),
        (
            SampleEvent::Allocation,
            "jfr/hot_table.alloc.folded",
            "java.util.UUID.randomUUID",
        ),
    ] {
        let chunks = jfr::parse(bytes.clone(), event).unwrap();
        assert!(!chunks.is_empty());
        let samples: Vec<_> = chunks.iter().flat_map(|c| &c.samples).collect();
        assert!(!samples.is_empty(), "no {event:?} samples");
        let actual = folded(samples.iter().map(|s| {
            let thread = format!(
                "thread {} {}",
                s.tid,
                s.thread_name.as_deref().unwrap_or("")
            );
            (thread, &s.frames[..], s.weight)
        }));
        assert!(actual.contains(must_have), "{event:?}: no {must_have}");
        check_golden(&fixtures().join(expected), &actual);
    }
}

/// Records two seconds of CPU and allocation samples of the Java program.
fn capture_jfr(output: &Path) {
    let classes = support::build_java();
    let java = support::start_java(&classes, 20);
    let attach = Attach::new(ProcFs::default(), java.id(), "jcmd".into());
    let started = attach
        .command(
            "JFR.start name=fixture settings=none \
             +jdk.ExecutionSample#enabled=true +jdk.ExecutionSample#period=20ms \
             +jdk.ObjectAllocationSample#enabled=true +jdk.ObjectAllocationSample#throttle=50/s",
        )
        .unwrap();
    assert!(started.contains("Started recording"), "{started}");
    std::thread::sleep(Duration::from_secs(2));
    let dumped = attach
        .command(&format!(
            "JFR.dump name=fixture filename={}",
            output.display()
        ))
        .unwrap();
    assert!(dumped.contains("Dumped recording"), "{dumped}");
}
