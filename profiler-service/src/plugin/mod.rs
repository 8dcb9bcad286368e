//! Sampling plugins: each turns a set of target processes into stacks.
//!
//! A profile's sampling thread ([`crate::sampling_thread`]), a blocking
//! thread of its own, owns the window bookkeeping and calls the plugin's
//! [`Session`]: `poll` moves whatever the plugin collected since the last
//! call into the window's [`WindowSink`], and `sync_targets` tells it which
//! processes the target designates now.
//!
//! One module per plugin: [`native`] (perf_event), [`python`] (py-spy) and
//! [`jvm`] (JFR over the attach socket). [`identify`] tells a target's
//! runtime from `/proc`, [`runtime_info`] what it runs with (flags,
//! libraries, build id), and [`Plugins`] maps each runtime to its plugin.
//! Every profile runs its session on its own thread, so a plugin that
//! fails (or panics) ends only its own profile.

pub mod identify;
pub mod jvm;
pub mod native;
pub mod python;
pub mod runtime_info;
pub mod waits;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use odp_core::cost::OptionsError;
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Language, Snapshot, Target};

use crate::targets::ProcFs;

/// A kind of profiler.
pub trait Plugin: Send + Sync {
    /// The name reported in heartbeats.
    fn name(&self) -> &'static str;

    /// The runtime whose processes it samples.
    fn language(&self) -> Language;

    /// The events it measures: a start asking for one of them in its
    /// runtime gets this plugin.
    fn measures(&self) -> &'static [EventKind];

    /// Starts sampling the given processes. Called on the profile's own
    /// thread, where the session then stays (sessions need not be `Send`).
    /// `options` are what the profile asks beyond that (the wait events'
    /// minimum wait); plugins without such settings ignore them.
    fn open(
        &self,
        pids: &[u32],
        frequency_hz: u32,
        options: &OpenOptions,
    ) -> Result<Box<dyn Session>, PluginError>;
}

/// See [`Session::take_wait_sampling`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitSampling {
    /// Context switches out of the target's threads.
    pub switches: u64,
    /// 1 in how many was sampled.
    pub sampled_one_in: u64,
}

/// What a profile asks of its plugin beyond the processes and frequency.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Waits shorter than this are not recorded (off-CPU and lock events).
    pub min_wait: Option<Duration>,
    /// The profile's target, for plugins that can follow it beyond the
    /// processes resolved so far (the native plugin's per-CPU mode).
    pub target: Option<Target>,
    /// A pid target's descendants are the profile's too: a plugin that
    /// follows the target itself follows them from their fork.
    pub include_children: bool,
}

/// One running profile of one plugin.
pub trait Session {
    /// What the samples measure.
    fn event(&self) -> EventKind;

    /// The processes currently sampled.
    fn pids(&self) -> Vec<u32>;

    /// Event units one sample of the window that just ended stands for.
    /// Called once per window, when it closes.
    fn window_period(&mut self) -> u64;

    /// Moves the samples collected since the last call into the window.
    fn poll(&mut self, sink: &mut WindowSink) -> Result<PollStats, PluginError>;

    /// Samples at a new frequency from the next poll on (call right after a
    /// poll: samples still buffered may be lost).
    fn set_frequency(&mut self, frequency_hz: u32);

    /// Switches sampling off (`true`) or back on, e.g. for a duty cycle.
    fn set_paused(&mut self, paused: bool);

    /// The target now designates these (live) processes: attach new ones
    /// and their new threads, forget the ones gone.
    fn sync_targets(&mut self, pids: &[u32]);

    /// CPU used by the plugin's helper processes (py-spy) since the
    /// session opened, which the overhead budget counts as the agent's.
    fn helper_cpu_time(&self) -> Duration {
        Duration::ZERO
    }

    /// Whether each thread earns the session's frequency in samples per
    /// second it runs on a CPU, so that the target's CPU time says how many
    /// samples to expect. True of the kernel's CPU clock; not of py-spy,
    /// which also samples a thread waiting for the GIL or a CPU, nor of
    /// JFR, whose execution samples skip native code.
    fn follows_cpu_time(&self) -> bool {
        false
    }

    /// Whether the session sees the target's new processes from their
    /// first sample, without waiting for a rescan: their CPU time before
    /// the rescan finds them is then not lost.
    fn sees_new_processes(&self) -> bool {
        false
    }

    /// Whether a sample of the target was taken since the last
    /// `sync_targets`: a target whose processes all live shorter than a
    /// rescan period is still running while this is true.
    fn sampled_target_lately(&self) -> bool {
        false
    }

    /// Whether the session measures only when the profile ends (a JVM's
    /// heap histogram): the [sampling thread](crate::sampling_thread) then
    /// cuts no window while it runs and publishes the one `finish` fills,
    /// failing the profile if `finish` fails, since that window is the
    /// whole result.
    fn sends_at_end(&self) -> bool {
        false
    }

    /// How the window that just ended sampled the target's waits, for
    /// sessions that trace context switches (once per window).
    fn take_wait_sampling(&mut self) -> Option<WaitSampling> {
        None
    }

    /// The profile ends: moves everything still buffered into the window.
    /// Plugins whose tool writes its samples only when it stops (py-spy,
    /// JFR) stop it here; the others just poll.
    fn finish(&mut self, sink: &mut WindowSink) -> Result<PollStats, PluginError> {
        self.poll(sink)
    }
}

/// The plugins: for each runtime, one per kind of event it measures. A
/// profile gets the plugin of its target's runtime that measures its event
/// (see [`Plugin::measures`]). Cloning shares the plugins.
#[derive(Clone)]
pub struct Plugins {
    list: Vec<Arc<dyn Plugin>>,
    runtime_info: runtime_info::Collector,
}

impl Plugins {
    /// The standard plugins, reading `/proc` through `procfs`.
    pub fn standard(procfs: ProcFs, settings: PluginSettings) -> Self {
        let native = native::NativePlugin::new(procfs.clone())
            .with_per_cpu(settings.native_per_cpu)
            .with_debuginfod(native::debuginfod::Debuginfod::new(&settings.debuginfod));
        let python =
            python::PythonPlugin::new(procfs.clone(), settings.py_spy, settings.python_native);
        let jvm = jvm::JvmPlugin::new(procfs.clone(), settings.jcmd.clone());
        Plugins {
            runtime_info: runtime_info::Collector::new(procfs, settings.jcmd),
            list: vec![
                Arc::new(native.clone()),
                Arc::new(native.clone().measuring(native::Mode::OffCpu)),
                Arc::new(native.measuring(native::Mode::Wall)),
                Arc::new(python.clone()),
                Arc::new(python.wall()),
                Arc::new(jvm.clone()),
                Arc::new(jvm.clone().allocations()),
                Arc::new(jvm.clone().locks()),
                Arc::new(jvm.heap()),
            ],
        }
    }

    /// The CPU-sampling plugin of a runtime.
    pub fn get(&self, language: Language) -> &dyn Plugin {
        self.for_event(language, None)
            .expect("every runtime has a CPU plugin")
    }

    /// The plugin that measures `event` (its CPU event when `None`) in a
    /// runtime, or why there is none.
    pub fn for_event(
        &self,
        language: Language,
        event: Option<EventKind>,
    ) -> Result<&dyn Plugin, OptionsError> {
        let event = event.unwrap_or(EventKind::CpuClock);
        self.list
            .iter()
            .find(|p| p.language() == language && p.measures().contains(&event))
            .map(|p| &**p)
            .ok_or(OptionsError::PluginCannotMeasure {
                plugin: language,
                event,
            })
    }

    /// What a target's processes run (flags, libraries, executable), for
    /// a profile of `language`; see [`runtime_info`].
    pub fn runtime_info(&self, language: Language, pids: &[u32]) -> odp_core::runtime::RuntimeInfo {
        self.runtime_info.collect(language, pids)
    }

    /// The plugin names, as heartbeats report them.
    pub fn names(&self) -> Vec<String> {
        Language::ALL
            .into_iter()
            .map(|l| self.get(l).name().to_owned())
            .collect()
    }
}

impl Default for Plugins {
    fn default() -> Self {
        Plugins::standard(ProcFs::default(), PluginSettings::default())
    }
}

/// The external tools plugins run, and their options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginSettings {
    /// py-spy, for the `python` plugin.
    pub py_spy: std::path::PathBuf,
    /// Whether Python stacks include native (C) frames.
    pub python_native: bool,
    /// jcmd, for the `jvm` plugin.
    pub jcmd: std::path::PathBuf,
    /// The debuginfod servers the `native` plugin fetches the debug files
    /// of stripped modules from, and its cache.
    pub debuginfod: native::debuginfod::DebuginfodSettings,
    /// Whether the `native` plugin's CPU profiles of process-name,
    /// command-line and cgroup targets sample per CPU (see
    /// [`native::NativePlugin::with_per_cpu`]).
    pub native_per_cpu: bool,
}

impl Default for PluginSettings {
    fn default() -> Self {
        PluginSettings {
            py_spy: "py-spy".into(),
            python_native: false,
            jcmd: "jcmd".into(),
            // `DEBUGINFOD_URLS`, as gdb and perf on the host use it.
            debuginfod: native::debuginfod::DebuginfodSettings::from_env(None),
            native_per_cpu: true,
        }
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PollStats {
    pub samples: u64,
    /// Samples the kernel or runtime dropped.
    pub lost: u64,
    /// Samples the kernel did not take while it throttled the event.
    pub throttled: u64,
    /// Samples of processes that started and exited between two rescans,
    /// whose CPU time nothing but these samples measured: expected as
    /// taken (sessions that [see new processes](Session::sees_new_processes)).
    pub expected_as_sampled: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("no process matches {0}")]
    NoSuchProcess(String),
    #[error(transparent)]
    Perf(#[from] native::perf::OpenError),
    /// The kernel or the agent's rights lack what the profile needs.
    #[error("{0}")]
    Unsupported(String),
    #[error("no thread of pids {0:?} could be sampled")]
    NothingAttached(Vec<u32>),
    /// The plugin's external tool cannot be run at all.
    #[error("{tool} cannot be run ({path}): {error}; {hint}")]
    ToolMissing {
        tool: &'static str,
        path: String,
        error: std::io::Error,
        hint: &'static str,
    },
    #[error("cannot create the plugin's working directory: {0}")]
    WorkDir(std::io::Error),
    /// The plugin's external tool ran and failed.
    #[error("{tool} failed on pid {pid}: {message}")]
    ToolFailed {
        tool: &'static str,
        pid: u32,
        message: String,
    },
}

/// The window being filled: a [`SnapshotBuilder`] plus per-window caches so
/// that a frame a plugin has already interned costs one hash lookup per
/// sample, not a symbol clone.
#[derive(Debug, Default)]
pub struct WindowSink {
    builder: SnapshotBuilder,
    /// Plugin-chosen key (e.g. pid and address) → interned frame index.
    frames: HashMap<(u32, u64), u32>,
    named_threads: HashSet<u32>,
}

impl WindowSink {
    pub fn new() -> Self {
        Self::default()
    }

    /// The index of the frame under `key`, interning `make()` on first use
    /// within this window.
    pub fn frame(&mut self, key: (u32, u64), make: impl FnOnce() -> Frame) -> u32 {
        if let Some(&index) = self.frames.get(&key) {
            return index;
        }
        let index = self.builder.intern(&make());
        self.frames.insert(key, index);
        index
    }

    /// The index of a frame, interned by value: for plugins whose tools
    /// hand out frames already symbolized (no address to key them by).
    pub fn intern(&mut self, frame: &Frame) -> u32 {
        self.builder.intern(frame)
    }

    /// Adds samples of a stack of interned frames, root first.
    pub fn add_stack(&mut self, frames: Vec<u32>, tid: u32, count: u64) {
        self.builder.add_indexes(frames, tid, count);
    }

    /// Names a thread once per window; `name()` runs only the first time.
    pub fn name_thread(&mut self, tid: u32, name: impl FnOnce() -> Option<String>) {
        if self.named_threads.insert(tid) {
            if let Some(name) = name() {
                self.builder.name_thread(tid, name);
            }
        }
    }

    pub fn samples(&self) -> u64 {
        self.builder.samples()
    }

    /// Ends the window and starts a fresh one.
    pub fn take(&mut self, header: SnapshotHeader) -> Snapshot {
        std::mem::take(self).builder.build(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugins_measure_exactly_what_the_api_accepts() {
        // The API checks starts with `Language::measures`; an event it lets
        // through must find a plugin here, and one it refuses must not.
        let plugins = Plugins::default();
        for language in Language::ALL {
            for event in EventKind::ALL {
                assert_eq!(
                    plugins.for_event(language, Some(event)).is_ok(),
                    language.measures(event),
                    "{language} {event}"
                );
            }
        }
    }

    #[test]
    fn each_runtime_and_event_finds_its_plugin_or_says_why_not() {
        let plugins = Plugins::default();
        assert_eq!(plugins.names(), ["native", "python", "jvm"]);
        for language in Language::ALL {
            let plugin = plugins.for_event(language, None).unwrap();
            assert_eq!(plugin.name(), language.as_str());
            let cpu = plugins.for_event(language, Some(EventKind::CpuClock));
            assert_eq!(cpu.unwrap().name(), language.as_str());
        }
        assert!(plugins
            .for_event(Language::Jvm, Some(EventKind::AllocBytes))
            .is_ok());
        assert!(plugins
            .for_event(Language::Jvm, Some(EventKind::HeapBytes))
            .is_ok());
        let lock = plugins.for_event(Language::Jvm, Some(EventKind::Lock));
        assert_eq!(lock.unwrap().name(), "jvm");
        let refused = plugins
            .for_event(Language::Python, Some(EventKind::Lock))
            .err()
            .unwrap();
        assert_eq!(
            refused,
            OptionsError::PluginCannotMeasure {
                plugin: Language::Python,
                event: EventKind::Lock
            }
        );
        assert!(
            refused
                .to_string()
                .contains("python plugin cannot measure lock"),
            "{refused}"
        );
        let refused = plugins
            .for_event(Language::Python, Some(EventKind::AllocBytes))
            .err()
            .unwrap();
        assert!(refused
            .to_string()
            .contains("python plugin cannot measure alloc-bytes"));
        assert!(plugins
            .for_event(Language::Native, Some(EventKind::HeapBytes))
            .is_err());
    }
}
