//! Golden captures for the seed detection rules (rules/seed.json): for
//! each `stack_share` rule, a small real program of tests/data that spends
//! its time in the code the rule is about (rule_workloads.py,
//! RuleWorkloads.java, Log4jCategory.java, rule_workloads.c), and per
//! runtime a plain CPU burner that touches none of it. The lock rules'
//! programs (LockWorkloads.java) are profiled in the JVM's `lock` mode,
//! their burner a program whose threads wait for work, never for a lock.
//! Each is profiled through the agent's own runner and plugins (py-spy,
//! JFR over jcmd, perf_event), so every frame's function and module are
//! exactly what the pipeline stores and the rules match. The captures live in
//! rules/tests/captures/, where rules/tests/seed_rules_on_captures.rs
//! evaluates the seed pack over them.
//!
//! `ODP_REGENERATE_FIXTURES=1 cargo test -p odp-profiler-service --test
//! rule_captures` profiles the programs afresh and rewrites the captures;
//! review the diff before committing it. It needs python3 with py-spy, a
//! JDK (javac, java, jcmd), Log4j 1.2 (Debian's liblog4j1.2-java, or the
//! jar in `ODP_LOG4J1_JAR`), a C compiler and perf_event access. Without
//! it, the stored captures are checked: well formed, small, and each
//! program's functions on at least its share of the samples (the burners
//! on none), so a capture of a workload that went wrong is never kept.
//!
//! A capture file (`NAME.txt`): `#` comment lines (program, runtime,
//! event), then the distinct frames, `frame\tFUNCTION\tMODULE\tFILE`
//! (numbered from 0 in order; FILE empty when unknown; lines are
//! dropped), then the distinct stacks, `stack\tCOUNT\tI J K...` (frame
//! numbers, root first). Threads are merged and so are stacks that differ
//! only in lines. One thing the pipeline would store is left out, and
//! counted in a comment: in a JVM, the agent's own JFR commands, which the
//! target runs on the agent's behalf in its Attach Listener thread
//! (`jdk.jfr.internal.dcmd.*`, formatting their replies through
//! `java.util.Formatter` and so `java.util.regex.Pattern`). They come at
//! random, a sample or two a second, and belong to no program.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use odp_core::event::FinishReason;
use odp_core::{EventKind, Frame, Language, Snapshot, Target};
use odp_profiler_service::cost::CostSettings;
use odp_profiler_service::plugin::Plugins;
use odp_profiler_service::sampling_thread::{self, ProfileSpec, RunnerEvent};
use odp_profiler_service::targets::ProcFs;
use uuid::Uuid;

mod support;

use support::Killed;

/// One program at a time: on a small machine two at once starve each
/// other (and the JVMs share a class directory).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Sampling frequency of the captures.
const FREQUENCY_HZ: u32 = 199;
/// Windows (of a second) left out of a capture: the JIT's warm-up and
/// the JVM's first JFR dumps, which initialise the dump machinery.
const WARMUP_WINDOWS: u64 = 2;
/// Captures beyond this are too big to review: aggregate harder.
const MAX_CAPTURE_BYTES: usize = 8 * 1024;

/// A program of tests/data and what it must show.
struct Workload {
    /// The capture's file stem, `RUNTIME-MODE`.
    name: &'static str,
    language: Language,
    /// The program's mode argument (Log4j 1 has a program of its own).
    mode: &'static str,
    /// Functions (as the plugin names them) the program exists to run:
    /// each must be on at least `min_share_pct` of its samples. Empty for
    /// the burners, which must have none of any other workload's.
    exercises: &'static [&'static str],
    min_share_pct: f64,
    /// How long it is profiled for its capture.
    seconds: u64,
    /// What it is profiled for (the runtime's CPU event when `None`).
    event: Option<EventKind>,
}

impl Workload {
    const fn new(name: &'static str, language: Language, mode: &'static str) -> Self {
        Workload {
            name,
            language,
            mode,
            exercises: &[],
            min_share_pct: 30.0,
            seconds: 4,
            event: None,
        }
    }

    /// A LockWorkloads mode, profiled for where its threads wait.
    const fn locks(name: &'static str, mode: &'static str) -> Self {
        let mut workload = Workload::new(name, Language::Jvm, mode);
        workload.event = Some(EventKind::Lock);
        workload
    }

    /// The same program, profiled for `event` instead of CPU.
    const fn measuring(mut self, event: EventKind) -> Self {
        self.event = Some(event);
        self
    }

    const fn exercising(mut self, functions: &'static [&'static str]) -> Self {
        self.exercises = functions;
        self
    }

    const fn at_least(mut self, share_pct: f64) -> Self {
        self.min_share_pct = share_pct;
        self
    }

    const fn for_seconds(mut self, seconds: u64) -> Self {
        self.seconds = seconds;
        self
    }
}

const PYTHON: &[Workload] = &[
    Workload::new("python-re-compile", Language::Python, "re-compile")
        .exercising(&["compile", "_compile"]),
    Workload::new("python-re-cached", Language::Python, "re-cached")
        .exercising(&["compile", "_compile"]),
    Workload::new("python-deepcopy", Language::Python, "deepcopy").exercising(&["deepcopy"]),
    Workload::new("python-json", Language::Python, "json").exercising(&["dumps", "loads"]),
    Workload::new("python-logging", Language::Python, "logging").exercising(&["format"]),
    Workload::new("python-burn", Language::Python, "burn"),
];

const JVM: &[Workload] = &[
    Workload::new("jvm-uuid", Language::Jvm, "uuid").exercising(&["java.util.UUID.randomUUID"]),
    // JDK 17 parks idle workers at once: awaitWork's own Java code (its
    // bookkeeping before LockSupport.park) is all JFR sees of them, 3% to
    // 9% of the samples however much the workers churn.
    Workload::new("jvm-forkjoin", Language::Jvm, "forkjoin")
        .exercising(&["java.util.concurrent.ForkJoinPool.awaitWork"])
        .at_least(2.0)
        .for_seconds(6),
    Workload::new("jvm-securerandom", Language::Jvm, "securerandom")
        .exercising(&["java.security.SecureRandom.nextBytes"]),
    Workload::new("jvm-log4j1", Language::Jvm, "log4j1")
        .exercising(&["org.apache.log4j.Category.callAppenders"]),
    // JFR puts some samples of JDK code the JIT inlined into its caller
    // down to the caller itself (which of them changes with each run's
    // compilations): for Hashtable and StringBuffer, up to half.
    Workload::new("jvm-hashtable", Language::Jvm, "hashtable")
        .exercising(&["java.util.Hashtable.putAll"])
        .at_least(20.0),
    // The stack walk itself runs in the VM, where JFR does not sample:
    // what it sees is mostly fillInStackTrace's Java part.
    Workload::new("jvm-throwable", Language::Jvm, "throwable")
        .exercising(&["java.lang.Throwable.fillInStackTrace"]),
    Workload::new("jvm-regex", Language::Jvm, "regex")
        .exercising(&["java.util.regex.Pattern.compile"]),
    Workload::new("jvm-stringbuffer", Language::Jvm, "stringbuffer")
        .exercising(&["java.lang.StringBuffer.append"])
        .at_least(20.0),
    Workload::new("jvm-burn", Language::Jvm, "burn"),
];

/// Threads of each LockWorkloads program.
const LOCK_THREADS: &str = "4";

/// Lock profiles weigh each stack by the time threads waited in it: the
/// shares are of the time waited.
const JVM_LOCK: &[Workload] = &[
    Workload::locks("jvm-lock-monitor", "monitor")
        .exercising(&["[monitor] LockWorkloads$Ledger", "LockWorkloads.record"])
        .at_least(95.0),
    Workload::locks("jvm-lock-reentrant", "reentrant")
        .exercising(&[
            "[park] java.util.concurrent.locks.ReentrantLock$FairSync",
            "LockWorkloads.recordLocked",
        ])
        .at_least(95.0),
    Workload::locks("jvm-lock-uuid", "uuid")
        .exercising(&[
            "java.util.UUID.randomUUID",
            "sun.security.provider.NativePRNG$RandomIO.implNextBytes",
        ])
        .at_least(90.0),
    // Waiting for work, not for a lock: the lock rules' burner.
    Workload::locks("jvm-lock-idle", "idle"),
];

/// Wall profiles weigh each stack by the time threads spent in it, on CPU
/// or waiting: the shares are of all the threads' wall time.
const PYTHON_WALL: &[Workload] = &[
    Workload::new("python-threading-wait", Language::Python, "threading-wait")
        .measuring(EventKind::Wall)
        .exercising(&["acquire", "take_turns"])
        .at_least(40.0),
    // Computing only, in one thread: the wait rules' burner.
    Workload::new("python-burn-wall", Language::Python, "burn").measuring(EventKind::Wall),
];

/// Off-CPU profiles weigh each stack by the time threads spent switched
/// out in it; the burner's wall profile is nearly all on CPU.
const NATIVE_WAIT: &[Workload] = &[
    Workload::new("native-lock-off-cpu", Language::Native, "lock")
        .measuring(EventKind::OffCpu)
        .exercising(&["pthread_mutex_lock", "contend"])
        // The main thread, asleep while they contend, holds a fifth.
        .at_least(30.0),
    Workload::new("native-burn-wall", Language::Native, "burn").measuring(EventKind::Wall),
];

const NATIVE: &[Workload] = &[
    Workload::new("native-lock", Language::Native, "lock").exercising(&["pthread_mutex_lock"]),
    Workload::new("native-malloc", Language::Native, "malloc").exercising(&["malloc"]),
    Workload::new("native-memcpy", Language::Native, "memcpy").exercising(&["copy_round"]),
    Workload::new("native-burn", Language::Native, "burn"),
];

fn regenerate() -> bool {
    std::env::var_os("ODP_REGENERATE_FIXTURES").is_some_and(|v| v == "1")
}

fn captures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules/tests/captures")
}

fn data(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file)
}

#[test]
fn python_rule_captures() {
    captures(PYTHON);
}

#[test]
fn jvm_rule_captures() {
    captures(JVM);
}

#[test]
fn jvm_lock_rule_captures() {
    captures(JVM_LOCK);
}

#[test]
fn native_rule_captures() {
    captures(NATIVE);
}

#[test]
fn python_wall_rule_captures() {
    captures(PYTHON_WALL);
}

#[test]
fn native_wait_rule_captures() {
    captures(NATIVE_WAIT);
}

#[test]
fn every_capture_file_belongs_to_a_workload() {
    let known: Vec<String> = [PYTHON, JVM, JVM_LOCK, NATIVE, PYTHON_WALL, NATIVE_WAIT]
        .iter()
        .flat_map(|w| w.iter())
        .map(|w| format!("{}.txt", w.name))
        .collect();
    for entry in fs::read_dir(captures_dir()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(known.contains(&name), "{name}: no workload captures it");
    }
}

/// Captures the workloads when regenerating, then checks what is stored.
fn captures(workloads: &[Workload]) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if regenerate() {
        let programs = Programs::build(workloads[0].language);
        for workload in workloads {
            let capture = capture(&programs, workload);
            fs::create_dir_all(captures_dir()).unwrap();
            fs::write(
                captures_dir().join(format!("{}.txt", workload.name)),
                capture,
            )
            .unwrap();
        }
    }
    let stored: Vec<(&Workload, Capture)> = workloads
        .iter()
        .map(|w| {
            let path = captures_dir().join(format!("{}.txt", w.name));
            let text = fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (ODP_REGENERATE_FIXTURES=1 creates it)",
                    path.display()
                )
            });
            if let Some(event) = w.event {
                let header = format!("# event: {event} at ");
                assert!(text.contains(&header), "{}: not a {event} profile", w.name);
            }
            assert!(
                text.len() <= MAX_CAPTURE_BYTES,
                "{}: {} bytes",
                w.name,
                text.len()
            );
            (w, Capture::parse(&text))
        })
        .collect();
    let exercised: Vec<&str> = workloads
        .iter()
        .flat_map(|w| w.exercises.iter().copied())
        .collect();
    for (workload, capture) in &stored {
        assert!(
            capture.samples() >= 20,
            "{}: too few samples",
            workload.name
        );
        for function in workload.exercises {
            let share = capture.share_pct(function);
            assert!(
                share >= workload.min_share_pct,
                "{}: {function} on {share:.1}% of the samples, under {}%",
                workload.name,
                workload.min_share_pct
            );
        }
        if workload.exercises.is_empty() {
            for function in &exercised {
                let share = capture.share_pct(function);
                assert_eq!(share, 0.0, "{}: {function} on {share}%", workload.name);
            }
        }
    }
}

/// The built programs of one runtime.
enum Programs {
    Python,
    Jvm { classes: PathBuf, log4j: PathBuf },
    Native { binary: PathBuf },
}

impl Programs {
    fn build(language: Language) -> Programs {
        match language {
            Language::Python => Programs::Python,
            Language::Jvm => {
                let classes = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rule-workloads-java");
                fs::create_dir_all(&classes).unwrap();
                let log4j = log4j1_jar();
                javac(&classes, &log4j, "RuleWorkloads.java");
                javac(&classes, &log4j, "Log4jCategory.java");
                javac(&classes, &log4j, "LockWorkloads.java");
                Programs::Jvm { classes, log4j }
            }
            Language::Native => {
                let binary = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rule_workloads");
                let status = Command::new("cc")
                    .args(["-O2", "-pthread", "-fno-omit-frame-pointer", "-o"])
                    .arg(&binary)
                    .arg(data("rule_workloads.c"))
                    .status()
                    .expect("a C compiler (cc) builds the native workloads");
                assert!(status.success(), "cc failed on rule_workloads.c");
                Programs::Native { binary }
            }
        }
    }

    /// Starts `workload` for a while longer than it is profiled.
    fn start(&self, workload: &Workload) -> Killed {
        let seconds = (workload.seconds + WARMUP_WINDOWS + 10).to_string();
        match self {
            Programs::Python => {
                support::start_python_script("rule_workloads.py", &[workload.mode, &seconds])
            }
            Programs::Jvm { classes, log4j } => {
                let mut java = Command::new("java");
                java.arg("-cp");
                if workload.mode == "log4j1" {
                    java.arg(format!("{}:{}", classes.display(), log4j.display()))
                        .arg("Log4jCategory");
                } else if workload.event == Some(EventKind::Lock) {
                    java.arg(classes)
                        .args(["LockWorkloads", workload.mode, LOCK_THREADS]);
                } else {
                    java.arg(classes).arg("RuleWorkloads").arg(workload.mode);
                }
                let child = java
                    .arg(&seconds)
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .expect("java runs the JVM workloads");
                // Up, and its hot path compiled.
                std::thread::sleep(Duration::from_millis(2000));
                Killed(child)
            }
            Programs::Native { binary } => {
                support::start_workload(binary, &[workload.mode, &seconds])
            }
        }
    }
}

/// Log4j 1.2, for Log4jCategory.java.
fn log4j1_jar() -> PathBuf {
    let jar = std::env::var_os("ODP_LOG4J1_JAR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/java/log4j-1.2.jar"));
    assert!(
        jar.exists(),
        "{} not found: install Log4j 1.2 (apt-get install liblog4j1.2-java) or set ODP_LOG4J1_JAR",
        jar.display()
    );
    jar
}

fn javac(classes: &Path, class_path: &Path, source: &str) {
    let status = Command::new("javac")
        .arg("-cp")
        .arg(class_path)
        .arg("-d")
        .arg(classes)
        .arg(data(source))
        .status()
        .expect("javac (a JDK) builds the JVM workloads");
    assert!(status.success(), "javac failed on {source}");
}

/// Profiles the running workload through the agent's sampling thread with the
/// plugin it detects, and renders the capture.
fn capture(programs: &Programs, workload: &Workload) -> String {
    let target = programs.start(workload);
    let spec = ProfileSpec {
        profile_id: Uuid::new_v4(),
        host: "test-host".into(),
        agent_id: "test-agent".into(),
        target: Target::Pid(target.id()),
        include_children: false,
        duration: Duration::from_secs(workload.seconds + WARMUP_WINDOWS),
        frequency_hz: FREQUENCY_HZ,
        window: Duration::from_secs(1),
        cost: CostSettings::default(),
        plugin: None,
        event: workload.event,
        min_wait: None,
        max_message_bytes: odp_core::snapshot::MAX_MESSAGE_BYTES,
    };
    let (_stop_tx, stop_rx) = mpsc::channel();
    let mut header = None;
    let mut snapshots: Vec<Snapshot> = Vec::new();
    let mut result = None;
    sampling_thread::run(
        &Plugins::default(),
        &ProcFs::default(),
        &spec,
        &stop_rx,
        |event| {
            match event {
                RunnerEvent::Started { event, runtime, .. } => {
                    assert_eq!(runtime.language, workload.language, "{}", workload.name);
                    let mut runtime_name = runtime.language.to_string();
                    if let Some(version) = runtime.version {
                        runtime_name += &format!(" {version}");
                    }
                    header = Some(format!(
                        "# runtime: {runtime_name}, {}\n# event: {event} at {FREQUENCY_HZ} Hz for {} s, after {WARMUP_WINDOWS} s\n",
                        tools(workload.language),
                        workload.seconds
                    ));
                }
                RunnerEvent::Window(snapshot) if snapshot.sequence >= WARMUP_WINDOWS => {
                    snapshots.push(*snapshot)
                }
                RunnerEvent::Window(_) => {}
                RunnerEvent::Cost(_) => {}
                RunnerEvent::Finished(reason) => result = Some(Ok(reason)),
                RunnerEvent::Failed(error) => result = Some(Err(error)),
            }
            true
        },
    );
    drop(target);
    assert_eq!(
        result,
        Some(Ok(FinishReason::DurationElapsed)),
        "{}",
        workload.name
    );
    let (capture, agent_samples) = Capture::from_snapshots(&snapshots);
    let program = match workload.language {
        Language::Python => format!("rule_workloads.py {}", workload.mode),
        Language::Jvm if workload.mode == "log4j1" => "Log4jCategory (Log4j 1.2)".to_owned(),
        Language::Jvm if workload.event.is_some() => {
            format!("LockWorkloads {} {LOCK_THREADS}", workload.mode)
        }
        Language::Jvm => format!("RuleWorkloads {}", workload.mode),
        Language::Native => format!("rule_workloads {}", workload.mode),
    };
    let left_out = match agent_samples {
        0 => String::new(),
        n => format!("# left out: {n} samples of the agent's own JFR commands\n"),
    };
    format!(
        "# {}: tests/data {program}, profiled by the agent's sampling thread\n{}{left_out}\
         # regenerate: ODP_REGENERATE_FIXTURES=1 cargo test -p odp-profiler-service --test rule_captures\n{}",
        workload.name,
        header.expect("the profile started"),
        capture.render()
    )
}

/// What else named the frames: py-spy's version; for native stacks, the
/// C library's and the kernel's.
fn tools(language: Language) -> String {
    let output = |program: &str, args: &[&str]| {
        let out = Command::new(program).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    match language {
        Language::Python => output("py-spy", &["--version"]),
        Language::Jvm => "JFR".to_owned(),
        Language::Native => format!(
            "{}, {}",
            output("getconf", &["GNU_LIBC_VERSION"]),
            output("uname", &["-sr"])
        ),
    }
}

/// Where the JFR commands the agent sends a JVM run.
const AGENT_JFR_COMMANDS: &str = "jdk.jfr.internal.dcmd.";

/// A capture: distinct frames and the samples of each distinct stack.
#[derive(Debug, Default)]
struct Capture {
    /// (function, module, file).
    frames: Vec<(String, String, String)>,
    stacks: BTreeMap<Vec<u32>, u64>,
}

impl Capture {
    /// The capture of the windows, and how many samples were the agent's
    /// own JFR commands (left out).
    fn from_snapshots(snapshots: &[Snapshot]) -> (Capture, u64) {
        let mut capture = Capture::default();
        let mut agent_samples = 0;
        let mut index: HashMap<(String, String, String), u32> = HashMap::new();
        for snapshot in snapshots {
            for stack in &snapshot.stacks {
                if snapshot
                    .stack_frames(stack)
                    .any(|f| f.function.starts_with(AGENT_JFR_COMMANDS))
                {
                    agent_samples += stack.count;
                    continue;
                }
                let ids = snapshot
                    .stack_frames(stack)
                    .map(|frame| {
                        let key = frame_key(frame);
                        *index.entry(key.clone()).or_insert_with(|| {
                            capture.frames.push(key);
                            capture.frames.len() as u32 - 1
                        })
                    })
                    .collect();
                *capture.stacks.entry(ids).or_insert(0) += stack.count;
            }
        }
        (capture, agent_samples)
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (function, module, file) in &self.frames {
            out += &format!("frame\t{function}\t{module}\t{file}\n");
        }
        for (ids, count) in &self.stacks {
            let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
            out += &format!("stack\t{count}\t{}\n", ids.join(" "));
        }
        out
    }

    fn parse(text: &str) -> Capture {
        let mut capture = Capture::default();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let fields: Vec<&str> = line.split('\t').collect();
            match fields[..] {
                ["frame", function, module, file] => {
                    capture
                        .frames
                        .push((function.into(), module.into(), file.into()));
                }
                ["stack", count, ids] => {
                    let ids: Vec<u32> = ids.split(' ').map(|i| i.parse().unwrap()).collect();
                    assert!(ids.iter().all(|&i| (i as usize) < capture.frames.len()));
                    capture.stacks.insert(ids, count.parse().unwrap());
                }
                _ => panic!("malformed capture line {line:?}"),
            }
        }
        capture
    }

    fn samples(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// Percentage of the samples with `function` anywhere on their stack.
    fn share_pct(&self, function: &str) -> f64 {
        let on: u64 = self
            .stacks
            .iter()
            .filter(|(ids, _)| ids.iter().any(|&i| self.frames[i as usize].0 == function))
            .map(|(_, count)| count)
            .sum();
        on as f64 * 100.0 / self.samples().max(1) as f64
    }
}

/// A frame as the capture keeps it: no line, and no tab or line break
/// inside a field (none of the plugins' names has one).
fn frame_key(frame: &Frame) -> (String, String, String) {
    let key = (
        frame.function.clone(),
        frame.module.clone(),
        frame.file.clone().unwrap_or_default(),
    );
    for field in [&key.0, &key.1, &key.2] {
        assert!(!field.contains(['\t', '\n']), "{frame:?}");
    }
    key
}
