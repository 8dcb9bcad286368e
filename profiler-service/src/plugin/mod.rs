//! Sampling plugins: each turns a set of target processes into stacks.
//!
//! The profile runner ([`crate::runner`]) owns the window bookkeeping and
//! calls a plugin's [`Session`] on its own blocking thread: `poll` moves
//! whatever the plugin collected since the last call into the window's
//! [`WindowSink`], and `sync_targets` tells it which processes the target
//! designates now. Only `native` (perf_event) exists today; Python and JVM
//! plugins slot in as further modules implementing the same two traits.

pub mod native;

use std::collections::{HashMap, HashSet};

use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot};

/// A kind of profiler.
pub trait Plugin: Send + Sync {
    /// The name reported in heartbeats.
    fn name(&self) -> &'static str;

    /// Starts sampling the given processes. Called on the profile's own
    /// thread, where the session then stays (sessions need not be `Send`).
    fn open(&self, pids: &[u32], frequency_hz: u32) -> Result<Box<dyn Session>, PluginError>;
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
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PollStats {
    pub samples: u64,
    /// Samples the kernel or runtime dropped.
    pub lost: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("no process matches {0}")]
    NoSuchProcess(String),
    #[error(transparent)]
    Perf(#[from] native::perf::OpenError),
    #[error("no thread of pids {0:?} could be sampled")]
    NothingAttached(Vec<u32>),
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
