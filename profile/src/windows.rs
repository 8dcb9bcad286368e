//! Reshaping a profile's windows, as retention and downsampling do:
//! dropping windows, and merging windows into coarser ones. Both keep
//! every remaining sample, and rebuild the dictionaries so frames and
//! stacks no remaining sample uses are gone.

use std::collections::{BTreeMap, HashMap};

use crate::profile::{Profile, ProfileBuilder, Sample, Window};

/// A window's identity across its copies: profile, agent and sequence.
pub type WindowKey = (uuid::Uuid, String, u64);

impl Window {
    pub fn key(&self) -> WindowKey {
        (self.profile_id, self.agent_id.clone(), self.sequence)
    }
}

impl Profile {
    /// The profile without the windows `keep` refuses (and their samples,
    /// thread names, and what only they used).
    pub fn retain_windows(&self, keep: impl Fn(&Window) -> bool) -> Profile {
        let target: Vec<Option<u32>> = {
            let mut next = 0u32;
            self.windows
                .iter()
                .map(|w| {
                    keep(w).then(|| {
                        next += 1;
                        next - 1
                    })
                })
                .collect()
        };
        let windows = self
            .windows
            .iter()
            .zip(&target)
            .filter(|(_, t)| t.is_some())
            .map(|(w, _)| w.clone())
            .collect();
        self.rebuilt(windows, &target)
    }

    /// Merges windows into coarser ones: each group (the keys of its
    /// windows, the first one's window kept) becomes one window spanning
    /// them all, with their samples summed per stack and thread, and per
    /// thread the name it had in the group's last window. Windows in no
    /// group stay as they are; keys of no window are ignored.
    pub fn merge_windows(&self, groups: &[Vec<WindowKey>]) -> Profile {
        let index: HashMap<WindowKey, usize> = self
            .windows
            .iter()
            .enumerate()
            .map(|(i, w)| (w.key(), i))
            .collect();
        // Each window's group leader (itself when alone).
        let mut leader: Vec<usize> = (0..self.windows.len()).collect();
        let mut merging = false;
        for group in groups {
            let members: Vec<usize> = group.iter().filter_map(|k| index.get(k).copied()).collect();
            if let Some(&first) = members.first() {
                merging |= members.len() > 1;
                for &m in &members {
                    leader[m] = first;
                }
            }
        }
        if !merging {
            return self.clone();
        }
        let mut spans: BTreeMap<usize, (i64, i64)> = BTreeMap::new();
        for (i, w) in self.windows.iter().enumerate() {
            let span = spans.entry(leader[i]).or_insert((w.start_ms, w.end_ms));
            span.0 = span.0.min(w.start_ms);
            span.1 = span.1.max(w.end_ms);
        }
        let position: HashMap<usize, u32> = spans
            .keys()
            .enumerate()
            .map(|(new, &old)| (old, new as u32))
            .collect();
        let windows = spans
            .iter()
            .map(|(&i, &(start_ms, end_ms))| Window {
                start_ms,
                end_ms,
                ..self.windows[i].clone()
            })
            .collect();
        let target: Vec<Option<u32>> = leader.iter().map(|l| Some(position[l])).collect();
        self.rebuilt(windows, &target)
    }

    /// The profile's windows split into `parts` profiles: `part` says
    /// which one each window goes to (`None`: dropped). Used to read one
    /// profile back out of a rollup of many: one pass over the samples,
    /// whatever the number of parts.
    pub fn split_windows(
        &self,
        parts: usize,
        part: impl Fn(&Window) -> Option<usize>,
    ) -> Vec<Profile> {
        let mut windows: Vec<Vec<Window>> = vec![Vec::new(); parts];
        let target: Vec<Option<(usize, u32)>> = self
            .windows
            .iter()
            .map(|w| {
                let p = part(w)?;
                windows[p].push(w.clone());
                Some((p, windows[p].len() as u32 - 1))
            })
            .collect();
        self.rebuilt_parts(windows, &target)
    }

    /// The profile over `windows`, with each old window's samples and
    /// thread names moved to `target[old]` (dropped when `None`).
    fn rebuilt(&self, windows: Vec<Window>, target: &[Option<u32>]) -> Profile {
        let target: Vec<Option<(usize, u32)>> = target.iter().map(|t| t.map(|w| (0, w))).collect();
        self.rebuilt_parts(vec![windows], &target)
            .pop()
            .unwrap_or_default()
    }

    /// One profile per entry of `windows`, with each old window's samples
    /// and thread names moved to `target[old]`: (part, window in it).
    fn rebuilt_parts(
        &self,
        windows: Vec<Vec<Window>>,
        target: &[Option<(usize, u32)>],
    ) -> Vec<Profile> {
        let mut builders: Vec<ProfileBuilder> = windows
            .into_iter()
            .map(|windows| {
                let mut builder = ProfileBuilder::default();
                for window in windows {
                    builder.window(window);
                }
                builder
            })
            .collect();
        // Later windows' names win: the builder keeps the last one given.
        for thread in &self.threads {
            if let Some((part, window)) = target[thread.window as usize] {
                builders[part].thread(window, thread.tid, thread.name.clone());
            }
        }
        let mut samples: Vec<Vec<&Sample>> = vec![Vec::new(); builders.len()];
        for sample in &self.samples {
            if let Some((part, _)) = target[sample.window as usize] {
                samples[part].push(sample);
            }
        }
        // One part at a time, so the map of old frame ids to the part's
        // is one vector, reset where it was used.
        let mut frame_ids: Vec<Option<u32>> = vec![None; self.frames.len()];
        let mut used: Vec<u32> = Vec::new();
        let mut path = Vec::new();
        for (builder, samples) in builders.iter_mut().zip(samples) {
            for frame in used.drain(..) {
                frame_ids[frame as usize] = None;
            }
            for sample in samples {
                let Some((_, window)) = target[sample.window as usize] else {
                    continue;
                };
                path.clear();
                for frame in self.tree.stack(sample.node) {
                    let id = *frame_ids[frame as usize].get_or_insert_with(|| {
                        used.push(frame);
                        builder.frame(&self.frames[frame as usize])
                    });
                    path.push(id);
                }
                builder.samples(window, sample.tid, &path, sample.count);
            }
        }
        builders.into_iter().map(ProfileBuilder::build).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odp_core::{EventKind, Frame};

    fn profile() -> Profile {
        let mut b = ProfileBuilder::default();
        let (main, a, gone) = (
            b.frame(&Frame::function("main")),
            b.frame(&Frame::function("a")),
            b.frame(&Frame::function("only_in_w0")),
        );
        for sequence in 0..3u64 {
            let w = b.window(Window {
                profile_id: uuid::Uuid::nil(),
                host: "h".into(),
                agent_id: "x".into(),
                sequence,
                start_ms: 1_000 * sequence as i64,
                end_ms: 1_000 * (sequence as i64 + 1),
                event: EventKind::CpuClock,
                period: 1,
                frequency_hz: 1,
            });
            b.thread(w, 7, format!("pool-{sequence}"));
            b.samples(w, 7, &[main, a], 10 + sequence);
            if sequence == 0 {
                b.samples(w, 7, &[main, gone], 5);
            }
        }
        b.build()
    }

    #[test]
    fn dropped_windows_take_what_only_they_used() {
        let p = profile();
        let kept = p.retain_windows(|w| w.sequence > 0);
        assert_eq!(kept.windows.len(), 2);
        assert_eq!(kept.total_samples(), 11 + 12);
        assert_eq!(kept.frames.len(), 2, "only_in_w0 is gone");
        assert_eq!(kept.threads.len(), 2);
        assert_eq!(kept.threads[0].window, 0);
        assert_eq!(kept.threads[0].name, "pool-1");
    }

    #[test]
    fn merged_windows_span_their_group_and_keep_every_sample() {
        let p = profile();
        let key = |s: u64| (uuid::Uuid::nil(), "x".to_owned(), s);
        let merged = p.merge_windows(&[vec![key(0), key(1)], vec![key(9)]]);
        assert_eq!(merged.windows.len(), 2);
        assert_eq!(
            (merged.windows[0].start_ms, merged.windows[0].end_ms),
            (0, 2_000)
        );
        assert_eq!(merged.windows[0].sequence, 0);
        assert_eq!(merged.windows[1].sequence, 2);
        assert_eq!(merged.total_samples(), p.total_samples());
        let names: Vec<(u32, &str)> = merged
            .threads
            .iter()
            .map(|t| (t.window, t.name.as_str()))
            .collect();
        assert_eq!(names, [(0, "pool-1"), (1, "pool-2")]);
        // main;a summed over the two merged windows: 10 + 11.
        assert!(merged
            .samples
            .iter()
            .any(|s| s.window == 0 && s.count == 21));
    }

    #[test]
    fn split_windows_are_each_what_retaining_them_keeps() {
        let p = profile();
        let parts = p.split_windows(3, |w| match w.sequence {
            0 => Some(2),
            1 => None,
            _ => Some(0),
        });
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], p.retain_windows(|w| w.sequence == 2));
        assert!(parts[1].windows.is_empty() && parts[1].samples.is_empty());
        assert_eq!(parts[2], p.retain_windows(|w| w.sequence == 0));
        assert_eq!(parts[2].frames.len(), 3, "only_in_w0 stays with w0");
        assert_eq!(parts[0].frames.len(), 2);
    }
}
