//! Live runtime info and JVM heap histograms, through the real runner:
//! `Started` of a Java program carries its JVM flags and the jar it runs
//! from, that of a Python program in a virtual environment its interpreter
//! options and the distribution installed there, that of a C program its
//! build id; a JVM profiled for `heap-bytes` yields one snapshot of its
//! live heap by class when the profile ends.
//!
//! Needs a JDK (`java`, `javac`, `jar`), `python3` with `venv`, py-spy,
//! `cc` and `readelf`; fails with a message otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::Duration;

use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use odp_core::runtime::{Library, LibraryKind, RuntimeInfo};
use odp_core::{EventKind, Language, Snapshot, Target};
use odp_profiler_service::cost::CostSettings;
use odp_profiler_service::plugin::identify::LanguageRuntime;
use odp_profiler_service::plugin::Plugins;
use odp_profiler_service::sampling_thread::{self, ProfileSpec, RunnerEvent};
use odp_profiler_service::targets::ProcFs;
use uuid::Uuid;

mod support;

use support::Killed;

/// Two JVMs warming up at once starve each other on a small machine.
static ONE_JVM: Mutex<()> = Mutex::new(());

struct Outcome {
    started: Option<(EventKind, LanguageRuntime, RuntimeInfo, Vec<u32>)>,
    snapshots: Vec<Snapshot>,
    result: Result<FinishReason, String>,
}

impl Outcome {
    fn info(&self) -> &RuntimeInfo {
        &self.started.as_ref().expect("the profile started").2
    }

    /// `profile_started` as the agent publishes it, for the eye.
    fn started_json(&self, profile_id: Uuid) -> String {
        let (event, runtime, info, pids) = self.started.clone().expect("started");
        let event = AgentEvent {
            host: "test-host".into(),
            agent_id: "test-agent".into(),
            at_ms: 0,
            kind: AgentEventKind::ProfileStarted {
                profile_id,
                event,
                frequency_hz: 99,
                pids,
                language: Some(runtime.language),
                runtime_version: runtime.version,
                runtime: info,
            },
        };
        String::from_utf8(event.to_json()).unwrap()
    }
}

fn profile_spec(pid: u32, event: Option<EventKind>, duration: Duration) -> ProfileSpec {
    ProfileSpec {
        profile_id: Uuid::new_v4(),
        host: "test-host".into(),
        agent_id: "test-agent".into(),
        target: Target::Pid(pid),
        include_children: false,
        duration,
        frequency_hz: 99,
        window: Duration::from_secs(1),
        cost: CostSettings::default(),
        plugin: None,
        event,
        min_wait: None,
        max_message_bytes: odp_core::snapshot::MAX_MESSAGE_BYTES,
    }
}

/// Runs a profile to its end, asking it to stop after `stop_after` when
/// given.
fn run(spec: &ProfileSpec, stop_after: Option<Duration>) -> Outcome {
    let (stop_tx, stop_rx) = mpsc::channel();
    // Kept until the profile ends: a dropped sender also means "stop".
    let keep = stop_tx.clone();
    let stopper = stop_after.map(|delay| {
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            let _ = stop_tx.send(());
        })
    });
    let mut events = Vec::new();
    sampling_thread::run(
        &Plugins::default(),
        &ProcFs::default(),
        spec,
        &stop_rx,
        |e| {
            events.push(e);
            true
        },
    );
    drop(keep);
    if let Some(stopper) = stopper {
        stopper.join().unwrap();
    }
    let mut out = Outcome {
        started: None,
        snapshots: Vec::new(),
        result: Err("no end reported".into()),
    };
    for event in events {
        match event {
            RunnerEvent::Started {
                event,
                runtime,
                runtime_info,
                pids,
                ..
            } => out.started = Some((event, runtime, runtime_info, pids)),
            RunnerEvent::Window(s) => out.snapshots.push(*s),
            RunnerEvent::Cost(_) => {}
            RunnerEvent::Finished(reason) => out.result = Ok(reason),
            RunnerEvent::Failed(e) => out.result = Err(e),
        }
    }
    out
}

fn library(kind: LibraryKind, name: &str, version: &str) -> Library {
    Library {
        kind,
        name: name.into(),
        version: Some(version.into()),
    }
}

/// The build id `readelf -n` (binutils) shows for a file.
fn readelf_build_id(path: &Path) -> String {
    let out = Command::new("readelf")
        .arg("-n")
        .arg(path)
        .output()
        .expect("readelf (binutils) is needed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| Some(l.trim().strip_prefix("Build ID: ")?.trim().to_owned()))
        .unwrap_or_else(|| panic!("readelf shows no build id for {}", path.display()))
}

/// tests/data's Java programs compiled and packed as
/// `odp-fixture-1.2.3.jar`, once per test binary.
fn fixture_jar() -> &'static Path {
    static JAR: OnceLock<PathBuf> = OnceLock::new();
    JAR.get_or_init(|| {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("java-runtime-info");
        let classes = dir.join("classes");
        std::fs::create_dir_all(&classes).unwrap();
        let status = Command::new("javac")
            .arg("-d")
            .arg(&classes)
            .arg(data.join("HotTable.java"))
            .arg(data.join("HeapHolder.java"))
            .status()
            .expect("javac (a JDK) is needed");
        assert!(status.success(), "javac failed");
        let jar = dir.join("odp-fixture-1.2.3.jar");
        let status = Command::new("jar")
            .arg("cf")
            .arg(&jar)
            .arg("-C")
            .arg(&classes)
            .arg(".")
            .status()
            .expect("jar (a JDK) is needed");
        assert!(status.success(), "jar failed");
        jar
    })
}

/// Starts a class of the fixture jar with JVM options, killed on drop.
fn start_java(options: &[&str], class: &str, seconds: u32) -> Killed {
    let child = Command::new("java")
        .args(options)
        .arg("-cp")
        .arg(fixture_jar())
        .arg(class)
        .arg(seconds.to_string())
        .stdout(Stdio::null())
        .spawn()
        .expect("java is needed");
    std::thread::sleep(Duration::from_millis(2000));
    Killed(child)
}

#[test]
fn java_start_reports_jvm_flags_jars_and_build_id() {
    let _one = ONE_JVM.lock().unwrap_or_else(|e| e.into_inner());
    let java = start_java(&["-XX:+UseSerialGC", "-Xmx200m"], "HotTable", 60);
    let spec = profile_spec(java.id(), None, Duration::from_secs(2));
    let out = run(&spec, None);
    assert_eq!(out.result, Ok(FinishReason::DurationElapsed));
    eprintln!("{}", out.started_json(spec.profile_id));
    let info = out.info();
    for flag in ["-XX:+UseSerialGC", "-Xmx200m"] {
        assert!(
            info.flags.iter().any(|f| f == flag),
            "{flag}: {:?}",
            info.flags
        );
    }
    // Only VM.flags spells the heap limit this way: the JVM was asked.
    assert!(
        info.flags.iter().any(|f| f == "-XX:MaxHeapSize=209715200"),
        "{:?}",
        info.flags
    );
    // Read before the profile's JFR recording starts: not its doing.
    assert!(!info.flags.iter().any(|f| f == "-XX:+FlightRecorder"));
    assert!(info
        .libraries
        .contains(&library(LibraryKind::Jar, "odp-fixture", "1.2.3")));
    assert!(info
        .libraries
        .iter()
        .any(|l| l.kind == LibraryKind::Shared && l.name == "libjvm"));
    let exe = info.executable.as_ref().expect("the executable");
    assert!(exe.path.ends_with("/java"), "{exe:?}");
    let proc_exe = PathBuf::from(format!("/proc/{}/exe", java.id()));
    assert_eq!(exe.build_id.as_deref(), Some(&*readelf_build_id(&proc_exe)));
}

#[test]
fn python_start_reports_interpreter_options_and_venv_distributions() {
    let venv = tempfile::tempdir().unwrap();
    let status = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(venv.path())
        .status()
        .expect("python3 is needed");
    assert!(status.success(), "python3 -m venv failed");
    let python = venv.path().join("bin/python");
    let out = Command::new(&python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ])
        .output()
        .unwrap();
    let site = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let dist = site.join("odp_fixture-1.2.3.dist-info");
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(
        dist.join("METADATA"),
        "Metadata-Version: 2.1\nName: odp-fixture\nVersion: 1.2.3\n",
    )
    .unwrap();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hot_python.py");
    let child = Command::new(&python)
        .args(["-X", "dev", "-B"])
        .arg(&script)
        .arg("30")
        .env("PYTHONMALLOC", "malloc")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let target = Killed(child);
    std::thread::sleep(Duration::from_millis(700));
    let spec = profile_spec(target.id(), None, Duration::from_secs(2));
    let out = run(&spec, None);
    assert_eq!(
        out.result,
        Ok(FinishReason::DurationElapsed),
        "(needs py-spy: scripts/bootstrap.sh installs it)"
    );
    eprintln!("{}", out.started_json(spec.profile_id));
    let info = out.info();
    for flag in ["-X dev", "-B", "PYTHONMALLOC=malloc"] {
        assert!(
            info.flags.iter().any(|f| f == flag),
            "{flag}: {:?}",
            info.flags
        );
    }
    assert!(info
        .libraries
        .contains(&library(LibraryKind::Python, "odp-fixture", "1.2.3")));
    // The venv does not see the base interpreter's site-packages (which
    // holds pip): none of its distributions may be reported.
    assert!(
        !info
            .libraries
            .iter()
            .any(|l| l.kind == LibraryKind::Python && l.name == "pip"),
        "{:?}",
        info.libraries
    );
    assert!(info.executable.is_some());

    // Python measures no heap: refused, nothing sampled.
    let heap = profile_spec(
        target.id(),
        Some(EventKind::HeapBytes),
        Duration::from_secs(2),
    );
    let out = run(&heap, None);
    let error = out.result.unwrap_err();
    assert!(error.contains("cannot measure heap-bytes"), "{error}");
}

#[test]
fn native_start_reports_the_build_id_of_the_binary() {
    let binary = support::build_burner("burn-runtime-info");
    let burner = support::start_burner(&binary, 30);
    let spec = profile_spec(burner.id(), None, Duration::from_secs(1));
    let out = run(&spec, None);
    assert_eq!(out.result, Ok(FinishReason::DurationElapsed));
    let (_, runtime, info, _) = out.started.as_ref().unwrap();
    assert_eq!(runtime.language, Language::Native);
    assert!(info.flags.is_empty());
    let exe = info.executable.as_ref().unwrap();
    assert_eq!(Path::new(&exe.path), binary);
    assert_eq!(exe.build_id.as_deref(), Some(&*readelf_build_id(&binary)));
    assert!(info
        .libraries
        .iter()
        .any(|l| l.kind == LibraryKind::Shared && l.name == "libc"));
}

/// Bytes per class across a profile's snapshots, heaviest first.
fn heaviest_classes(snapshots: &[Snapshot]) -> Vec<(String, u64)> {
    let (ranked, _) = support::ranked_functions(snapshots);
    ranked
}

fn heap_profile(pid: u32, duration: Duration, stop_after: Option<Duration>) -> Outcome {
    run(
        &profile_spec(pid, Some(EventKind::HeapBytes), duration),
        stop_after,
    )
}

#[test]
fn java_heap_histogram_is_one_snapshot_at_the_end() {
    let _one = ONE_JVM.lock().unwrap_or_else(|e| e.into_inner());
    let java = start_java(&["-Xmx256m"], "HeapHolder", 60);

    // Duration elapsed: one snapshot, the live heap by class.
    let out = heap_profile(java.id(), Duration::from_secs(3), None);
    assert_eq!(out.result, Ok(FinishReason::DurationElapsed));
    assert_eq!(out.started.as_ref().unwrap().0, EventKind::HeapBytes);
    assert_eq!(out.snapshots.len(), 1, "{:?}", out.snapshots);
    let snapshot = &out.snapshots[0];
    assert_eq!((snapshot.event, snapshot.period), (EventKind::HeapBytes, 1));
    assert!(snapshot.stacks.iter().all(|s| s.frames.len() == 1));
    let ranked = heaviest_classes(&out.snapshots);
    eprintln!("heaviest classes: {:?}", &ranked[..ranked.len().min(5)]);
    let retained = ranked
        .iter()
        .take(3)
        .find(|(class, _)| class == "HeapHolder$Retained")
        .unwrap_or_else(|| panic!("HeapHolder$Retained not in the top 3: {ranked:?}"));
    // 300,000 objects of 8 longs and a header, 80 bytes each.
    assert_eq!(retained.1, 24_000_000);
    assert!(ranked.iter().any(|(class, _)| class == "byte[]"));

    // Stopped: the same, taken when the stop arrives.
    let out = heap_profile(
        java.id(),
        Duration::from_secs(60),
        Some(Duration::from_secs(2)),
    );
    assert_eq!(out.result, Ok(FinishReason::Stopped));
    assert_eq!(out.snapshots.len(), 1);
    assert!(heaviest_classes(&out.snapshots)
        .iter()
        .any(|(class, bytes)| class == "HeapHolder$Retained" && *bytes == 24_000_000));
}

#[test]
fn java_heap_of_an_exited_jvm_is_not_taken() {
    let _one = ONE_JVM.lock().unwrap_or_else(|e| e.into_inner());
    let java = start_java(&["-Xmx256m"], "HeapHolder", 4);
    let out = heap_profile(java.id(), Duration::from_secs(60), None);
    assert_eq!(out.result, Ok(FinishReason::TargetExited));
    assert!(
        out.snapshots.iter().all(|s| s.total_samples() == 0),
        "{:?}",
        out.snapshots
    );
}
