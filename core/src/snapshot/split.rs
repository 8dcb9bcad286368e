//! Cutting a window into messages a broker takes.
//!
//! Kafka refuses a message over its `message.max.bytes` (about 1 MB by
//! default), and a broker that accepts one it cannot serve stalls the
//! partition behind it. A busy window of a deep, many-threaded program
//! at a high rate can pass that, so the agent cuts it into parts of whole
//! stacks, each a complete snapshot of the same window with the frames
//! and threads its stacks use. Summed, the parts are the window.

use std::collections::{HashMap, HashSet};

use super::{Snapshot, StackCount, ThreadInfo};

/// The agent's default for the largest message it sends: under Kafka's
/// default `message.max.bytes` (1,048,588) with room for the record's
/// key, headers and batch overhead.
pub const MAX_MESSAGE_BYTES: usize = 960 * 1024;

impl Snapshot {
    /// This window as snapshots whose encoding fits `max_bytes`, stacks in
    /// their order, every part with this snapshot's header (the caller
    /// numbers them). One stack too large alone stays a part of its own.
    pub fn split_to_fit(self, max_bytes: usize) -> Vec<Snapshot> {
        // Most windows are far below the limit: a bound from the sizes
        // alone spares them an encoding the publisher does anyway.
        if self.encoded_len_bound() <= max_bytes || self.stacks.len() < 2 {
            return vec![self];
        }
        let size = self.encode().len();
        if size <= max_bytes {
            return vec![self];
        }
        // Aim below the limit so most parts fit the first time; the ones
        // that do not are cut again.
        let parts = (size * 5 / 4)
            .div_ceil(max_bytes)
            .clamp(2, self.stacks.len());
        let per_part = self.stacks.len().div_ceil(parts);
        let mut parts: Vec<Snapshot> = self
            .stacks
            .chunks(per_part)
            .map(|stacks| self.with_stacks(stacks))
            .flat_map(|part| part.split_to_fit(max_bytes))
            .collect();
        // The window's coverage is counted once, with its first part.
        for part in parts.iter_mut().skip(1) {
            part.coverage = Default::default();
        }
        parts
    }

    /// At least as many bytes as [`Snapshot::encode`] gives: every varint
    /// at its widest (10 bytes; 5 for the u32 frame indexes), and LZ4's
    /// worst case on the body.
    fn encoded_len_bound(&self) -> usize {
        const VARINT: usize = 10;
        let text = |s: &str| VARINT + s.len();
        // The fixed fields, and the coverage trailer (at most 57 bytes).
        let header = 16 + text(&self.host) + text(&self.agent_id) + 8 * VARINT + 6 * VARINT;
        let frames: usize = self
            .frames
            .iter()
            .map(|f| {
                text(&f.function) + text(&f.module) + text(f.file.as_deref().unwrap_or("")) + VARINT
            })
            .sum();
        let threads: usize = self.threads.iter().map(|t| VARINT + text(&t.name)).sum();
        let stacks: usize = self
            .stacks
            .iter()
            .map(|s| 3 * VARINT + 5 * s.frames.len())
            .sum();
        let body = header + frames + threads + stacks;
        super::HEADER_LEN + body + body / 255 + 16
    }

    /// A snapshot of this window with only `stacks`, and the frames and
    /// threads they use.
    fn with_stacks(&self, stacks: &[StackCount]) -> Snapshot {
        let mut remap: HashMap<u32, u32> = HashMap::new();
        let mut frames = Vec::new();
        let stacks: Vec<StackCount> = stacks
            .iter()
            .map(|stack| StackCount {
                frames: stack
                    .frames
                    .iter()
                    .map(|&old| {
                        *remap.entry(old).or_insert_with(|| {
                            frames.push(self.frames[old as usize].clone());
                            (frames.len() - 1) as u32
                        })
                    })
                    .collect(),
                tid: stack.tid,
                count: stack.count,
            })
            .collect();
        let tids: HashSet<u32> = stacks.iter().map(|s| s.tid).collect();
        let threads: Vec<ThreadInfo> = self
            .threads
            .iter()
            .filter(|t| tids.contains(&t.tid))
            .cloned()
            .collect();
        Snapshot {
            frames,
            threads,
            stacks,
            host: self.host.clone(),
            agent_id: self.agent_id.clone(),
            ..*self
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::snapshot::{SnapshotBuilder, SnapshotHeader};
    use crate::{EventKind, Frame};

    /// A window of `threads` threads, each with `stacks` distinct stacks
    /// `depth` frames deep (long C++-like names, as deep programs have).
    fn busy_window(threads: u32, stacks: u32, depth: u32) -> Snapshot {
        let mut b = SnapshotBuilder::new();
        for tid in 1..=threads {
            b.name_thread(tid, format!("worker-{tid}"));
            for s in 0..stacks {
                let frames: Vec<Frame> = (0..depth)
                    .map(|d| {
                        Frame::function(format!(
                            "ns::component_{}::Handler<std::vector<int>>::step_{d}",
                            (s * 7 + d * 13 + tid) % 5000
                        ))
                        .with_module("/usr/lib/libapp.so")
                    })
                    .collect();
                b.add(&frames, tid, u64::from(s % 5 + 1));
            }
        }
        b.build(SnapshotHeader {
            profile_id: uuid::Uuid::from_u128(7),
            host: "h".into(),
            agent_id: "a".into(),
            sequence: 4,
            window_start_ms: 1_000,
            window_end_ms: 11_000,
            event: EventKind::CpuClock,
            period: 1_001_001,
            frequency_hz: 999,
        })
    }

    /// Samples by (thread name, stack as function names).
    fn by_stack(parts: &[Snapshot]) -> BTreeMap<(String, Vec<String>), u64> {
        let mut out = BTreeMap::new();
        for part in parts {
            let names: HashMap<u32, &str> = part
                .threads
                .iter()
                .map(|t| (t.tid, t.name.as_str()))
                .collect();
            for stack in &part.stacks {
                let key = (
                    names[&stack.tid].to_owned(),
                    part.stack_frames(stack)
                        .map(|f| f.function.clone())
                        .collect(),
                );
                *out.entry(key).or_insert(0) += stack.count;
            }
        }
        out
    }

    #[test]
    fn a_window_too_large_becomes_parts_that_fit_and_sum_to_it() {
        let window = busy_window(16, 300, 40);
        let size = window.encode().len();
        let max = 64 * 1024;
        assert!(size > 4 * max, "the window is {size} bytes");
        let parts = window.clone().split_to_fit(max);
        assert!(parts.len() >= 4, "{} parts", parts.len());
        for part in &parts {
            assert!(part.encode().len() <= max, "{} bytes", part.encode().len());
            assert_eq!(
                (part.sequence, part.window_start_ms, part.window_end_ms),
                (4, 1_000, 11_000)
            );
            let decoded = Snapshot::decode(&part.encode()).unwrap();
            assert_eq!(&decoded, part, "each part is a valid snapshot");
        }
        assert_eq!(by_stack(&parts), by_stack(std::slice::from_ref(&window)));
        let total: u64 = parts.iter().map(Snapshot::total_samples).sum();
        assert_eq!(total, window.total_samples());
    }

    #[test]
    fn the_size_bound_is_never_below_the_encoding() {
        for (threads, stacks, depth) in [(1, 1, 1), (1, 3, 4), (4, 50, 30), (16, 300, 40)] {
            let window = busy_window(threads, stacks, depth);
            let (bound, size) = (window.encoded_len_bound(), window.encode().len());
            assert!(bound >= size, "{bound} < {size}");
            assert!(bound >= window.encode_uncompressed().len());
        }
    }

    #[test]
    fn a_window_that_fits_and_a_lone_huge_stack_stay_whole() {
        let small = busy_window(1, 3, 4);
        assert_eq!(small.clone().split_to_fit(MAX_MESSAGE_BYTES), vec![small]);
        let lone = busy_window(1, 1, 4000);
        let size = lone.encode().len();
        assert_eq!(lone.clone().split_to_fit(size / 2), vec![lone]);
    }
}
