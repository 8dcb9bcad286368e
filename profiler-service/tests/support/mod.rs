//! Shared by the integration tests: the C workload and child processes
//! here, the broker and command harness in [`kafka`], an agent in the
//! test's runtime in [`in_process`].

// Each test binary uses a different part of this module, and `pub` here
// only means "for the test files".
#![allow(dead_code, unreachable_pub)]

pub mod in_process;
pub mod kafka;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use odp_core::cost::CostEventKind;
use odp_core::event::FinishReason;
use odp_core::{EventKind, Snapshot};
use odp_profiler_service::plugin::Plugins;
use odp_profiler_service::sampling_thread::{self, ProfileSpec, RunnerEvent};
use odp_profiler_service::targets::ProcFs;

/// Runs a build step (cc, objcopy, strip), failing the test if it fails.
pub fn run_command(command: &mut Command) {
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("{command:?}: {e} (cc and binutils are needed)"));
    assert!(status.success(), "{command:?} failed");
}

/// A directory of its own per test under the target's temporary
/// directory, emptied first.
pub fn workdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A native CPU profile of `target` at 199 Hz in 1 s windows.
pub fn native_spec(target: odp_core::Target, duration: Duration) -> ProfileSpec {
    ProfileSpec {
        profile_id: uuid::Uuid::new_v4(),
        host: "test-host".into(),
        agent_id: "test-agent".into(),
        target,
        include_children: false,
        duration,
        frequency_hz: 199,
        window: Duration::from_secs(1),
        cost: odp_profiler_service::cost::CostSettings::default(),
        plugin: Some(odp_core::Language::Native),
        event: None,
        min_wait: None,
        max_message_bytes: odp_core::snapshot::MAX_MESSAGE_BYTES,
    }
}

/// Compiles tests/data/short_lived.c (burns the CPU milliseconds it is
/// given, then exits) into `dir` as `name`. Built without frame pointers:
/// its callers are found only by DWARF unwinding.
pub fn build_short_lived(dir: &Path, name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/short_lived.c");
    let out = dir.join(name);
    run_command(
        Command::new("cc")
            .args(["-O2", "-fomit-frame-pointer", "-o"])
            .arg(&out)
            .arg(&source),
    );
    out
}

/// Compiles tests/data/burn.c into the test's temporary directory.
pub fn build_burner(name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/burn.c");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let status = Command::new("cc")
        .args([
            "-O2",
            "-fno-omit-frame-pointer",
            "-mno-omit-leaf-frame-pointer",
            "-o",
        ])
        .arg(&out)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) is needed to build the test workload");
    assert!(status.success(), "cc failed to build {}", source.display());
    out
}

/// A process started detached from the test process (`sh -c '… &'`,
/// re-parented away from us), which the agent's exclusion of itself and its
/// descendants would otherwise leave out of a command-line or cgroup
/// target; killed on drop.
pub struct Detached(pub u32);

impl Detached {
    /// Runs `command` (a shell command line) in the background.
    pub fn start(command: &str) -> Detached {
        let script = format!("{command} >/dev/null 2>&1 & echo $!");
        let out = Command::new("sh")
            .args(["-c", &script])
            .output()
            .expect("run sh");
        let pid = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("sh prints the detached pid");
        Detached(pid)
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .status();
    }
}

/// A child process killed (and reaped) on drop, even when a test fails.
pub struct Killed(pub Child);

impl Killed {
    pub fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Builds and starts the burner for `seconds`, named `name`.
pub fn spawn_burner_for(name: &str, seconds: u32) -> Killed {
    start_burner(&build_burner(name), seconds)
}

/// Starts an already built burner (rebuilding a running binary would fail
/// with "text file busy").
pub fn start_burner(binary: &Path, seconds: u32) -> Killed {
    let child = Command::new(binary)
        .arg(seconds.to_string())
        .spawn()
        .expect("start the burner");
    // Let the loader finish so samples land in the burner's own code.
    std::thread::sleep(Duration::from_millis(200));
    Killed(child)
}

pub fn spawn_burner(name: &str) -> Killed {
    spawn_burner_for(name, 300)
}

pub fn wait_exit(child: &mut Killed, timeout: Duration) -> ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.0.try_wait().expect("wait for the agent") {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "agent did not exit within {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn sigterm(child: &Killed) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
}

/// Compiles tests/data/workload.c (threads and phases modes) as `name`.
pub fn build_workload(name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/workload.c");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let status = Command::new("cc")
        .args([
            "-O2",
            "-pthread",
            "-fno-omit-frame-pointer",
            "-mno-omit-leaf-frame-pointer",
            "-o",
        ])
        .arg(&out)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) is needed to build the test workload");
    assert!(status.success(), "cc failed to build {}", source.display());
    out
}

/// Starts a built workload with its arguments, killed on drop.
pub fn start_workload(binary: &Path, args: &[&str]) -> Killed {
    let child = Command::new(binary)
        .args(args)
        .spawn()
        .expect("start the workload");
    std::thread::sleep(Duration::from_millis(300));
    Killed(child)
}

/// The interpreter `python3` runs, found once: started directly, the
/// workload's pid is the interpreter's from the start (`python3` may be a
/// wrapper script, such as a pyenv shim, that execs it later).
pub fn python_interpreter() -> &'static Path {
    static INTERPRETER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    INTERPRETER.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 is needed to run the Python test workload");
        assert!(out.status.success(), "python3 failed");
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
}

/// Starts tests/data/hot_python.py for `seconds`, killed on drop, once the
/// interpreter has loaded it.
pub fn start_python(seconds: u32) -> Killed {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hot_python.py");
    let child = Command::new(python_interpreter())
        .arg(&script)
        .arg(seconds.to_string())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start the Python test workload");
    std::thread::sleep(Duration::from_millis(500));
    Killed(child)
}

/// Compiles tests/data/HotTable.java with `javac` into the test's temporary
/// directory and returns the class directory.
pub fn build_java() -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/HotTable.java");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("java-hot-table");
    std::fs::create_dir_all(&out).expect("create the class directory");
    let status = Command::new("javac")
        .arg("-d")
        .arg(&out)
        .arg(&source)
        .status()
        .expect("javac (a JDK) is needed to build the Java test workload");
    assert!(status.success(), "javac failed on {}", source.display());
    out
}

/// Starts the compiled HotTable for `seconds`, killed on drop, once the
/// JVM is up and its hot path compiled.
pub fn start_java(classes: &Path, seconds: u32) -> Killed {
    let child = Command::new("java")
        .arg("-cp")
        .arg(classes)
        .arg("HotTable")
        .arg(seconds.to_string())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("java is needed to run the Java test workload");
    std::thread::sleep(Duration::from_millis(1500));
    Killed(child)
}

/// Samples (or bytes) per function, counted once per stack wherever the
/// function is on it, ranked highest first.
pub fn ranked_functions(snapshots: &[Snapshot]) -> (Vec<(String, u64)>, u64) {
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut total = 0;
    for snapshot in snapshots {
        for stack in &snapshot.stacks {
            total += stack.count;
            let mut names: Vec<&str> = snapshot
                .stack_frames(stack)
                .map(|f| f.function.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            for name in names {
                *counts.entry(name.to_owned()).or_insert(0) += stack.count;
            }
        }
    }
    let mut ranked: Vec<(String, u64)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    (ranked, total)
}

/// Which of `candidates` ranks highest among the ranked functions.
pub fn first_of<'a>(ranked: &'a [(String, u64)], candidates: &[&str]) -> Option<&'a str> {
    ranked
        .iter()
        .map(|(name, _)| name.as_str())
        .find(|name| candidates.contains(name))
}

/// Starts a Python script of tests/data with `args` (its pid the
/// interpreter's from the start, see [`python_interpreter`]), killed on
/// drop, once the interpreter has loaded it.
pub fn start_python_script(script: &str, args: &[&str]) -> Killed {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(script);
    let child = Command::new(python_interpreter())
        .arg(&script)
        .args(args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start the Python workload");
    std::thread::sleep(Duration::from_millis(500));
    Killed(child)
}

/// A profile of `pid` as the agent's runner takes it: 1 s windows, no cost
/// control, the plugin detected; set `event`, `plugin`, `min_wait` on it.
pub fn profile_spec(pid: u32, duration: Duration, frequency_hz: u32) -> ProfileSpec {
    ProfileSpec {
        profile_id: uuid::Uuid::new_v4(),
        host: "test-host".into(),
        agent_id: "test-agent".into(),
        target: odp_core::Target::Pid(pid),
        include_children: false,
        duration,
        frequency_hz,
        window: Duration::from_secs(1),
        cost: odp_profiler_service::cost::CostSettings::default(),
        plugin: None,
        event: None,
        min_wait: None,
        max_message_bytes: odp_core::snapshot::MAX_MESSAGE_BYTES,
    }
}

/// What the runner reported of a profile that ran to its end.
pub struct RunnerReport {
    /// The event the session measured.
    pub event: EventKind,
    pub snapshots: Vec<Snapshot>,
    pub cost: Vec<CostEventKind>,
}

/// Runs `spec` through the runner with the standard plugins, and checks
/// it started and ran its whole duration.
pub fn run_to_end(spec: &ProfileSpec) -> RunnerReport {
    run_to_end_with(&Plugins::default(), spec)
}

/// [`run_to_end`] with these plugins.
pub fn run_to_end_with(plugins: &Plugins, spec: &ProfileSpec) -> RunnerReport {
    let (_stop_tx, stop_rx) = std::sync::mpsc::channel();
    let (mut started, mut result) = (None, None);
    let (mut snapshots, mut cost) = (Vec::new(), Vec::new());
    sampling_thread::run(plugins, &ProcFs::default(), spec, &stop_rx, |e| {
        match e {
            RunnerEvent::Started { event, .. } => started = Some(event),
            RunnerEvent::Window(s) => snapshots.push(*s),
            RunnerEvent::Cost(report) => cost.push(report),
            RunnerEvent::Finished(reason) => result = Some(Ok(reason)),
            RunnerEvent::Failed(error) => result = Some(Err(error)),
        }
        true
    });
    assert_eq!(result, Some(Ok(FinishReason::DurationElapsed)));
    RunnerReport {
        event: started.expect("the profile started"),
        snapshots,
        cost,
    }
}
