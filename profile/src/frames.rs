//! A profile's samples merged per stack across windows and hosts, frames
//! deduplicated: what detection rules match.

use odp_core::hash::{frame_hash, stack_hash};
use odp_core::EventKind;
use uuid::Uuid;

use crate::{weigh, NameTree, Profile, Selection};

/// One distinct frame of a profile, as detection rules match it.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        let names = NameTree::new(&profile);
        let sums = profile.select(&Selection::default(), &names);
        let counts = weigh(&[&sums]).remove(0);
        let frame_hashes: Vec<u128> = profile.frames.iter().map(frame_hash).collect();
        let mut stacks = Vec::new();
        let mut samples = 0u64;
        let mut hashes = Vec::new();
        for (node, &count) in counts.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let frames = profile.tree.stack(node as u32);
            hashes.clear();
            hashes.extend(frames.iter().map(|&f| frame_hashes[f as usize]));
            samples += count;
            stacks.push(StackSamples {
                stack_id: Uuid::from_u128(stack_hash(&hashes)),
                frames,
                count,
            });
        }
        ProfileFrames {
            event: sums.event,
            snapshots: sums.windows as i64,
            samples,
            frames: profile
                .frames
                .into_iter()
                .map(|f| FrameRef {
                    function: f.function,
                    module: f.module,
                })
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
}
