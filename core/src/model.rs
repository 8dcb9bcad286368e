//! The profile model shared by every part of ODP.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One frame of a call stack, as the agent symbolized it.
///
/// Two frames are the same frame when all four fields are equal; storage
/// keys them by [`crate::hash::frame_hash`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Frame {
    /// Function name, demangled; `[unknown]` style placeholders when the
    /// symbolizer found nothing.
    pub function: String,
    /// The executable, shared library, jar or Python module the code lives
    /// in; empty when unknown.
    #[serde(default)]
    pub module: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

impl Frame {
    pub fn function(name: impl Into<String>) -> Self {
        Frame {
            function: name.into(),
            module: String::new(),
            file: None,
            line: None,
        }
    }

    pub fn with_module(mut self, module: impl Into<String>) -> Self {
        self.module = module.into();
        self
    }

    /// The name flame graphs show: the function, or for code the
    /// symbolizer could not name, the module it lives in (`[libc.so.6]`),
    /// as perf and inferno do.
    pub fn display_name(&self) -> String {
        display_name(&self.function, &self.module)
    }
}

/// See [`Frame::display_name`].
pub fn display_name(function: &str, module: &str) -> String {
    let unnamed = function.is_empty() || function == "[unknown]";
    if unnamed && !module.is_empty() {
        let base = module.rsplit('/').next().unwrap_or(module);
        format!("[{base}]")
    } else if function.is_empty() {
        "[unknown]".to_owned()
    } else {
        function.to_owned()
    }
}

/// A stack of frame names, root first, and how many samples it has: the
/// shape queries hand to [`crate::flamegraph`], [`crate::folded`] and
/// [`crate::stats`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightedStack {
    pub frames: Vec<String>,
    pub count: u64,
}

/// What one sample measures, so that counts of different units are never
/// added together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// Hardware CPU cycles (a PMU is present).
    Cycles,
    /// The kernel's software CPU clock: on-CPU time, in nanoseconds.
    CpuClock,
    /// Wall-clock time, on or off CPU, in nanoseconds.
    Wall,
    /// Time threads spend switched out (blocked, sleeping or preempted),
    /// in nanoseconds, at the stack where they blocked.
    OffCpu,
    /// Time threads spend waiting for a lock (a JVM monitor or a parked
    /// thread's blocker), in nanoseconds, at the stack that waited.
    Lock,
    /// Bytes allocated.
    AllocBytes,
    /// Bytes live on the heap.
    HeapBytes,
}

impl EventKind {
    pub const ALL: [EventKind; 7] = [
        EventKind::Cycles,
        EventKind::CpuClock,
        EventKind::Wall,
        EventKind::OffCpu,
        EventKind::Lock,
        EventKind::AllocBytes,
        EventKind::HeapBytes,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Cycles => "cycles",
            EventKind::CpuClock => "cpu-clock",
            EventKind::Wall => "wall",
            EventKind::OffCpu => "off-cpu",
            EventKind::Lock => "lock",
            EventKind::AllocBytes => "alloc-bytes",
            EventKind::HeapBytes => "heap-bytes",
        }
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            EventKind::Cycles => 1,
            EventKind::CpuClock => 2,
            EventKind::Wall => 3,
            EventKind::AllocBytes => 4,
            EventKind::HeapBytes => 5,
            EventKind::OffCpu => 6,
            EventKind::Lock => 7,
        }
    }

    /// What one unit of the event's total is: the unit pprof exports name
    /// and views print.
    pub fn unit(self) -> &'static str {
        match self {
            EventKind::Cycles => "cycles",
            EventKind::CpuClock | EventKind::Wall | EventKind::OffCpu | EventKind::Lock => {
                "nanoseconds"
            }
            EventKind::AllocBytes | EventKind::HeapBytes => "bytes",
        }
    }

    /// Whether a sample stands for a span of time: at F Hz, 1/F s of the
    /// event (CPU time, wall time, time off CPU or waiting for a lock).
    /// Plugins that measure durations (off-CPU, lock waits) express them
    /// in such samples too, so every timed profile reads the same way.
    pub fn is_timed(self) -> bool {
        self.unit() == "nanoseconds"
    }

    pub(crate) fn from_code(code: u8) -> Option<Self> {
        EventKind::ALL.into_iter().find(|e| e.code() == code)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown event kind {0:?}")]
pub struct UnknownEventKind(pub String);

impl FromStr for EventKind {
    type Err = UnknownEventKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventKind::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| UnknownEventKind(s.to_owned()))
    }
}

/// The runtime a target process runs, which decides the agent plugin that
/// samples it (`native` perf_event, `python` py-spy, `jvm` JFR).
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Native,
    Python,
    Jvm,
}

impl Language {
    pub const ALL: [Language; 3] = [Language::Native, Language::Python, Language::Jvm];

    pub fn as_str(self) -> &'static str {
        match self {
            Language::Native => "native",
            Language::Python => "python",
            Language::Jvm => "jvm",
        }
    }
}

impl Language {
    /// What [`Language::measures`] allows, for error messages.
    pub const MEASURES: &'static str =
        "every plugin measures cpu-clock (cycles where a PMU exists); native also off-cpu and \
         wall, python also wall, jvm also alloc-bytes, heap-bytes and lock";

    /// Whether this runtime's plugin can measure `event`.
    pub fn measures(self, event: EventKind) -> bool {
        match event {
            EventKind::Cycles | EventKind::CpuClock => true,
            EventKind::AllocBytes | EventKind::HeapBytes => self == Language::Jvm,
            EventKind::Lock => self == Language::Jvm,
            EventKind::Wall => matches!(self, Language::Native | Language::Python),
            EventKind::OffCpu => self == Language::Native,
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown language {0:?} (expected native, python or jvm)")]
pub struct UnknownLanguage(pub String);

impl FromStr for Language {
    type Err = UnknownLanguage;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Language::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| UnknownLanguage(s.to_owned()))
    }
}

/// Which process(es) on a host a profile samples.
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by", content = "value")]
pub enum Target {
    /// One process by id.
    Pid(u32),
    /// Every process whose executable name (`/proc/PID/comm`) equals this.
    ProcessName(String),
    /// Every process whose full command line (`/proc/PID/cmdline`, the
    /// arguments joined by spaces) matches this regex, unanchored.
    #[serde(rename = "cmdline")]
    CommandLine(String),
    /// Every process in this cgroup or below it (`/system.slice/x.scope`),
    /// or in a container given by its id (64 hex digits or a prefix of at
    /// least 12), found as a component of the cgroup path.
    Cgroup(String),
    /// No process: samples uploaded from another tool's file, in this
    /// format (`pprof`, `folded`). Agents refuse such targets.
    Imported(String),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Pid(pid) => write!(f, "pid {pid}"),
            Target::ProcessName(name) => write!(f, "process {name:?}"),
            Target::CommandLine(regex) => write!(f, "command line matching {regex:?}"),
            Target::Cgroup(path) => write!(f, "cgroup {path}"),
            Target::Imported(format) => write!(f, "imported {format}"),
        }
    }
}

impl Target {
    /// Checks the value a user gave, as the API does before storing a
    /// request and the agent before running it: a pid is positive, a name
    /// not empty, a command-line regex compiles within the size limits of
    /// user patterns, a cgroup is a path or a container id.
    pub fn check(&self) -> Result<(), TargetError> {
        match self {
            Target::Pid(0) => Err(TargetError::PidZero),
            Target::ProcessName(name) if name.is_empty() => Err(TargetError::EmptyProcessName),
            Target::CommandLine(pattern) => crate::pattern::compile("cmdline", pattern)
                .map(drop)
                .map_err(TargetError::CommandLine),
            Target::Cgroup(wanted) => CgroupTarget::parse(wanted)
                .map(drop)
                .map_err(TargetError::Cgroup),
            Target::Pid(_) | Target::ProcessName(_) | Target::Imported(_) => Ok(()),
        }
    }
}

/// Why a [`Target`] cannot be profiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("pid 0 is not a process")]
    PidZero,
    #[error("empty process name")]
    EmptyProcessName,
    #[error(transparent)]
    CommandLine(crate::pattern::FilterError),
    #[error(transparent)]
    Cgroup(CgroupError),
}

/// Why a [`Target::Cgroup`] value designates no cgroup.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CgroupError {
    #[error("`cgroup` is longer than {MAX_CGROUP_LEN} bytes")]
    TooLong,
    #[error("`cgroup` path has control characters or `..`")]
    UnsafePath,
    #[error(
        "`cgroup` must be a path starting with `/` or a container id \
         ({MIN_CONTAINER_ID} to {MAX_CONTAINER_ID} hex digits)"
    )]
    NeitherPathNorId,
}

/// Longest cgroup path accepted, in bytes (the kernel's `PATH_MAX`).
pub const MAX_CGROUP_LEN: usize = 4096;
/// Shortest container-id prefix accepted: Docker's short ids are 12 hex
/// digits, and anything shorter matches unrelated containers too easily.
pub const MIN_CONTAINER_ID: usize = 12;
/// A full container id (Docker, containerd, CRI-O).
pub const MAX_CONTAINER_ID: usize = 64;

/// What a [`Target::Cgroup`] value designates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupTarget {
    /// This cgroup and those below it.
    Path(String),
    /// A container: any cgroup with a path component containing this id.
    ContainerId(String),
}

impl CgroupTarget {
    /// A path starting with `/`, or 12 to 64 hex digits naming a
    /// container. The error says what is accepted.
    pub fn parse(wanted: &str) -> Result<Self, CgroupError> {
        if wanted.starts_with('/') {
            if wanted.len() > MAX_CGROUP_LEN {
                return Err(CgroupError::TooLong);
            }
            if wanted.chars().any(char::is_control) || wanted.split('/').any(|c| c == "..") {
                return Err(CgroupError::UnsafePath);
            }
            // `/a/b/` and `/a/b` are the same cgroup; `/` stays `/`.
            let trimmed = wanted.trim_end_matches('/');
            return Ok(CgroupTarget::Path(if trimmed.is_empty() {
                "/".to_owned()
            } else {
                trimmed.to_owned()
            }));
        }
        let is_id = (MIN_CONTAINER_ID..=MAX_CONTAINER_ID).contains(&wanted.len())
            && wanted.bytes().all(|b| b.is_ascii_hexdigit());
        if is_id {
            Ok(CgroupTarget::ContainerId(wanted.to_ascii_lowercase()))
        } else {
            Err(CgroupError::NeitherPathNorId)
        }
    }

    /// Whether a process in this cgroup (one path of `/proc/PID/cgroup`)
    /// is selected: a path takes the cgroup itself and its descendants
    /// (`/a/b` selects `/a/b/c` but not `/a/bc`); a container id takes any
    /// path with a component containing it (`docker-<id>.scope`,
    /// `cri-containerd-<id>.scope`, a bare `<id>` under `/kubepods/...`).
    pub fn matches(&self, path: &str) -> bool {
        match self {
            CgroupTarget::Path(wanted) if wanted == "/" => path.starts_with('/'),
            CgroupTarget::Path(wanted) => path
                .strip_prefix(wanted.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
            CgroupTarget::ContainerId(id) => path
                .split('/')
                .any(|component| component.to_ascii_lowercase().contains(id.as_str())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_kinds_round_trip_through_strings_and_codes() {
        for kind in EventKind::ALL {
            assert_eq!(kind.as_str().parse::<EventKind>().unwrap(), kind);
            assert_eq!(EventKind::from_code(kind.code()), Some(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
        assert!("cycle".parse::<EventKind>().is_err());
        assert_eq!(EventKind::from_code(0), None);
    }

    #[test]
    fn languages_round_trip_through_strings_and_json() {
        for language in Language::ALL {
            assert_eq!(language.as_str().parse::<Language>().unwrap(), language);
            let json = serde_json::to_string(&language).unwrap();
            assert_eq!(json, format!("\"{}\"", language.as_str()));
        }
        assert!("java".parse::<Language>().is_err());
    }

    #[test]
    fn unnamed_frames_show_their_module() {
        assert_eq!(
            Frame::function("main").with_module("/bin/x").display_name(),
            "main"
        );
        assert_eq!(
            Frame::function("[unknown]")
                .with_module("/lib/x86_64-linux-gnu/libc.so.6")
                .display_name(),
            "[libc.so.6]"
        );
        assert_eq!(Frame::function("[unknown]").display_name(), "[unknown]");
        assert_eq!(Frame::function("").display_name(), "[unknown]");
    }

    #[test]
    fn targets_check_user_values() {
        for ok in [
            Target::Pid(1),
            Target::ProcessName("demo".into()),
            Target::CommandLine(r"java .*Main\b".into()),
            Target::Cgroup("/system.slice/".into()),
            Target::Cgroup("0123456789AB".into()),
        ] {
            assert_eq!(ok.check(), Ok(()), "{ok}");
        }
        for bad in [
            Target::Pid(0),
            Target::ProcessName(String::new()),
            Target::CommandLine("(".into()),
            Target::Cgroup("system.slice".into()),
            Target::Cgroup("0123456789a".into()),
            Target::Cgroup("/a/../b".into()),
        ] {
            assert!(bad.check().is_err(), "{bad}");
        }
        assert_eq!(
            CgroupTarget::parse("/").unwrap(),
            CgroupTarget::Path("/".into())
        );
    }

    #[test]
    fn target_serializes_with_its_kind() {
        let json = serde_json::to_string(&Target::ProcessName("demo".into())).unwrap();
        assert_eq!(json, r#"{"by":"process_name","value":"demo"}"#);
        let back: Target = serde_json::from_str(r#"{"by":"pid","value":42}"#).unwrap();
        assert_eq!(back, Target::Pid(42));
        // New kinds use the same tagged form; old rows keep decoding.
        for (target, json) in [
            (
                Target::CommandLine("java .*Main".into()),
                r#"{"by":"cmdline","value":"java .*Main"}"#,
            ),
            (
                Target::Cgroup("/system.slice/x.scope".into()),
                r#"{"by":"cgroup","value":"/system.slice/x.scope"}"#,
            ),
        ] {
            assert_eq!(serde_json::to_string(&target).unwrap(), json);
            assert_eq!(serde_json::from_str::<Target>(json).unwrap(), target);
        }
    }
}
