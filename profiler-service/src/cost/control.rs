//! Cost control of one running profile, applied to each window as it
//! closes: FSP prunes the snapshot, then the [`Governor`] (FDA under the
//! overhead budget) picks the next window's frequency, and what happened is
//! reported as [`CostEventKind`]s.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use odp_core::cost::CostEventKind;
use odp_core::Snapshot;
use uuid::Uuid;

use super::budget::thread_cpu_time;
use super::{fsp, CostSettings, Governor};

/// What closing one window produced.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowOutcome {
    pub events: Vec<CostEventKind>,
    /// The frequency for the next window, when it changes.
    pub next_hz: Option<u32>,
}

/// Samples per leaf function (the last frame of each stack).
pub fn leaf_counts(snapshot: &Snapshot) -> HashMap<String, u64> {
    let mut leaves = HashMap::new();
    for stack in &snapshot.stacks {
        if let Some(&leaf) = stack.frames.last() {
            let name = &snapshot.frames[leaf as usize].function;
            *leaves.entry(name.clone()).or_insert(0) += stack.count;
        }
    }
    leaves
}

/// The cost control of one profile, living on its sampling thread (the CPU
/// time measured is that thread's).
#[derive(Debug)]
pub struct Control {
    profile_id: Uuid,
    settings: CostSettings,
    governor: Governor,
    cpu_mark: Option<(Duration, Instant)>,
    /// The plugin's helper-process CPU at the last window close.
    helper_mark: Duration,
}

impl Control {
    pub fn new(profile_id: Uuid, requested_hz: u32, settings: CostSettings, now: Instant) -> Self {
        let governor = Governor::new(requested_hz, &settings);
        let cpu_mark = settings
            .overhead_budget
            .and_then(|_| thread_cpu_time())
            .map(|cpu| (cpu, now));
        Control {
            profile_id,
            settings,
            governor,
            cpu_mark,
            helper_mark: Duration::ZERO,
        }
    }

    /// The frequency the current window samples at.
    pub fn frequency(&self) -> u32 {
        self.governor.frequency()
    }

    /// Whether any cost control is on (and so worth reporting).
    pub fn active(&self) -> bool {
        self.settings != CostSettings::default()
    }

    /// Prunes a just closed window in place and decides the next frequency.
    /// `helper_cpu` is the CPU the plugin's helper processes (py-spy) used
    /// since the profile started: the budget counts it with the agent's.
    pub fn close_window(
        &mut self,
        snapshot: &mut Snapshot,
        now: Instant,
        helper_cpu: Duration,
    ) -> WindowOutcome {
        let pruned = match self.settings.fsp_share {
            Some(share) => fsp::prune(snapshot, share),
            None => fsp::PruneStats {
                threads_kept: fsp::thread_counts(snapshot).len() as u32,
                ..fsp::PruneStats::default()
            },
        };
        let helpers = helper_cpu.saturating_sub(self.helper_mark);
        self.helper_mark = helper_cpu.max(self.helper_mark);
        let cpu = self.cpu_mark.and_then(|(before, at)| {
            let after = thread_cpu_time()?;
            self.cpu_mark = Some((after, now));
            Some((
                after.saturating_sub(before) + helpers,
                now.saturating_duration_since(at),
            ))
        });
        let window_hz = self.governor.frequency();
        let step = self.governor.window(&leaf_counts(snapshot), cpu);
        let mut events = Vec::new();
        if self.active() {
            events.push(CostEventKind::WindowStats {
                profile_id: self.profile_id,
                sequence: snapshot.sequence,
                frequency_hz: window_hz,
                samples: snapshot.total_samples() - pruned.samples_pruned,
                threads: pruned.threads_kept,
                threads_pruned: pruned.threads_pruned,
                samples_pruned: pruned.samples_pruned,
                divergence: step.divergence,
                cpu_share: step.cpu_share,
            });
        }
        if let Some((frequency_hz, reason)) = step.change {
            events.push(CostEventKind::ProfileAdjusted {
                profile_id: self.profile_id,
                sequence: snapshot.sequence,
                previous_hz: window_hz,
                frequency_hz,
                reason,
            });
        }
        WindowOutcome {
            events,
            next_hz: step.change.map(|(hz, _)| hz),
        }
    }
}

#[cfg(test)]
mod tests {
    use odp_core::cost::AdjustReason;
    use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
    use odp_core::{EventKind, Frame};

    use super::*;
    use crate::cost::FdaParams;

    fn window(sequence: u64, leaves: &[(&str, u32, u64)]) -> Snapshot {
        let mut b = SnapshotBuilder::new();
        for &(name, tid, count) in leaves {
            b.add(
                &[Frame::function("main"), Frame::function(name)],
                tid,
                count,
            );
        }
        b.build(SnapshotHeader {
            profile_id: Uuid::nil(),
            host: "h".into(),
            agent_id: "a".into(),
            sequence,
            window_start_ms: 0,
            window_end_ms: 1,
            event: EventKind::CpuClock,
            period: 1,
            frequency_hz: 0,
        })
    }

    #[test]
    fn prunes_reports_and_adjusts_per_window() {
        let settings = CostSettings {
            fsp_share: Some(0.9),
            fda: Some(FdaParams {
                theta: 0.05,
                lambda: 0.5,
                stable_windows: 1,
                top_n: 10,
                min_hz: 10,
                max_hz: 100,
            }),
            ..CostSettings::default()
        };
        let t0 = Instant::now();
        let mut control = Control::new(Uuid::nil(), 100, settings, t0);
        assert!(control.active());
        let mut first = window(0, &[("hot", 1, 95), ("idle", 2, 5)]);
        let out = control.close_window(&mut first, t0, Duration::ZERO);
        // Pruned samples stay counted, in one `[pruned threads]` stack.
        assert_eq!(first.total_samples(), 100);
        assert_eq!(out.next_hz, None);
        assert!(matches!(
            out.events[..],
            [CostEventKind::WindowStats {
                threads: 1,
                threads_pruned: 1,
                samples_pruned: 5,
                divergence: None,
                frequency_hz: 100,
                ..
            }]
        ));
        let mut second = window(1, &[("hot", 1, 90)]);
        let out = control.close_window(&mut second, t0, Duration::ZERO);
        assert_eq!(out.next_hz, Some(50));
        assert!(matches!(
            out.events[1],
            CostEventKind::ProfileAdjusted {
                sequence: 1,
                previous_hz: 100,
                frequency_hz: 50,
                reason: AdjustReason::HotspotsStable,
                ..
            }
        ));
        assert_eq!(control.frequency(), 50);
        assert_eq!(
            leaf_counts(&second),
            HashMap::from([("hot".to_owned(), 90)])
        );

        let mut off = Control::new(Uuid::nil(), 100, CostSettings::default(), t0);
        let mut w = window(0, &[("hot", 1, 95), ("idle", 2, 5)]);
        let out = off.close_window(&mut w, t0, Duration::ZERO);
        assert!(out.events.is_empty() && out.next_hz.is_none());
        assert_eq!(w.total_samples(), 100);
    }
}
