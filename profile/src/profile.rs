//! A profile as stored and read: a frame dictionary, the stack tree over
//! it, the windows the agent reported, thread names, and the samples as
//! `(window, stack node, thread, count)` rows. Everything is integer ids
//! into the dictionaries, so merging and filtering never touch strings.

use std::collections::HashMap;

use odp_core::{EventKind, Frame, Snapshot};
use uuid::Uuid;

use crate::tree::StackTree;

/// One aggregation window as an agent reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The profile the window belongs to (nil when unknown): blocks that
    /// gather many profiles (a service's hour) keep them apart.
    pub profile_id: Uuid,
    pub host: String,
    pub agent_id: String,
    /// The window's place in its agent's profile (0, 1, 2...).
    pub sequence: u64,
    /// Unix milliseconds.
    pub start_ms: i64,
    pub end_ms: i64,
    pub event: EventKind,
    /// Event units one sample stands for (nanoseconds, bytes...).
    pub period: u64,
    /// 0 when sampling is by period.
    pub frequency_hz: u32,
}

/// The name of a thread in one window.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadName {
    pub window: u32,
    pub tid: u32,
    pub name: String,
}

/// Samples of one stack on one thread in one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sample {
    pub window: u32,
    /// The stack's leaf node in [`Profile::tree`].
    pub node: u32,
    pub tid: u32,
    pub count: u64,
}

/// One profile (or any set of windows: a merge of several profiles is a
/// profile too).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Profile {
    pub frames: Vec<Frame>,
    pub tree: StackTree,
    pub windows: Vec<Window>,
    /// Sorted by (window, tid).
    pub threads: Vec<ThreadName>,
    /// Sorted by (window, node, tid), each key once, counts above 0.
    pub samples: Vec<Sample>,
}

impl Profile {
    /// Every sample's count, summed.
    pub fn total_samples(&self) -> u64 {
        self.samples.iter().map(|s| s.count).sum()
    }

    /// A profile of one agent window.
    pub fn from_snapshot(snapshot: &Snapshot) -> Profile {
        let mut builder = ProfileBuilder::default();
        builder.add_snapshot(snapshot);
        builder.build()
    }

    /// The windows of all `profiles` in one profile, in order; identical
    /// frames and stacks are stored once.
    pub fn merge<'a>(profiles: impl IntoIterator<Item = &'a Profile>) -> Profile {
        let mut builder = ProfileBuilder::default();
        for profile in profiles {
            builder.add_profile(profile);
        }
        builder.build()
    }
}

/// Builds a [`Profile`], interning frames and stacks.
#[derive(Debug, Default)]
pub struct ProfileBuilder {
    frames: Vec<Frame>,
    frame_ids: HashMap<Frame, u32, foldhash::fast::RandomState>,
    tree: StackTree,
    windows: Vec<Window>,
    threads: Vec<ThreadName>,
    samples: Vec<Sample>,
}

impl ProfileBuilder {
    pub fn frame(&mut self, frame: &Frame) -> u32 {
        if let Some(&id) = self.frame_ids.get(frame) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push(frame.clone());
        self.frame_ids.insert(frame.clone(), id);
        id
    }

    pub fn window(&mut self, window: Window) -> u32 {
        self.windows.push(window);
        (self.windows.len() - 1) as u32
    }

    pub fn thread(&mut self, window: u32, tid: u32, name: impl Into<String>) {
        self.threads.push(ThreadName {
            window,
            tid,
            name: name.into(),
        });
    }

    /// Adds `count` samples of the stack of `frames` (ids from
    /// [`Self::frame`], root first); zero counts are dropped.
    pub fn samples(&mut self, window: u32, tid: u32, frames: &[u32], count: u64) {
        if count == 0 {
            return;
        }
        let node = self.tree.intern(frames);
        self.samples.push(Sample {
            window,
            node,
            tid,
            count,
        });
    }

    /// Adds one agent window.
    pub fn add_snapshot(&mut self, snapshot: &Snapshot) {
        let window = self.window(Window {
            profile_id: snapshot.profile_id,
            host: snapshot.host.clone(),
            agent_id: snapshot.agent_id.clone(),
            sequence: snapshot.sequence,
            start_ms: snapshot.window_start_ms,
            end_ms: snapshot.window_end_ms,
            event: snapshot.event,
            period: snapshot.period,
            frequency_hz: snapshot.frequency_hz,
        });
        let frame_ids: Vec<u32> = snapshot.frames.iter().map(|f| self.frame(f)).collect();
        for thread in &snapshot.threads {
            self.thread(window, thread.tid, thread.name.clone());
        }
        let mut path = Vec::new();
        for stack in &snapshot.stacks {
            path.clear();
            // The decoder checked every index against the frame list.
            path.extend(stack.frames.iter().map(|&i| frame_ids[i as usize]));
            self.samples(window, stack.tid, &path, stack.count);
        }
    }

    /// Adds every window of `profile`.
    pub fn add_profile(&mut self, profile: &Profile) {
        let frame_ids: Vec<u32> = profile.frames.iter().map(|f| self.frame(f)).collect();
        let mut nodes = vec![crate::tree::ROOT; profile.tree.len()];
        for node in 1..profile.tree.len() as u32 {
            let parent = nodes[profile.tree.parent(node) as usize];
            let frame = frame_ids[profile.tree.frame(node) as usize];
            nodes[node as usize] = self.tree.child(parent, frame);
        }
        let first_window = self.windows.len() as u32;
        self.windows.extend(profile.windows.iter().cloned());
        self.threads
            .extend(profile.threads.iter().map(|t| ThreadName {
                window: t.window + first_window,
                ..t.clone()
            }));
        self.samples.extend(profile.samples.iter().map(|s| Sample {
            window: s.window + first_window,
            node: nodes[s.node as usize],
            ..*s
        }));
    }

    /// The profile, its rows sorted and identical keys merged.
    pub fn build(mut self) -> Profile {
        self.samples.sort_unstable();
        self.samples.dedup_by(|later, kept| {
            let same = (later.window, later.node, later.tid) == (kept.window, kept.node, kept.tid);
            if same {
                kept.count = kept.count.saturating_add(later.count);
            }
            same
        });
        // The last name given to a thread in a window wins: a stable sort
        // by (window, tid) keeps the order names were given in.
        self.threads.sort_by_key(|t| (t.window, t.tid));
        self.threads.reverse();
        self.threads.dedup_by_key(|t| (t.window, t.tid));
        self.threads.reverse();
        Profile {
            frames: self.frames,
            tree: self.tree,
            windows: self.windows,
            threads: self.threads,
            samples: self.samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};

    pub(crate) fn snapshot(host: &str, sequence: u64, stacks: &[(&[&str], u32, u64)]) -> Snapshot {
        let mut b = SnapshotBuilder::new();
        for (frames, tid, count) in stacks {
            let frames: Vec<Frame> = frames.iter().map(|f| Frame::function(*f)).collect();
            b.add(&frames, *tid, *count);
        }
        b.name_thread(1, "main");
        b.build(SnapshotHeader {
            profile_id: uuid::Uuid::nil(),
            host: host.into(),
            agent_id: "a".into(),
            sequence,
            window_start_ms: 1_000 * sequence as i64,
            window_end_ms: 1_000 * (sequence as i64 + 1),
            event: EventKind::CpuClock,
            period: 10_000_000,
            frequency_hz: 100,
        })
    }

    #[test]
    fn snapshots_become_rows_over_shared_dictionaries() {
        let a = snapshot(
            "h",
            0,
            &[(&["main", "hot"], 1, 5), (&["main", "cold"], 1, 2)],
        );
        let b = snapshot("h", 1, &[(&["main", "hot"], 1, 3)]);
        let merged = Profile::merge([&Profile::from_snapshot(&a), &Profile::from_snapshot(&b)]);
        assert_eq!(merged.frames.len(), 3);
        // root, main, hot, cold
        assert_eq!(merged.tree.len(), 4);
        assert_eq!(merged.windows.len(), 2);
        assert_eq!(merged.total_samples(), 10);
        let hot = merged.samples.iter().filter(|s| s.count == 3).count();
        assert_eq!(hot, 1);
        assert_eq!(merged.threads.len(), 2);
        assert_eq!(merged.threads[1].window, 1);
    }
}
