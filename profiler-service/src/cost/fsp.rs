//! Function selective pruning (Atys 5.1): in a window, keep the busiest
//! threads up to a cumulative share of the samples and drop the rest before
//! the window is aggregated anywhere.
//!
//! In busy services most threads are idle daemons whose few samples add
//! distinct stacks (cost in every later aggregation) and little to the hot
//! spots; P99 (share 0.99) keeps the threads that carry 99 % of the samples.
//!
//! What is dropped stays counted: one stack, [`PRUNED_FRAME`] on thread 0,
//! holds the pruned samples. The window keeps its total, so every kept
//! function keeps its true share instead of growing by the pruned share
//! (1 % at P99, the whole of the error for functions the pruned threads
//! never ran), and the flame graph shows how much was pruned.

use std::collections::{HashMap, HashSet};

use odp_core::snapshot::StackCount;
use odp_core::{Frame, Snapshot};

/// The one frame of the stack that stands for a window's pruned samples.
pub const PRUNED_FRAME: &str = "[pruned threads]";

/// What pruning removed from one window.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PruneStats {
    pub threads_kept: u32,
    pub threads_pruned: u32,
    pub samples_pruned: u64,
}

/// The threads to keep: busiest first (ties by tid), until the kept ones
/// hold at least `share` of all samples.
pub fn select(per_thread: &HashMap<u32, u64>, share: f64) -> HashSet<u32> {
    let total: u64 = per_thread.values().sum();
    let need = (share.clamp(0.0, 1.0) * total as f64).ceil() as u64;
    let mut ranked: Vec<(u32, u64)> = per_thread.iter().map(|(&t, &c)| (t, c)).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut kept = HashSet::new();
    let mut sum = 0;
    for (tid, count) in ranked {
        if sum >= need {
            break;
        }
        kept.insert(tid);
        sum += count;
    }
    kept
}

/// Samples per thread of a snapshot (tid 0, "unknown thread", is one more).
pub fn thread_counts(snapshot: &Snapshot) -> HashMap<u32, u64> {
    let mut counts = HashMap::new();
    for stack in &snapshot.stacks {
        *counts.entry(stack.tid).or_insert(0) += stack.count;
    }
    counts
}

/// Drops the stacks of all but the busiest threads up to `share`, then the
/// frames and thread names nothing refers to any more, and counts what it
/// dropped in one [`PRUNED_FRAME`] stack.
pub fn prune(snapshot: &mut Snapshot, share: f64) -> PruneStats {
    let counts = thread_counts(snapshot);
    let kept = select(&counts, share);
    let samples_pruned = counts
        .iter()
        .filter(|(tid, _)| !kept.contains(tid))
        .map(|(_, &c)| c)
        .sum();
    let stats = PruneStats {
        threads_kept: kept.len() as u32,
        threads_pruned: (counts.len() - kept.len()) as u32,
        samples_pruned,
    };
    if stats.threads_pruned == 0 {
        return stats;
    }
    snapshot.stacks.retain(|s| kept.contains(&s.tid));
    snapshot.threads.retain(|t| kept.contains(&t.tid));
    drop_unused_frames(snapshot);
    snapshot.frames.push(Frame::function(PRUNED_FRAME));
    snapshot.stacks.push(StackCount {
        frames: vec![(snapshot.frames.len() - 1) as u32],
        tid: 0,
        count: samples_pruned,
    });
    stats
}

/// Removes the frames no stack uses, renumbering the rest in order.
fn drop_unused_frames(snapshot: &mut Snapshot) {
    // Renumber the frames still in use, keeping their order.
    let mut used = vec![false; snapshot.frames.len()];
    for stack in &snapshot.stacks {
        for &i in &stack.frames {
            used[i as usize] = true;
        }
    }
    let mut remap = vec![u32::MAX; used.len()];
    let mut next = 0;
    for (i, &u) in used.iter().enumerate() {
        if u {
            remap[i] = next;
            next += 1;
        }
    }
    let frames = std::mem::take(&mut snapshot.frames);
    snapshot.frames = frames
        .into_iter()
        .zip(&used)
        .filter_map(|(f, &u)| u.then_some(f))
        .collect();
    for stack in &mut snapshot.stacks {
        for i in &mut stack.frames {
            *i = remap[*i as usize];
        }
    }
}

#[cfg(test)]
mod tests {
    use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
    use odp_core::{EventKind, Frame};
    use uuid::Uuid;

    use super::*;

    fn header() -> SnapshotHeader {
        SnapshotHeader {
            profile_id: Uuid::nil(),
            host: "h".into(),
            agent_id: "a".into(),
            sequence: 0,
            window_start_ms: 0,
            window_end_ms: 1,
            event: EventKind::CpuClock,
            period: 1,
            frequency_hz: 99,
        }
    }

    #[test]
    fn keeps_the_busiest_threads_up_to_the_share() {
        let counts: HashMap<u32, u64> = [(1, 60), (2, 30), (3, 6), (4, 3), (5, 1)].into();
        let keep = |share| {
            let mut v: Vec<u32> = select(&counts, share).into_iter().collect();
            v.sort_unstable();
            v
        };
        assert_eq!(keep(0.5), vec![1]);
        assert_eq!(keep(0.9), vec![1, 2]);
        assert_eq!(keep(0.91), vec![1, 2, 3]);
        assert_eq!(keep(0.99), vec![1, 2, 3, 4]);
        assert_eq!(keep(1.0), vec![1, 2, 3, 4, 5]);
        assert!(select(&HashMap::new(), 0.99).is_empty());
    }

    #[test]
    fn prunes_idle_threads_and_their_frames() {
        let mut b = SnapshotBuilder::new();
        let main = Frame::function("main");
        let hot = Frame::function("hot");
        let idle = Frame::function("idle_wait");
        b.add(&[main.clone(), hot.clone()], 10, 95);
        b.add(std::slice::from_ref(&main), 10, 2);
        b.add(std::slice::from_ref(&idle), 20, 2);
        b.add(&[main.clone(), idle.clone()], 30, 1);
        b.name_thread(10, "worker");
        b.name_thread(20, "daemon");
        let mut snapshot = b.build(header());

        let stats = prune(&mut snapshot, 0.95);
        assert_eq!(
            stats,
            PruneStats {
                threads_kept: 1,
                threads_pruned: 2,
                samples_pruned: 3
            }
        );
        // The total is kept: the pruned samples are one stack on thread 0.
        assert_eq!(snapshot.total_samples(), 100);
        assert!(snapshot.stacks.iter().all(|s| s.tid == 10 || s.tid == 0));
        assert_eq!(snapshot.threads.len(), 1);
        // The idle frame is gone and indexes still resolve.
        assert_eq!(snapshot.frames.len(), 3);
        let names: Vec<Vec<&str>> = snapshot
            .stacks
            .iter()
            .map(|s| {
                snapshot
                    .stack_frames(s)
                    .map(|f| f.function.as_str())
                    .collect()
            })
            .collect();
        assert_eq!(
            names,
            vec![vec!["main"], vec!["main", "hot"], vec![PRUNED_FRAME]]
        );
        assert_eq!(snapshot.stacks[2].count, 3);
        // Still a valid snapshot on the wire.
        assert_eq!(Snapshot::decode(&snapshot.encode()).unwrap(), snapshot);

        // Share 1 keeps everything.
        let mut b = SnapshotBuilder::new();
        b.add(&[main, hot], 1, 5);
        b.add(&[idle], 2, 1);
        let mut all = b.build(header());
        let before = all.clone();
        assert_eq!(prune(&mut all, 1.0).threads_pruned, 0);
        assert_eq!(all, before);
    }
}
