//! Narrowing a profile to some windows, threads and stacks, and summing
//! what remains per stack node.
//!
//! A sample stands for one period of its window's event: at 999 Hz 1 ms
//! of CPU, at 19 Hz 53 ms. FDA, the overhead budget and hosts with other
//! settings make selections whose windows have different periods, and
//! adding raw counts would overweight the fast windows. So a node's count
//! is its event total (count × period) in units of the selection's mean
//! period per sample: shares become shares of time (or bytes), and the
//! counts still add up to the samples taken, which binomial error bounds
//! need. Windows all at one period keep their raw counts.

use std::collections::HashSet;

use odp_core::filter::{StackFilter, ThreadFilter};
use odp_core::EventKind;

use crate::names::{stacks_kept, NameTree};
use crate::profile::Profile;

/// What to keep of a profile; everything by default.
#[derive(Debug, Clone, Copy, Default)]
pub struct Selection<'a> {
    /// Only samples of threads whose name (in their window) matches.
    pub threads: Option<&'a ThreadFilter>,
    /// Only windows ending after this (unix ms).
    pub since_ms: Option<i64>,
    /// Only windows starting before this (unix ms).
    pub until_ms: Option<i64>,
    /// Only stacks the filter keeps, by their frames' display names.
    pub stacks: Option<&'a StackFilter>,
    /// Only windows of these hosts.
    pub hosts: Option<&'a [String]>,
    /// Only windows of this event; unset, the first kept window's.
    pub event: Option<EventKind>,
}

/// Per node of a profile's tree, the raw samples and the event total of
/// what a selection kept, before weighting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeSums {
    /// The one event summed: the selection's, or the first kept window's.
    pub event: Option<EventKind>,
    /// Windows of that event kept.
    pub windows: usize,
    pub samples: Vec<u64>,
    pub event_totals: Vec<f64>,
    /// Per window of the profile, the samples kept (for per-host totals).
    pub window_samples: Vec<u64>,
    pub min_period: u64,
    pub max_period: u64,
}

/// Per window of a profile, the samples a selection kept and those of
/// them on the stacks a filter matched: what a function's trend is made of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowHits {
    pub samples: u64,
    pub matched: u64,
}

/// The windows and threads a selection keeps of one profile.
struct Kept {
    event: Option<EventKind>,
    windows: Vec<bool>,
    threads: Option<HashSet<(u32, u32)>>,
}

impl Kept {
    fn of(profile: &Profile, selection: &Selection<'_>) -> Kept {
        let in_range = |w: &crate::profile::Window| {
            selection.since_ms.is_none_or(|since| w.end_ms > since)
                && selection.until_ms.is_none_or(|until| w.start_ms < until)
                && selection.hosts.is_none_or(|hosts| hosts.contains(&w.host))
        };
        let event = selection.event.or_else(|| {
            profile
                .windows
                .iter()
                .find(|w| in_range(w))
                .map(|w| w.event)
        });
        let windows: Vec<bool> = profile
            .windows
            .iter()
            .map(|w| in_range(w) && Some(w.event) == event)
            .collect();
        let threads = selection.threads.map(|filter| {
            profile
                .threads
                .iter()
                .filter(|t| windows[t.window as usize] && filter.matches(&t.name))
                .map(|t| (t.window, t.tid))
                .collect()
        });
        Kept {
            event,
            windows,
            threads,
        }
    }

    /// Whether the sample's window and thread are kept (not its stack).
    fn keeps(&self, sample: &crate::profile::Sample) -> bool {
        self.windows[sample.window as usize]
            && self
                .threads
                .as_ref()
                .is_none_or(|t| t.contains(&(sample.window, sample.tid)))
    }
}

impl Profile {
    /// Sums the samples `selection` keeps per node of [`Profile::tree`].
    /// Only one event is summed (the first kept window's), so counts of
    /// different units are never added.
    pub fn select(&self, selection: &Selection<'_>, names: &NameTree) -> NodeSums {
        let kept = Kept::of(self, selection);
        let stack_kept = selection
            .stacks
            .filter(|f| !f.is_noop())
            .map(|filter| names.stacks_kept(&self.tree, filter));

        let mut sums = NodeSums {
            event: kept.event,
            windows: kept.windows.iter().filter(|&&k| k).count(),
            samples: vec![0; self.tree.len()],
            event_totals: vec![0.0; self.tree.len()],
            window_samples: vec![0; self.windows.len()],
            min_period: u64::MAX,
            max_period: 0,
        };
        for sample in &self.samples {
            if !kept.keeps(sample)
                || stack_kept
                    .as_ref()
                    .is_some_and(|k| !k[sample.node as usize])
            {
                continue;
            }
            let period = self.windows[sample.window as usize].period;
            let node = sample.node as usize;
            sums.samples[node] += sample.count;
            sums.event_totals[node] += sample.count as f64 * period as f64;
            sums.window_samples[sample.window as usize] += sample.count;
            sums.min_period = sums.min_period.min(period);
            sums.max_period = sums.max_period.max(period);
        }
        sums
    }

    /// Per window, the samples `selection` keeps and how many of them lie
    /// on stacks `matched` keeps, in one pass and without per-node sums or
    /// a tree of names: a trend reads a month of blocks this way.
    pub fn window_hits(&self, selection: &Selection<'_>, matched: &StackFilter) -> Vec<WindowHits> {
        let kept = Kept::of(self, selection);
        let stack_kept = selection
            .stacks
            .filter(|f| !f.is_noop())
            .map(|filter| stacks_kept(self, filter));
        let hit = stacks_kept(self, matched);
        let mut hits = vec![WindowHits::default(); self.windows.len()];
        for sample in &self.samples {
            let node = sample.node as usize;
            if !kept.keeps(sample) || stack_kept.as_ref().is_some_and(|k| !k[node]) {
                continue;
            }
            let window = &mut hits[sample.window as usize];
            window.samples += sample.count;
            if hit[node] {
                window.matched += sample.count;
            }
        }
        hits
    }
}

/// Each node's count, weighted by its windows' periods when the periods of
/// all `sums` together differ: one scale for every part, so the parts of
/// an aggregate (its hosts) stay comparable.
pub fn weigh(sums: &[&NodeSums]) -> Vec<Vec<u64>> {
    let scale = scale(sums);
    sums.iter()
        .map(|s| match scale {
            None => s.samples.clone(),
            Some(scale) => s
                .samples
                .iter()
                .zip(&s.event_totals)
                .map(|(&raw, &total)| weighted(raw, total, scale))
                .collect(),
        })
        .collect()
}

/// A count of `raw` samples whose periods add up to `event_total`, at
/// `scale` samples per event unit.
pub(crate) fn weighted(raw: u64, event_total: f64, scale: f64) -> u64 {
    if raw == 0 {
        0
    } else {
        // A stack seen only in fast windows may weigh under half a mean
        // sample; it was seen, so it stays.
        ((event_total * scale).round() as u64).max(1)
    }
}

/// Samples per event unit over all `sums`, or `None` when there is
/// nothing to weight: the periods agree, or some are unknown (0: weighting
/// would drop those windows).
pub fn scale(sums: &[&NodeSums]) -> Option<f64> {
    let min = sums.iter().map(|s| s.min_period).min().unwrap_or(0);
    let max = sums.iter().map(|s| s.max_period).max().unwrap_or(0);
    let samples: u64 = sums.iter().flat_map(|s| &s.samples).sum();
    let event_total: f64 = sums.iter().flat_map(|s| &s.event_totals).sum();
    period_scale(min, max, samples, event_total)
}

/// `samples` per event unit, or `None` when there is nothing to weight
/// (as [`scale`] says), the periods running from `min` to `max`.
pub(crate) fn period_scale(min: u64, max: u64, samples: u64, event_total: f64) -> Option<f64> {
    (min != max && min > 0 && max > 0 && event_total > 0.0).then(|| samples as f64 / event_total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{ProfileBuilder, Window};
    use odp_core::Frame;

    fn window(start_ms: i64, period: u64, event: EventKind) -> Window {
        Window {
            profile_id: uuid::Uuid::nil(),
            host: "h".into(),
            agent_id: "a".into(),
            sequence: 0,
            start_ms,
            end_ms: start_ms + 1_000,
            event,
            period,
            frequency_hz: 0,
        }
    }

    fn sample_profile() -> Profile {
        let mut b = ProfileBuilder::default();
        let (main, hot, cold) = (
            b.frame(&Frame::function("main")),
            b.frame(&Frame::function("hot")),
            b.frame(&Frame::function("cold")),
        );
        // One second at 1000 Hz, one at 100 Hz, one of allocations.
        let fast = b.window(window(0, 1_000_000, EventKind::CpuClock));
        let slow = b.window(window(1_000, 10_000_000, EventKind::CpuClock));
        let bytes = b.window(window(2_000, 512, EventKind::AllocBytes));
        b.thread(fast, 1, "worker-1");
        b.thread(slow, 1, "worker-1");
        b.thread(fast, 2, "main");
        b.samples(fast, 1, &[main, hot], 900);
        b.samples(fast, 2, &[main, cold], 100);
        b.samples(slow, 1, &[main, hot], 100);
        b.samples(bytes, 1, &[main, hot], 7);
        b.build()
    }

    #[test]
    fn one_event_and_windows_of_different_rates_merge_by_time() {
        let profile = sample_profile();
        let names = NameTree::new(&profile);
        let sums = profile.select(&Selection::default(), &names);
        assert_eq!(sums.event, Some(EventKind::CpuClock));
        assert_eq!(sums.windows, 2);
        let hot = profile.tree.find(&[0, 1]).unwrap();
        let cold = profile.tree.find(&[0, 2]).unwrap();
        assert_eq!(
            (sums.samples[hot as usize], sums.samples[cold as usize]),
            (1000, 100)
        );
        // hot: 0.9 s + 1 s, cold 0.1 s, of 2 s; 1100 samples kept.
        let weighted = weigh(&[&sums]);
        assert_eq!(weighted[0][hot as usize], 1045);
        assert_eq!(weighted[0][cold as usize], 55);
    }

    #[test]
    fn threads_time_and_stack_filters_narrow_the_samples() {
        let profile = sample_profile();
        let names = NameTree::new(&profile);
        let worker = ThreadFilter::new("^worker-").unwrap();
        let sums = profile.select(
            &Selection {
                threads: Some(&worker),
                since_ms: Some(1_500),
                ..Selection::default()
            },
            &names,
        );
        assert_eq!(sums.windows, 1);
        assert_eq!(sums.samples.iter().sum::<u64>(), 100);
        let no_hot = StackFilter::new(None, Some("^hot$")).unwrap();
        let sums = profile.select(
            &Selection {
                stacks: Some(&no_hot),
                ..Selection::default()
            },
            &names,
        );
        assert_eq!(sums.samples.iter().sum::<u64>(), 100);
    }

    #[test]
    fn window_hits_count_what_select_keeps_per_window() {
        let profile = sample_profile();
        let names = NameTree::new(&profile);
        let hot = StackFilter::new(Some("^hot$"), None).unwrap();
        let worker = ThreadFilter::new("^worker-").unwrap();
        for selection in [
            Selection::default(),
            Selection {
                threads: Some(&worker),
                ..Selection::default()
            },
            Selection {
                event: Some(EventKind::AllocBytes),
                ..Selection::default()
            },
        ] {
            let all = profile.select(&selection, &names).window_samples;
            let matched = profile
                .select(
                    &Selection {
                        stacks: Some(&hot),
                        ..selection
                    },
                    &names,
                )
                .window_samples;
            let hits = profile.window_hits(&selection, &hot);
            let expected: Vec<WindowHits> = all
                .iter()
                .zip(&matched)
                .map(|(&samples, &matched)| WindowHits { samples, matched })
                .collect();
            assert_eq!(hits, expected, "{selection:?}");
        }
        let cpu = profile.window_hits(&Selection::default(), &hot);
        assert_eq!(
            cpu,
            [
                WindowHits {
                    samples: 1000,
                    matched: 900
                },
                WindowHits {
                    samples: 100,
                    matched: 100
                },
                WindowHits::default(),
            ]
        );
    }
}
