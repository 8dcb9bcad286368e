//! A profile's samples per distinct stack, summed part by part over a
//! table of frames and stacks that many profiles share: what a worker
//! holds of each running profile between the rules' evaluations.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use odp_core::hash::{frame_hash, stack_hash};
use odp_core::EventKind;
use uuid::Uuid;

use crate::frames::{FrameRef, ProfileFrames, StackSamples};
use crate::select::{period_scale, weighted};
use crate::{NameTree, Profile, Selection};

impl ProfileFrames {
    /// All samples of `profile` (of its first event), weighted by period,
    /// per distinct stack of whole frames.
    pub fn of(profile: Profile) -> ProfileFrames {
        let mut table = StackTable::default();
        let mut sums = FrameSums::default();
        sums.add(&profile, &mut table);
        sums.frames(&table)
    }
}

/// Whether the stacks with a frame are read on their own, by what reads
/// the sums: never, when the frame is their leaf, or wherever it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FrameRead {
    Never,
    AsLeaf,
    Anywhere,
}

/// Which stacks [`FrameSums`] count on their own, by their frames: a stack
/// none of whose frames is read (see [`FrameRead`]) is added to the sums'
/// rest, one frameless stack. A worker's rules read a running profile's
/// stacks only where a pattern matches, so its sums of a fleet's running
/// segments grow with the stacks matched rather than every stack run.
#[derive(Clone)]
pub struct FrameReads(Arc<dyn Fn(&FrameRef) -> FrameRead + Send + Sync>);

impl FrameReads {
    pub fn new(read: impl Fn(&FrameRef) -> FrameRead + Send + Sync + 'static) -> FrameReads {
        FrameReads(Arc::new(read))
    }

    /// Every stack counted on its own: sums as the profile read whole.
    pub fn all() -> FrameReads {
        FrameReads::new(|_| FrameRead::Anywhere)
    }
}

impl fmt::Debug for FrameReads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FrameReads(..)")
    }
}

/// Frames and stacks interned once for the sums of many profiles: a
/// fleet's running profiles share most of their code, so each profile's
/// [`FrameSums`] keeps only counts by the table's stack indexes. The table
/// decides once per frame, by its [`FrameReads`], which stacks are counted
/// on their own.
#[derive(Debug)]
pub struct StackTable {
    reads: FrameReads,
    frames: Vec<FrameRef>,
    /// How each frame of `frames` is read.
    frame_reads: Vec<FrameRead>,
    frame_index: HashMap<u128, u32>,
    stacks: Vec<TableStack>,
    stack_index: HashMap<Uuid, u32>,
}

impl Default for StackTable {
    /// A table that counts every stack on its own.
    fn default() -> StackTable {
        StackTable::reading(FrameReads::all())
    }
}

/// One distinct stack: its content id and its frames, root first.
#[derive(Debug)]
struct TableStack {
    stack_id: Uuid,
    frames: Box<[u32]>,
}

impl StackTable {
    /// A table whose sums count on their own only the stacks `reads`
    /// reads.
    pub fn reading(reads: FrameReads) -> StackTable {
        StackTable {
            reads,
            frames: Vec::new(),
            frame_reads: Vec::new(),
            frame_index: HashMap::new(),
            stacks: Vec::new(),
            stack_index: HashMap::new(),
        }
    }

    /// The distinct frames and stacks interned.
    pub fn entries(&self) -> usize {
        self.frames.len() + self.stacks.len()
    }

    /// The distinct stacks interned.
    pub fn stacks(&self) -> usize {
        self.stacks.len()
    }

    /// About the heap the table takes: its vectors', maps' and strings'
    /// capacities.
    pub fn heap_bytes(&self) -> usize {
        let names: usize = self
            .frames
            .iter()
            .map(|f| f.function.capacity() + f.module.capacity())
            .sum();
        let frames: usize = self.stacks.iter().map(|s| s.frames.len() * 4).sum();
        names
            + frames
            + self.frames.capacity() * size_of::<FrameRef>()
            + self.frame_reads.capacity()
            + self.stacks.capacity() * size_of::<TableStack>()
            + self.frame_index.capacity() * (size_of::<(u128, u32)>() + 1)
            + self.stack_index.capacity() * (size_of::<(Uuid, u32)>() + 1)
    }

    /// The frame's index, added at first sight.
    fn frame(&mut self, hash: u128, frame: &odp_core::Frame) -> u32 {
        *self.frame_index.entry(hash).or_insert_with(|| {
            let frame = FrameRef {
                function: frame.function.clone(),
                module: frame.module.clone(),
            };
            self.frame_reads.push((self.reads.0)(&frame));
            self.frames.push(frame);
            self.frames.len() as u32 - 1
        })
    }

    /// Whether a stack of these frames (root first) is counted on its own.
    fn is_read(&self, frames: impl Iterator<Item = u32>) -> bool {
        let mut leaf = FrameRead::Never;
        for frame in frames {
            leaf = self.frame_reads[frame as usize];
            if leaf == FrameRead::Anywhere {
                return true;
            }
        }
        leaf == FrameRead::AsLeaf
    }

    /// The stack's index, added at first sight with `frames` (called only
    /// then).
    fn stack(&mut self, stack_id: Uuid, frames: impl FnOnce() -> Box<[u32]>) -> u32 {
        *self.stack_index.entry(stack_id).or_insert_with(|| {
            self.stacks.push(TableStack {
                stack_id,
                frames: frames(),
            });
            self.stacks.len() as u32 - 1
        })
    }

    /// Drops the frames and stacks none of `sums` counts, and renumbers
    /// what `sums` count: the table of a fleet whose code changes would
    /// otherwise keep every stack it ever ran.
    pub fn keep_only<'a>(&mut self, sums: impl IntoIterator<Item = &'a mut FrameSums>) {
        let reading = StackTable::reading(self.reads.clone());
        let old = std::mem::replace(self, reading);
        let mut frame_map: HashMap<u32, u32> = HashMap::new();
        let mut stack_map: HashMap<u32, u32> = HashMap::new();
        for sums in sums {
            for count in &mut sums.counts {
                let stack = count.stack;
                count.stack = *stack_map.entry(stack).or_insert_with(|| {
                    let from = &old.stacks[stack as usize];
                    let frames = from.frames.iter().map(|&f| {
                        *frame_map.entry(f).or_insert_with(|| {
                            self.frames.push(old.frames[f as usize].clone());
                            self.frame_reads.push(old.frame_reads[f as usize]);
                            self.frames.len() as u32 - 1
                        })
                    });
                    let frames = frames.collect();
                    self.stack(from.stack_id, || frames)
                });
            }
            sums.counts.sort_unstable_by_key(|count| count.stack);
        }
        for (hash, &at) in &old.frame_index {
            if let Some(&kept) = frame_map.get(&at) {
                self.frame_index.insert(*hash, kept);
            }
        }
    }
}

/// A profile's samples per distinct stack before weighting, summed part
/// by part: a running profile's detection adds the windows stored since
/// its last evaluation rather than reading the profile whole again. The
/// weighting waits for [`FrameSums::frames`], as it scales by the periods
/// of all the parts together, so the parts of a profile give what the
/// profile whole gives. Stacks the table does not read on their own are
/// summed as one frameless stack, the rest.
#[derive(Debug, Clone)]
pub struct FrameSums {
    /// The one event summed: the first part's first window's.
    event: Option<EventKind>,
    windows: i64,
    /// Raw samples and the event units they stand for per stack of the
    /// [`StackTable`] the parts were added with, in the table's order: a
    /// sorted vector holds a running segment's 2,000 stacks in less than
    /// half the memory a hash map takes.
    counts: Vec<StackCount>,
    /// The samples of the stacks not counted on their own (`stack` unused).
    rest: StackCount,
    min_period: u64,
    max_period: u64,
}

#[derive(Debug, Clone, Copy)]
struct StackCount {
    stack: u32,
    samples: u64,
    event_total: f64,
}

impl Default for FrameSums {
    fn default() -> FrameSums {
        FrameSums {
            event: None,
            windows: 0,
            counts: Vec::new(),
            rest: StackCount {
                stack: 0,
                samples: 0,
                event_total: 0.0,
            },
            min_period: u64::MAX,
            max_period: 0,
        }
    }
}

impl FrameSums {
    /// Adds the samples of `part` of the event summed so far (the first
    /// part's first window's), its stacks interned in `table`.
    pub fn add(&mut self, part: &Profile, table: &mut StackTable) {
        let selection = Selection {
            event: self.event,
            ..Selection::default()
        };
        let sums = part.select(&selection, &NameTree::new(part));
        self.event = self.event.or(sums.event);
        self.windows += sums.windows as i64;
        self.min_period = self.min_period.min(sums.min_period);
        self.max_period = self.max_period.max(sums.max_period);
        let frame_hashes: Vec<u128> = part.frames.iter().map(frame_hash).collect();
        let local: Vec<u32> = part
            .frames
            .iter()
            .zip(&frame_hashes)
            .map(|(frame, &hash)| table.frame(hash, frame))
            .collect();
        let mut hashes = Vec::new();
        let mut counts = Vec::new();
        for (node, &samples) in sums.samples.iter().enumerate() {
            if samples == 0 {
                continue;
            }
            let path = part.tree.stack(node as u32);
            if !table.is_read(path.iter().map(|&f| local[f as usize])) {
                self.rest.samples += samples;
                self.rest.event_total += sums.event_totals[node];
                continue;
            }
            hashes.clear();
            hashes.extend(path.iter().map(|&f| frame_hashes[f as usize]));
            let stack_id = Uuid::from_u128(stack_hash(&hashes));
            let stack = table.stack(stack_id, || {
                path.iter().map(|&f| local[f as usize]).collect()
            });
            counts.push(StackCount {
                stack,
                samples,
                event_total: sums.event_totals[node],
            });
        }
        self.merge(counts);
    }

    /// The distinct stacks counted on their own.
    pub fn stacks(&self) -> usize {
        self.counts.len()
    }

    /// About the heap the counts take.
    pub fn heap_bytes(&self) -> usize {
        self.counts.capacity() * size_of::<StackCount>()
    }

    /// Adds `counts` (in any order, a stack perhaps more than once) to
    /// the counts so far, in place. The vector grows by what is added, not
    /// to twice its length: a fleet's running segments hold their sums for
    /// an hour, and most of what each add brings merges into stacks seen.
    fn merge(&mut self, counts: Vec<StackCount>) {
        self.counts.reserve_exact(counts.len());
        self.counts.extend(counts);
        self.counts.sort_unstable_by_key(|count| count.stack);
        self.counts.dedup_by(|next, kept| {
            let same = next.stack == kept.stack;
            if same {
                kept.samples += next.samples;
                kept.event_total += next.event_total;
            }
            same
        });
    }

    /// Everything added so far, weighted by period; its frames are those
    /// of its stacks, numbered in the table's order. The rest, if any, is
    /// a last stack with no frames and the nil id.
    pub fn frames(&self, table: &StackTable) -> ProfileFrames {
        let all = || self.counts.iter().chain([&self.rest]);
        let samples: u64 = all().map(|c| c.samples).sum();
        let event_total: f64 = all().map(|c| c.event_total).sum();
        let scale = period_scale(self.min_period, self.max_period, samples, event_total);
        let count =
            |c: &StackCount| scale.map_or(c.samples, |s| weighted(c.samples, c.event_total, s));
        let mut frames: Vec<u32> = self
            .counts
            .iter()
            .flat_map(|c| table.stacks[c.stack as usize].frames.iter().copied())
            .collect();
        frames.sort_unstable();
        frames.dedup();
        let mut stacks: Vec<StackSamples> = self
            .counts
            .iter()
            .map(|c| {
                let stack = &table.stacks[c.stack as usize];
                StackSamples {
                    stack_id: stack.stack_id,
                    frames: stack
                        .frames
                        .iter()
                        .map(|f| frames.binary_search(f).unwrap_or_default() as u32)
                        .collect(),
                    count: count(c),
                }
            })
            .collect();
        if self.rest.samples > 0 {
            stacks.push(StackSamples {
                stack_id: Uuid::nil(),
                frames: Vec::new(),
                count: count(&self.rest),
            });
        }
        ProfileFrames {
            event: self.event,
            snapshots: self.windows,
            samples: stacks.iter().map(|s| s.count).sum(),
            frames: frames
                .iter()
                .map(|&f| table.frames[f as usize].clone())
                .collect(),
            stacks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::tests::window;
    use crate::profile::{ProfileBuilder, Window};
    use odp_core::Frame;

    /// Windows 0..3 of one host, each of its own period; the samples of
    /// `hot` and `cold` differ per window, and window 2 is of another event.
    fn windows_of(b: &mut ProfileBuilder, which: std::ops::Range<u64>) {
        let names = ["main", "hot", "cold", "rare"].map(|n| b.frame(&Frame::function(n)));
        let [m, h, c, r] = names;
        for sequence in which {
            let event = if sequence == 2 {
                EventKind::Wall
            } else {
                EventKind::CpuClock
            };
            let w = b.window(Window {
                event,
                ..window(
                    sequence,
                    sequence as i64 * 1_000,
                    1_000_000 * (sequence + 1),
                )
            });
            b.samples(w, 1, &[m, h], 300 + 100 * sequence);
            b.samples(w, 1, &[m, c], 50 * (sequence + 1));
            if sequence == 3 {
                b.samples(w, 2, &[m, r], 1);
            }
        }
    }

    fn sorted(data: &ProfileFrames) -> Vec<(Uuid, Vec<String>, u64)> {
        let mut stacks: Vec<_> = data
            .stacks
            .iter()
            .map(|s| {
                let names = s.frames.iter();
                let names = names.map(|&f| data.frames[f as usize].function.clone());
                (s.stack_id, names.collect(), s.count)
            })
            .collect();
        stacks.sort();
        stacks
    }

    #[test]
    fn a_profile_summed_in_parts_weighs_as_the_whole() {
        let mut whole = ProfileBuilder::default();
        windows_of(&mut whole, 0..5);
        let whole = ProfileFrames::of(whole.build());
        let mut table = StackTable::default();
        let mut sums = FrameSums::default();
        for range in [0..1, 1..3, 3..5] {
            let mut part = ProfileBuilder::default();
            windows_of(&mut part, range);
            sums.add(&part.build(), &mut table);
        }
        let parts = sums.frames(&table);
        assert_eq!(parts.event, Some(EventKind::CpuClock));
        assert_eq!(
            (parts.snapshots, whole.snapshots),
            (4, 4),
            "the wall window left out"
        );
        assert_eq!(parts.samples, whole.samples);
        assert_eq!(sorted(&parts), sorted(&whole));
        // Weighted, not raw: cold's 600 raw samples are more of the slow
        // windows than hot's, so they stand for 643 mean samples.
        let cold = sorted(&parts).into_iter().find(|s| s.1 == ["main", "cold"]);
        assert_eq!(cold.unwrap().2, 643);
        assert_eq!(parts.frames.len(), 4, "each frame once");
    }

    #[test]
    fn stacks_the_table_does_not_read_are_summed_as_one_rest() {
        let whole = {
            let mut b = ProfileBuilder::default();
            windows_of(&mut b, 0..5);
            ProfileFrames::of(b.build())
        };
        // "hot" read anywhere, "rare" only as a leaf; "cold" not at all.
        let reads = FrameReads::new(|frame: &FrameRef| match frame.function.as_str() {
            "hot" => FrameRead::Anywhere,
            "rare" | "main" => FrameRead::AsLeaf,
            _ => FrameRead::Never,
        });
        let mut table = StackTable::reading(reads);
        let mut sums = FrameSums::default();
        for range in [0..2, 2..5] {
            let mut part = ProfileBuilder::default();
            windows_of(&mut part, range);
            sums.add(&part.build(), &mut table);
        }
        let parts = sums.frames(&table);
        assert_eq!(parts.samples, whole.samples, "the rest is in the total");
        assert_eq!(sums.stacks(), 2, "main;hot and main;rare");
        assert_eq!(table.stacks(), 2, "main;cold was never interned");
        let of = |data: &ProfileFrames, names: &[&str]| {
            let found = sorted(data).into_iter().find(|s| s.1 == names);
            found.map(|(id, _, count)| (id, count))
        };
        for stack in [["main", "hot"], ["main", "rare"]] {
            assert_eq!(of(&parts, &stack), of(&whole, &stack));
        }
        let cold = of(&whole, &["main", "cold"]).unwrap();
        assert_eq!(of(&parts, &[]), Some((Uuid::nil(), cold.1)));
        assert_eq!(
            parts.frames.len(),
            3,
            "main, hot and rare: cold's is not read"
        );
    }

    #[test]
    fn profiles_share_a_table_that_keeps_only_what_they_count() {
        let mut table = StackTable::default();
        let (mut a, mut b) = (FrameSums::default(), FrameSums::default());
        let mut part = ProfileBuilder::default();
        windows_of(&mut part, 0..2);
        let part = part.build();
        a.add(&part, &mut table);
        b.add(&part, &mut table);
        assert_eq!(table.stacks(), 2, "main;hot and main;cold, once for both");
        let mut later = ProfileBuilder::default();
        windows_of(&mut later, 3..4);
        a.add(&later.build(), &mut table);
        assert_eq!(table.stacks(), 3, "a's main;rare");
        let before = (a.frames(&table), b.frames(&table));
        // b is all that is left: a's rare stack and frame go.
        table.keep_only([&mut b]);
        assert_eq!(table.stacks(), 2);
        assert_eq!(table.frames.len(), 3);
        assert_eq!(sorted(&b.frames(&table)), sorted(&before.1));
        // Both kept: each still reads as before.
        let mut table = StackTable::default();
        let (mut a2, mut b2) = (FrameSums::default(), FrameSums::default());
        a2.add(&part, &mut table);
        b2.add(&part, &mut table);
        let mut later = ProfileBuilder::default();
        windows_of(&mut later, 3..4);
        a2.add(&later.build(), &mut table);
        table.keep_only([&mut b2, &mut a2]);
        assert_eq!(sorted(&a2.frames(&table)), sorted(&before.0));
        assert_eq!(sorted(&b2.frames(&table)), sorted(&before.1));
        // Parts added after a renumbering land on the same stacks.
        let mut more = ProfileBuilder::default();
        windows_of(&mut more, 0..2);
        b2.add(&more.build(), &mut table);
        assert_eq!(table.stacks(), 3);
        let (mut fresh, mut twice) = (StackTable::default(), FrameSums::default());
        twice.add(&part, &mut fresh);
        twice.add(&part, &mut fresh);
        assert_eq!(sorted(&b2.frames(&table)), sorted(&twice.frames(&fresh)));
    }
}
