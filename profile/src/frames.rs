//! A profile's samples merged per stack across windows and hosts, frames
//! deduplicated: what detection rules match.

use std::collections::HashMap;

use odp_core::hash::{frame_hash, stack_hash};
use odp_core::EventKind;
use uuid::Uuid;

use crate::select::{period_scale, weighted};
use crate::{NameTree, Profile, Selection};

/// One distinct frame of a profile, as detection rules match it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FrameRef {
    pub function: String,
    pub module: String,
}

/// One distinct stack of a profile with its merged count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackSamples {
    /// The stack's content hash (XXH3-128 of its frames'), stable across
    /// profiles: what detections name their heaviest stacks by.
    pub stack_id: Uuid,
    /// Indexes into [`ProfileFrames::frames`], root first.
    pub frames: Vec<u32>,
    pub count: u64,
}

/// A profile's samples merged per stack across windows and hosts, frames
/// deduplicated: the input of issue detection.
#[derive(Debug, Clone, Default)]
pub struct ProfileFrames {
    pub event: Option<EventKind>,
    pub snapshots: i64,
    pub samples: u64,
    pub frames: Vec<FrameRef>,
    pub stacks: Vec<StackSamples>,
}

impl ProfileFrames {
    /// All samples of `profile` (of its first event), weighted by period,
    /// per distinct stack of whole frames.
    pub fn of(profile: Profile) -> ProfileFrames {
        let mut table = StackTable::default();
        let mut sums = FrameSums::default();
        sums.add(&profile, &mut table);
        sums.frames(&table)
    }

    /// The samples of several profiles as one (a run's members): frames
    /// deduplicated by name and module, stacks by their content id, counts
    /// added. `None` when the parts measure different events, whose
    /// samples cannot be added.
    pub fn merge<'a>(parts: impl IntoIterator<Item = &'a ProfileFrames>) -> Option<ProfileFrames> {
        let mut merged = ProfileFrames::default();
        let mut frame_index: HashMap<&FrameRef, u32> = HashMap::new();
        let mut stack_index: HashMap<Uuid, usize> = HashMap::new();
        for part in parts.into_iter().filter(|p| p.samples > 0) {
            match (merged.event, part.event) {
                (Some(a), Some(b)) if a != b => return None,
                (None, event) => merged.event = event,
                _ => {}
            }
            merged.snapshots += part.snapshots;
            merged.samples += part.samples;
            let local: Vec<u32> = part
                .frames
                .iter()
                .map(|frame| {
                    *frame_index.entry(frame).or_insert_with(|| {
                        merged.frames.push(frame.clone());
                        merged.frames.len() as u32 - 1
                    })
                })
                .collect();
            for stack in &part.stacks {
                match stack_index.get(&stack.stack_id) {
                    Some(&at) => merged.stacks[at].count += stack.count,
                    None => {
                        stack_index.insert(stack.stack_id, merged.stacks.len());
                        merged.stacks.push(StackSamples {
                            stack_id: stack.stack_id,
                            frames: stack.frames.iter().map(|&f| local[f as usize]).collect(),
                            count: stack.count,
                        });
                    }
                }
            }
        }
        Some(merged)
    }
}

/// Frames and stacks interned once for the sums of many profiles: a
/// fleet's running profiles share most of their code, so each profile's
/// [`FrameSums`] keeps only counts by the table's stack indexes.
#[derive(Debug, Default)]
pub struct StackTable {
    frames: Vec<FrameRef>,
    frame_index: HashMap<u128, u32>,
    stacks: Vec<TableStack>,
    stack_index: HashMap<Uuid, u32>,
}

/// One distinct stack: its content id and its frames, root first.
#[derive(Debug)]
struct TableStack {
    stack_id: Uuid,
    frames: Box<[u32]>,
}

impl StackTable {
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
            + self.stacks.capacity() * size_of::<TableStack>()
            + self.frame_index.capacity() * (size_of::<(u128, u32)>() + 1)
            + self.stack_index.capacity() * (size_of::<(Uuid, u32)>() + 1)
    }

    /// The frame's index, added at first sight.
    fn frame(&mut self, hash: u128, frame: &odp_core::Frame) -> u32 {
        *self.frame_index.entry(hash).or_insert_with(|| {
            self.frames.push(FrameRef {
                function: frame.function.clone(),
                module: frame.module.clone(),
            });
            self.frames.len() as u32 - 1
        })
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
        let old = std::mem::take(self);
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
/// profile whole gives.
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

    /// The distinct stacks counted.
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
    /// of its stacks, numbered in the table's order.
    pub fn frames(&self, table: &StackTable) -> ProfileFrames {
        let samples: u64 = self.counts.iter().map(|c| c.samples).sum();
        let event_total: f64 = self.counts.iter().map(|c| c.event_total).sum();
        let scale = period_scale(self.min_period, self.max_period, samples, event_total);
        let mut frames: Vec<u32> = self
            .counts
            .iter()
            .flat_map(|c| table.stacks[c.stack as usize].frames.iter().copied())
            .collect();
        frames.sort_unstable();
        frames.dedup();
        let stacks: Vec<StackSamples> = self
            .counts
            .iter()
            .map(
                |&StackCount {
                     stack,
                     samples: raw,
                     event_total,
                 }| {
                    let stack = &table.stacks[stack as usize];
                    StackSamples {
                        stack_id: stack.stack_id,
                        frames: stack
                            .frames
                            .iter()
                            .map(|f| frames.binary_search(f).unwrap_or_default() as u32)
                            .collect(),
                        count: scale.map_or(raw, |scale| weighted(raw, event_total, scale)),
                    }
                },
            )
            .collect();
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
    use crate::profile::{ProfileBuilder, Window};
    use odp_core::Frame;

    fn window(sequence: u64, start_ms: i64, period: u64) -> Window {
        Window {
            profile_id: Uuid::nil(),
            host: "h".into(),
            agent_id: "a".into(),
            sequence,
            start_ms,
            end_ms: start_ms + 1_000,
            event: EventKind::CpuClock,
            period,
            frequency_hz: 0,
        }
    }

    #[test]
    fn stacks_merge_across_windows_weighted_by_time_with_content_ids() {
        let mut b = ProfileBuilder::default();
        let main = Frame::function("main");
        let hot = Frame::function("hot");
        let cold = Frame::function("cold");
        let (m, h, c) = (b.frame(&main), b.frame(&hot), b.frame(&cold));
        let fast = b.window(window(0, 0, 1_000_000));
        let slow = b.window(window(1, 1_000, 10_000_000));
        b.samples(fast, 1, &[m, h], 900);
        b.samples(fast, 2, &[m, c], 100);
        b.samples(slow, 1, &[m, h], 100);
        let data = ProfileFrames::of(b.build());

        assert_eq!(data.event, Some(EventKind::CpuClock));
        assert_eq!(data.snapshots, 2);
        assert_eq!(data.samples, 1100);
        let name = |s: &StackSamples| {
            s.frames
                .iter()
                .map(|&f| data.frames[f as usize].function.as_str())
                .collect::<Vec<_>>()
        };
        let mut stacks: Vec<_> = data.stacks.iter().map(|s| (name(s), s.count)).collect();
        stacks.sort();
        // hot: 0.9 s + 1 s, cold: 0.1 s, of 2 s; 1100 samples kept.
        assert_eq!(
            stacks,
            [(vec!["main", "cold"], 55), (vec!["main", "hot"], 1045)]
        );
        let hot_stack = data.stacks.iter().find(|s| s.count == 1045).unwrap();
        let expected = stack_hash(&[frame_hash(&main), frame_hash(&hot)]);
        assert_eq!(hot_stack.stack_id, Uuid::from_u128(expected));
    }

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

    fn part(event: EventKind, stacks: &[(&[&str], u64)]) -> ProfileFrames {
        let mut b = ProfileBuilder::default();
        let w = b.window(Window {
            event,
            ..window(0, 0, 1_000_000)
        });
        for (names, count) in stacks {
            let ids: Vec<_> = names
                .iter()
                .map(|n| b.frame(&Frame::function(*n)))
                .collect();
            b.samples(w, 1, &ids, *count);
        }
        ProfileFrames::of(b.build())
    }

    #[test]
    fn parts_merge_by_frame_and_stack_content() {
        let a = part(
            EventKind::CpuClock,
            &[(&["main", "hot"], 30), (&["main"], 10)],
        );
        // Another host's profile lists its frames in another order.
        let b = part(
            EventKind::CpuClock,
            &[(&["main", "cold"], 5), (&["main", "hot"], 15)],
        );
        let merged = ProfileFrames::merge([&a, &b]).unwrap();
        assert_eq!((merged.samples, merged.snapshots), (60, 2));
        assert_eq!(merged.frames.len(), 3, "main, hot and cold once each");
        let mut stacks: Vec<(Vec<&str>, u64)> = merged
            .stacks
            .iter()
            .map(|s| {
                let names = s
                    .frames
                    .iter()
                    .map(|&f| merged.frames[f as usize].function.as_str());
                (names.collect(), s.count)
            })
            .collect();
        stacks.sort();
        assert_eq!(
            stacks,
            [
                (vec!["main"], 10),
                (vec!["main", "cold"], 5),
                (vec!["main", "hot"], 45)
            ]
        );
        let hot = a.stacks.iter().find(|s| s.count == 30).unwrap().stack_id;
        assert!(merged
            .stacks
            .iter()
            .any(|s| s.stack_id == hot && s.count == 45));
    }

    #[test]
    fn parts_of_different_events_do_not_merge() {
        let cpu = part(EventKind::CpuClock, &[(&["main"], 1)]);
        let wall = part(EventKind::Wall, &[(&["main"], 1)]);
        assert!(ProfileFrames::merge([&cpu, &wall]).is_none());
        assert_eq!(ProfileFrames::merge([]).unwrap().samples, 0);
    }
}
