//! Live language plugins: the Python and Java programs shipped in
//! tests/data are profiled through the real runner with the plugin the
//! agent detects (py-spy, JFR through jcmd), and the function each program
//! is known to spend most of its time in must come first.
//!
//! Needs `python3` and py-spy (`scripts/bootstrap.sh` installs it), and a
//! JDK (`java`, `javac`, `jcmd`); fails with a message otherwise.

use std::path::PathBuf;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use odp_core::cost::CostEventKind;
use odp_core::event::FinishReason;
use odp_core::{EventKind, Language, Snapshot, Target};
use odp_profiler_service::cost::CostSettings;
use odp_profiler_service::plugin::identify::LanguageRuntime;
use odp_profiler_service::plugin::{PluginSettings, Plugins};
use odp_profiler_service::sampling_thread::{self, ProfileSpec, RunnerEvent};
use odp_profiler_service::targets::ProcFs;
use uuid::Uuid;

mod support;

use support::{first_of, ranked_functions};

/// Held by the JVM tests: two JVMs warming up at once on a small machine
/// starve each other of CPU (and `javac` writes one class directory).
static ONE_JVM: Mutex<()> = Mutex::new(());

struct Outcome {
    /// The CPU share the budget measured, per window.
    cpu_shares: Vec<f64>,
    event: EventKind,
    runtime: LanguageRuntime,
    /// The processes sampled when the profile started.
    pids: Vec<u32>,
    snapshots: Vec<Snapshot>,
    result: Result<FinishReason, String>,
}

fn profile(
    plugins: &Plugins,
    pid: u32,
    plugin: Option<Language>,
    event: Option<EventKind>,
    duration: Duration,
    frequency_hz: u32,
) -> Outcome {
    let spec = ProfileSpec {
        profile_id: Uuid::new_v4(),
        host: "test-host".into(),
        agent_id: "test-agent".into(),
        target: Target::Pid(pid),
        include_children: false,
        duration,
        frequency_hz,
        window: Duration::from_secs(1),
        cost: CostSettings::default(),
        plugin,
        event,
        min_wait: None,
        max_message_bytes: odp_core::snapshot::MAX_MESSAGE_BYTES,
    };
    run_spec(plugins, &spec)
}

fn run_spec(plugins: &Plugins, spec: &ProfileSpec) -> Outcome {
    let (_stop_tx, stop_rx) = mpsc::channel();
    let mut events = Vec::new();
    sampling_thread::run(plugins, &ProcFs::default(), spec, &stop_rx, |e| {
        events.push(e);
        true
    });
    let mut started = None;
    let mut snapshots = Vec::new();
    let mut result = None;
    let mut cpu_shares = Vec::new();
    for event in events {
        match event {
            RunnerEvent::Started {
                event,
                runtime,
                pids,
                ..
            } => started = Some((event, runtime, pids)),
            RunnerEvent::Window(s) => snapshots.push(*s),
            RunnerEvent::Cost(CostEventKind::WindowStats {
                cpu_share: Some(share),
                ..
            }) => cpu_shares.push(share),
            RunnerEvent::Cost(_) => {}
            RunnerEvent::Finished(reason) => result = Some(Ok(reason)),
            RunnerEvent::Failed(e) => result = Some(Err(e)),
        }
    }
    let (event, runtime, pids) =
        started.unwrap_or((EventKind::Wall, LanguageRuntime::native(), Vec::new()));
    Outcome {
        cpu_shares,
        event,
        runtime,
        pids,
        snapshots,
        result: result.expect("the profile must report its end"),
    }
}

#[test]
fn python_program_is_detected_and_its_hot_function_comes_first() {
    let python = support::start_python(30);
    let pid = python.id();
    let out = profile(
        &Plugins::default(),
        pid,
        None,
        None,
        Duration::from_secs(3),
        99,
    );
    assert_eq!(
        out.result,
        Ok(FinishReason::DurationElapsed),
        "(needs py-spy: scripts/bootstrap.sh installs it)"
    );
    assert_eq!(out.runtime.language, Language::Python);
    eprintln!("python runtime {:?}", out.runtime.version);
    assert_eq!(out.event, EventKind::CpuClock);
    assert!(!out.snapshots.is_empty());
    for s in &out.snapshots {
        assert_eq!(s.period, 1_000_000_000 / 99);
        assert_eq!(&Snapshot::decode(&s.encode()).unwrap(), s);
    }

    let (ranked, total) = ranked_functions(&out.snapshots);
    eprintln!("{total} samples, top: {:?}", &ranked[..ranked.len().min(6)]);
    // About 3 s at 99 Hz, less the recordings' start-up.
    assert!(total >= 100, "only {total} samples");
    assert_eq!(
        first_of(&ranked, &["crunch_numbers", "light_work"]),
        Some("crunch_numbers"),
        "{ranked:?}"
    );
    let hot = ranked
        .iter()
        .find(|(n, _)| n == "crunch_numbers")
        .unwrap()
        .1;
    assert!(hot * 10 >= total * 7, "crunch_numbers on {hot} of {total}");

    // Frames carry file and line; samples are per OS thread, named.
    let frame = out
        .snapshots
        .iter()
        .flat_map(|s| &s.frames)
        .find(|f| f.function == "crunch_numbers")
        .unwrap();
    assert_eq!(frame.file.as_deref(), Some("hot_python.py"));
    assert_eq!(frame.module, "hot_python");
    assert!((14..=17).contains(&frame.line.unwrap()), "{frame:?}");
    assert!(out
        .snapshots
        .iter()
        .flat_map(|s| &s.threads)
        .any(|t| t.tid == pid && t.name == "MainThread"));
}

#[test]
fn py_spy_cpu_counts_in_the_overhead_budget() {
    // py-spy (a child process) spends 2-5 % of a core at 99 Hz, the
    // agent's own thread about 0.5 %: only counting py-spy puts the
    // profile over a 1.5 % budget, and the frequency must come down.
    let python = support::start_python(30);
    let spec = ProfileSpec {
        profile_id: Uuid::new_v4(),
        host: "test-host".into(),
        agent_id: "test-agent".into(),
        target: Target::Pid(python.id()),
        include_children: false,
        duration: Duration::from_secs(5),
        frequency_hz: 99,
        window: Duration::from_secs(1),
        cost: CostSettings {
            overhead_budget: Some(0.015),
            ..CostSettings::default()
        },
        plugin: None,
        event: None,
        min_wait: None,
        max_message_bytes: odp_core::snapshot::MAX_MESSAGE_BYTES,
    };
    let out = run_spec(&Plugins::default(), &spec);
    assert_eq!(out.result, Ok(FinishReason::DurationElapsed));
    let rates: Vec<u32> = out.snapshots.iter().map(|s| s.frequency_hz).collect();
    eprintln!(
        "frequencies per window: {rates:?}, CPU shares {:?}",
        out.cpu_shares
    );
    assert_eq!(rates.first(), Some(&99));
    assert!(rates.last().is_some_and(|&hz| hz < 99), "{rates:?}");
}

#[test]
fn python_target_exiting_ends_the_profile_with_its_reason() {
    let python = support::start_python(2);
    let out = profile(
        &Plugins::default(),
        python.id(),
        None,
        None,
        Duration::from_secs(30),
        49,
    );
    assert_eq!(out.result, Ok(FinishReason::TargetExited));
    let (ranked, _) = ranked_functions(&out.snapshots);
    assert!(ranked.iter().any(|(name, _)| name == "crunch_numbers"));
}

#[test]
fn python_plugin_failures_end_only_their_profile_with_a_clear_error() {
    // Asked to treat a C program as Python: py-spy's own complaint.
    let burner = support::spawn_burner_for("burn-not-python", 30);
    let out = profile(
        &Plugins::default(),
        burner.id(),
        Some(Language::Python),
        None,
        Duration::from_secs(10),
        99,
    );
    let error = out.result.unwrap_err();
    assert!(
        error.contains("py-spy failed") && error.contains(&burner.id().to_string()),
        "{error}"
    );

    // No py-spy at all: said so at start, with the way to install it.
    let missing = Plugins::standard(
        ProcFs::default(),
        PluginSettings {
            py_spy: PathBuf::from("/nonexistent/py-spy"),
            ..PluginSettings::default()
        },
    );
    let python = support::start_python(30);
    let out = profile(
        &missing,
        python.id(),
        None,
        None,
        Duration::from_secs(5),
        99,
    );
    let error = out.result.unwrap_err();
    assert!(
        error.contains("/nonexistent/py-spy") && error.contains("pip install py-spy"),
        "{error}"
    );

    // The same plugins still profile the burner natively meanwhile.
    let out = profile(
        &missing,
        burner.id(),
        None,
        None,
        Duration::from_secs(1),
        99,
    );
    assert_eq!(out.result, Ok(FinishReason::DurationElapsed));
    assert_eq!(out.runtime.language, Language::Native);
}

#[test]
fn java_program_is_detected_and_its_hot_path_comes_first() {
    let _one = ONE_JVM.lock().unwrap_or_else(|e| e.into_inner());
    let classes = support::build_java();
    let java = support::start_java(&classes, 60);
    let pid = java.id();
    let out = profile(
        &Plugins::default(),
        pid,
        None,
        None,
        Duration::from_secs(4),
        99,
    );
    assert_eq!(out.result, Ok(FinishReason::DurationElapsed));
    assert_eq!(out.runtime.language, Language::Jvm);
    eprintln!("jvm runtime {:?}", out.runtime.version);
    assert!(out.runtime.version.is_some());
    assert_eq!(out.event, EventKind::CpuClock);

    let (ranked, total) = ranked_functions(&out.snapshots);
    eprintln!("{total} samples, top: {:?}", &ranked[..ranked.len().min(8)]);
    // JFR samples only threads running Java code (not those inside the
    // native reads of SecureRandom), so there are fewer than 4 s × 99 Hz.
    assert!(total >= 30, "only {total} samples");
    assert_eq!(
        first_of(&ranked, &["HotTable.fillTable", "HotTable.sumSquares"]),
        Some("HotTable.fillTable"),
        "{ranked:?}"
    );
    for callee in ["java.util.UUID.randomUUID", "java.util.Hashtable.put"] {
        assert!(
            ranked.iter().any(|(name, _)| name == callee),
            "{callee} missing from {ranked:?}"
        );
    }
    let frame = out
        .snapshots
        .iter()
        .flat_map(|s| &s.frames)
        .find(|f| f.function == "java.util.Hashtable.put")
        .unwrap();
    assert_eq!(frame.module, "java.util");
    assert!(frame.line.is_some(), "{frame:?}");
    assert!(out
        .snapshots
        .iter()
        .flat_map(|s| &s.threads)
        .any(|t| t.name == "main" && t.tid != pid));
}

#[test]
fn jvm_plugin_refuses_a_process_that_is_not_a_jvm() {
    // Forced onto a C program: refused with a reason, and the program is
    // left alone (no SIGQUIT, which would kill it).
    let mut burner = support::spawn_burner_for("burn-not-jvm", 30);
    let out = profile(
        &Plugins::default(),
        burner.id(),
        Some(Language::Jvm),
        None,
        Duration::from_secs(5),
        99,
    );
    let error = out.result.unwrap_err();
    assert!(error.contains("JFR failed"), "{error}");
    assert!(burner.0.try_wait().unwrap().is_none(), "the burner died");
}

#[test]
fn java_allocations_are_measured_in_bytes() {
    let _one = ONE_JVM.lock().unwrap_or_else(|e| e.into_inner());
    let classes = support::build_java();
    let java = support::start_java(&classes, 60);
    let out = profile(
        &Plugins::default(),
        java.id(),
        None,
        Some(EventKind::AllocBytes),
        Duration::from_secs(3),
        99,
    );
    assert_eq!(out.result, Ok(FinishReason::DurationElapsed));
    assert_eq!(out.event, EventKind::AllocBytes);
    assert!(out.snapshots.iter().all(|s| s.period == 1));
    let (ranked, bytes) = ranked_functions(&out.snapshots);
    eprintln!("{bytes} bytes, top: {:?}", &ranked[..ranked.len().min(6)]);
    // sumSquares allocates nothing: every sampled byte is the table's.
    assert_eq!(
        first_of(&ranked, &["HotTable.fillTable", "HotTable.sumSquares"]),
        Some("HotTable.fillTable")
    );
    assert!(bytes > 1_000_000, "only {bytes} bytes");

    // Python has no allocation plugin: said so, nothing sampled.
    let python = support::start_python(30);
    let out = profile(
        &Plugins::default(),
        python.id(),
        None,
        Some(EventKind::AllocBytes),
        Duration::from_secs(3),
        99,
    );
    let error = out.result.unwrap_err();
    assert!(error.contains("cannot measure alloc-bytes"), "{error}");
}

/// A command-line pattern that also matches a native process (here a
/// `sleep` whose arguments carry the script's name, as the shell that
/// launched a program or the `odpctl` that asked for the profile would):
/// the Python process is profiled, the native one left out, not a failure.
/// Both run detached, since the agent leaves its own descendants out.
#[test]
fn a_python_target_matched_with_a_native_process_samples_the_python_one() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hot_python.py");
    let python = support::Detached::start(&format!(
        "'{}' '{}' 30",
        support::python_interpreter().display(),
        script.display()
    ));
    let bystander = support::Detached::start("sleep 30 hot_python.py");
    std::thread::sleep(Duration::from_millis(500));
    let spec = ProfileSpec {
        target: Target::CommandLine("hot_python\\.py".into()),
        include_children: false,
        ..support::profile_spec(python.0, Duration::from_secs(3), 99)
    };
    let outcome = run_spec(&Plugins::default(), &spec);
    assert_eq!(
        (outcome.runtime.language, outcome.pids),
        (Language::Python, vec![python.0]),
        "{:?}",
        outcome.result
    );
    assert_eq!(outcome.result, Ok(FinishReason::DurationElapsed));
    let (ranked, total) = ranked_functions(&outcome.snapshots);
    assert!(total >= 100, "only {total} samples");
    assert_eq!(
        first_of(&ranked, &["crunch_numbers", "light_work"]),
        Some("crunch_numbers")
    );
    drop(bystander);
}
