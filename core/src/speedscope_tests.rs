//! [`parse`] against real producers' files (core/tests/fixtures, written
//! by make_speedscope_fixture.sh there) and arbitrary input.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::model::{EventKind, Frame};
use crate::snapshot::MAX_STACK_DEPTH;

/// py-spy 0.4.2 sampling speedscope_workload.py at 100 Hz for 3 s: two
/// threads' profiles, weights in seconds.
const PY_SPY: &[u8] = include_bytes!("../tests/fixtures/py-spy.speedscope.json");
/// The `speedscope` package (PyPI, 1.0) tracing evented_workload.py.
const EVENTED: &[u8] = include_bytes!("../tests/fixtures/pyspeedscope.evented.json");

fn names(imported: &Imported) -> Vec<&str> {
    imported
        .frames
        .iter()
        .map(|f| f.function.as_str())
        .collect()
}

/// What a stack's frames are called, root first.
fn stack_names(imported: &Imported, stack: &[u32]) -> Vec<String> {
    stack
        .iter()
        .map(|&i| imported.frames[i as usize].function.clone())
        .collect()
}

#[test]
fn a_py_spy_capture_reads_with_its_exact_total() {
    let imported = parse(PY_SPY).unwrap();
    // The weights as the file has them: seconds, added up and rounded once.
    let file: Value = serde_json::from_slice(PY_SPY).unwrap();
    let seconds: f64 = file["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["weights"].as_array().unwrap())
        .map(|w| w.as_f64().unwrap())
        .sum();
    assert_eq!(imported.total, (seconds * 1e9).round() as u64);
    // py-spy's own summary: "Samples: 409", each 10 ms at 100 Hz.
    assert_eq!(imported.total, 409 * 10_000_000);
    let summed: u64 = imported.stacks.iter().map(|s| s.count).sum();
    assert_eq!(summed, imported.total);
    assert_eq!(imported.unit, WeightUnit::Nanoseconds);
    assert_eq!(imported.unit.event(), EventKind::Wall);
    assert_eq!(imported.profiles, 2);
    // py-spy names each profile after its thread.
    let threads: Vec<(u32, &str)> = imported
        .threads
        .iter()
        .map(|t| (t.tid, t.name.as_str()))
        .collect();
    assert_eq!(threads, vec![(7352, "hasher")]);
    let tids: std::collections::BTreeSet<u32> = imported.stacks.iter().map(|s| s.tid).collect();
    assert_eq!(tids.into_iter().collect::<Vec<_>>(), vec![7349, 7352]);
    // Frames as the python plugin names py-spy's.
    let crunch = imported
        .frames
        .iter()
        .find(|f| f.function == "crunch_numbers")
        .unwrap();
    assert_eq!(crunch.file.as_deref(), Some("speedscope_workload.py"));
    assert_eq!(crunch.module, "speedscope_workload");
    assert!(matches!(crunch.line, Some(15 | 16)), "{crunch:?}");
    let run = imported
        .frames
        .iter()
        .find(|f| f.function == "run")
        .unwrap();
    assert_eq!(
        (run.file.as_deref(), run.module.as_str()),
        (Some("threading.py"), "threading")
    );
    for name in ["hash_block", "light_work", "main", "<module>"] {
        assert!(names(&imported).contains(&name), "no {name}");
    }
    // Most of the main thread's time is in crunch_numbers, root first.
    let hot: u64 = imported
        .stacks
        .iter()
        .filter(|s| {
            stack_names(&imported, &s.frames).last().map(String::as_str) == Some("crunch_numbers")
        })
        .map(|s| s.count)
        .sum();
    assert!(hot > imported.total / 3, "{hot} of {}", imported.total);
}

#[test]
fn an_evented_trace_weighs_each_stack_by_its_self_time() {
    let imported = parse(EVENTED).unwrap();
    let file: Value = serde_json::from_slice(EVENTED).unwrap();
    let events = file["profiles"][0]["events"].as_array().unwrap();
    let at = |e: &Value| e["at"].as_u64().unwrap();
    // main is open from the first event to the last: every nanosecond in
    // between belongs to exactly one stack.
    let (first, last) = (events.first().unwrap(), events.last().unwrap());
    assert_eq!(
        (first["type"].as_str(), last["type"].as_str()),
        (Some("O"), Some("C"))
    );
    assert_eq!(imported.total, at(last) - at(first));
    assert_eq!(imported.total, 20_992_269);
    assert_eq!(imported.unit, WeightUnit::Nanoseconds);
    assert_eq!(names(&imported), vec!["main", "fib", "busy"]);
    let main = &imported.frames[0];
    assert_eq!(main.file.as_deref(), Some("evented_workload.py"));
    assert_eq!(main.line, Some(25));
    // busy spins 1 ms three times, in C calls the tracer does not see:
    // its own stack holds that time.
    let busy: u64 = imported
        .stacks
        .iter()
        .filter(|s| stack_names(&imported, &s.frames) == ["main", "busy"])
        .map(|s| s.count)
        .sum();
    assert!((3_000_000..imported.total).contains(&busy), "busy {busy}");
    // fib(8) calls fib(7) and so down to fib(1): 8 frames under main.
    let deepest = imported
        .stacks
        .iter()
        .map(|s| s.frames.len())
        .max()
        .unwrap();
    assert_eq!(deepest, 9);
}

/// An evented profile built from the real py-spy capture's frames: the
/// same stacks as its first samples, opened and closed at 10 ms steps.
#[test]
fn evented_and_sampled_agree_on_the_same_stacks() {
    let mut file: Value = serde_json::from_slice(PY_SPY).unwrap();
    let samples = file["profiles"][0]["samples"].as_array().unwrap()[..20].to_vec();
    let mut events = Vec::new();
    let mut open: Vec<u64> = Vec::new();
    for (i, sample) in samples.iter().enumerate() {
        let stack: Vec<u64> = sample
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_u64().unwrap())
            .collect();
        let common = open.iter().zip(&stack).take_while(|(a, b)| a == b).count();
        let t = i as u64 * 10;
        while open.len() > common {
            events.push(json!({"type": "C", "at": t, "frame": open.pop().unwrap()}));
        }
        for &frame in &stack[common..] {
            events.push(json!({"type": "O", "at": t, "frame": frame}));
            open.push(frame);
        }
    }
    while let Some(frame) = open.pop() {
        events.push(json!({"type": "C", "at": 200, "frame": frame}));
    }
    file["profiles"] = json!([{
        "type": "evented", "name": "Thread 1 \"main\"", "unit": "milliseconds",
        "startValue": 0, "endValue": 200, "events": events,
    }]);
    let evented = parse(&serde_json::to_vec(&file).unwrap()).unwrap();
    file["profiles"] = json!([{
        "type": "sampled", "name": "Thread 1 \"main\"", "unit": "milliseconds",
        "startValue": 0, "endValue": 200, "samples": samples, "weights": vec![10; 20],
    }]);
    let sampled = parse(&serde_json::to_vec(&file).unwrap()).unwrap();
    assert_eq!(evented.total, 200_000_000);
    assert_eq!(evented, sampled);
}

fn file(profiles: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "$schema": SCHEMA,
        "shared": {"frames": [{"name": "main"}, {"name": "work", "file": "/app/lib.so"}]},
        "profiles": profiles,
    }))
    .unwrap()
}

#[test]
fn units_name_the_event_and_scale_the_weights() {
    let sampled = |unit: &str, weights: Value| {
        parse(&file(json!([{"type": "sampled", "name": "x", "unit": unit,
            "samples": [[0, 1], [0]], "weights": weights}])))
    };
    let counts = sampled("none", json!([3, 4])).unwrap();
    assert_eq!((counts.unit, counts.total), (WeightUnit::Samples, 7));
    assert_eq!(counts.unit.event(), EventKind::CpuClock);
    assert_eq!(
        sampled("microseconds", json!([1.5, 2])).unwrap().total,
        3_500
    );
    assert_eq!(
        sampled("milliseconds", json!([1, 2])).unwrap().total,
        3_000_000
    );
    let bytes = sampled("bytes", json!([100, 28])).unwrap();
    assert_eq!(
        (bytes.total, bytes.unit.event()),
        (128, EventKind::AllocBytes)
    );
    // A file without line numbers keeps the name, and the file as the
    // library a native frame lives in.
    assert_eq!(
        bytes.frames[1],
        Frame::function("work").with_module("/app/lib.so")
    );
}

#[test]
fn bad_files_are_errors_that_say_why() {
    let error = |bytes: &[u8]| parse(bytes).unwrap_err().to_string();
    assert!(error(b"{\"profiles\": [").starts_with("not speedscope JSON"));
    assert!(error(b"{}").contains("$schema"));
    assert!(error(br#"{"$schema": "https://example.com/other.json"}"#).contains("other.json"));
    let sampled = |extra: Value| {
        let mut p = json!({"type": "sampled", "name": "x", "unit": "none",
            "samples": [[0, 1]], "weights": [1]});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        error(&file(json!([p])))
    };
    assert!(sampled(json!({"unit": "furlongs"})).contains("furlongs"));
    assert!(sampled(json!({"weights": [1, 2]})).contains("1 samples but 2 weights"));
    assert!(sampled(json!({"samples": [[0, 7]]})).contains("frame 7"));
    assert!(sampled(json!({"weights": [-1]})).contains("weight"));
    assert!(sampled(json!({"weights": [1e300]})).contains("weight"));
    assert!(sampled(json!({"type": "flat"})).contains("flat"));
    assert!(sampled(json!({"samples": [[0, -1]]})).starts_with("not speedscope JSON"));
    let deep: Vec<u32> = vec![0; MAX_STACK_DEPTH + 1];
    assert!(sampled(json!({"samples": [deep]})).contains("deeper than"));
    assert!(error(&file(json!([]))).contains("no profiles"));
    let mixed = json!([
        {"type": "sampled", "unit": "none", "samples": [[0]], "weights": [1]},
        {"type": "sampled", "unit": "seconds", "samples": [[0]], "weights": [1]},
    ]);
    assert!(error(&file(mixed)).contains("must agree"));
    let evented = |events: Value| {
        error(&file(
            json!([{"type": "evented", "unit": "none", "name": "x",
            "startValue": 0, "endValue": 10, "events": events}]),
        ))
    };
    let unbalanced = json!([{"type": "O", "at": 0, "frame": 0}, {"type": "O", "at": 1, "frame": 1},
        {"type": "C", "at": 2, "frame": 0}]);
    assert!(evented(unbalanced).contains("closes frame 0, but frame 1 (work)"));
    let backwards = json!([{"type": "O", "at": 5, "frame": 0}, {"type": "C", "at": 4, "frame": 0}]);
    assert!(evented(backwards).contains("comes before"));
    let nothing_open = json!([{"type": "C", "at": 5, "frame": 0}]);
    assert!(evented(nothing_open).contains("no frame"));
    let deep: Vec<Value> = (0..=MAX_STACK_DEPTH)
        .map(|i| json!({"type": "O", "at": i, "frame": 0}))
        .collect();
    assert!(evented(Value::Array(deep)).contains("deeper than"));
    let huge =
        json!([{"type": "O", "at": -9e18, "frame": 0}, {"type": "C", "at": 9e18, "frame": 0}]);
    assert!(evented(huge).contains("add up to more than"));
}

#[test]
fn frames_left_open_close_at_the_end() {
    let imported = parse(&file(json!([{"type": "evented", "unit": "nanoseconds",
        "startValue": 0, "endValue": 100, "events": [
            {"type": "O", "at": 10, "frame": 0}, {"type": "O", "at": 30, "frame": 1}]}])))
    .unwrap();
    let counts: Vec<(Vec<u32>, u64)> = imported
        .stacks
        .iter()
        .map(|s| (s.frames.clone(), s.count))
        .collect();
    assert_eq!(counts, vec![(vec![0], 20), (vec![0, 1], 70)]);
}

/// Arbitrary speedscope-shaped JSON: frames, and profiles of either type
/// whose indexes, units, weights and times may or may not make sense.
fn arbitrary_file() -> impl Strategy<Value = Value> {
    let unit = prop::sample::select(vec!["none", "seconds", "nanoseconds", "bytes", "parsecs"]);
    let weight = prop_oneof![
        (0u32..1000).prop_map(|w| json!(w)),
        (-10.0f64..1e6).prop_map(|w| json!(w)),
        Just(json!(1e300)),
    ];
    let sampled = (
        unit.clone(),
        prop::collection::vec(prop::collection::vec(0u32..8, 0..6), 0..12),
        prop::collection::vec(weight, 0..12),
    )
        .prop_map(|(unit, samples, weights)| {
            json!({"type": "sampled", "name": "Thread 7 \"t\"", "unit": unit,
                "startValue": 0, "endValue": 1, "samples": samples, "weights": weights})
        });
    let event = (any::<bool>(), -5.0f64..100.0, 0u32..8).prop_map(
        |(open, at, frame)| json!({"type": if open {"O"} else {"C"}, "at": at, "frame": frame}),
    );
    let evented = (unit, prop::collection::vec(event, 0..16), 0.0f64..200.0).prop_map(
        |(unit, events, end)| {
            json!({"type": "evented", "name": "x", "unit": unit,
                "startValue": 0, "endValue": end, "events": events})
        },
    );
    let profile = prop_oneof![sampled, evented];
    let frame = (
        "[a-z<>]{0,6}",
        prop::option::of("[a-z/]{0,8}(\\.py)?"),
        prop::option::of(0u32..50),
    )
        .prop_map(|(name, file, line)| json!({"name": name, "file": file, "line": line}));
    (
        prop::collection::vec(frame, 0..8),
        prop::collection::vec(profile, 0..4),
    )
        .prop_map(|(frames, profiles)| {
            json!({"$schema": SCHEMA, "shared": {"frames": frames}, "profiles": profiles})
        })
}

/// A well-formed evented profile: a random walk of opens and closes at
/// rising times, and the self time it should come to.
fn balanced_events() -> impl Strategy<Value = (Vec<Value>, u64)> {
    prop::collection::vec((any::<bool>(), 0u32..3, 0u64..50), 1..40).prop_map(|steps| {
        let (mut events, mut open, mut t, mut busy) = (Vec::new(), Vec::new(), 0u64, 0u64);
        for (push, frame, dt) in steps {
            if !open.is_empty() {
                busy += dt;
            }
            t += dt;
            if push || open.is_empty() {
                open.push(frame);
                events.push(json!({"type": "O", "at": t, "frame": frame}));
            } else {
                let frame = open.pop().unwrap();
                events.push(json!({"type": "C", "at": t, "frame": frame}));
            }
        }
        while let Some(frame) = open.pop() {
            events.push(json!({"type": "C", "at": t, "frame": frame}));
        }
        (events, busy)
    })
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn arbitrary_files_never_panic_and_add_up(file in arbitrary_file()) {
        let bytes = serde_json::to_vec(&file).unwrap();
        if let Ok(imported) = parse(&bytes) {
            let summed: u64 = imported.stacks.iter().map(|s| s.count).sum();
            prop_assert_eq!(summed, imported.total);
            for stack in &imported.stacks {
                prop_assert!(stack.count > 0 && !stack.frames.is_empty());
                prop_assert!(stack.frames.len() <= MAX_STACK_DEPTH);
                prop_assert!(stack.frames.iter().all(|&f| (f as usize) < imported.frames.len()));
            }
        }
        // Cut short, it is an error, never a panic.
        let _ = parse(&bytes[..bytes.len() / 2]);
    }

    #[test]
    fn balanced_events_add_up_to_the_time_spent_in_frames((events, busy) in balanced_events()) {
        let frames: Vec<Value> = (0..3).map(|i| json!({"name": format!("f{i}")})).collect();
        let bytes = serde_json::to_vec(&json!({"$schema": SCHEMA, "shared": {"frames": frames},
            "profiles": [{"type": "evented", "name": "x", "unit": "nanoseconds",
                "startValue": 0, "endValue": 0, "events": events}]})).unwrap();
        let imported = parse(&bytes).unwrap();
        prop_assert_eq!(imported.total, busy);
    }
}
