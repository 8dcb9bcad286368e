//! A profile's samples merged per stack across windows and hosts, frames
//! deduplicated: what detection rules match.

use std::collections::HashMap;

use odp_core::EventKind;
use uuid::Uuid;

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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::profile::{ProfileBuilder, Window};
    use odp_core::hash::{frame_hash, stack_hash};
    use odp_core::Frame;

    /// A one-second cpu-clock window of `period` (the sums tests use it too).
    pub(crate) fn window(sequence: u64, start_ms: i64, period: u64) -> Window {
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
