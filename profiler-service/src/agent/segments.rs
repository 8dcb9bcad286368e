//! The agent's side of continuous profiles: the plan of
//! [`crate::continuous::Scheduler`] carried out through the agent's own
//! profile path, so segments are started, stopped and reaped as commands'
//! profiles are.

use tracing::{error, info, warn};

use super::Agent;
use crate::continuous::{Action, Now, SegmentStart, MAX_SEGMENTS};

impl Agent {
    /// Starts and stops continuous segments as the held assignments, the
    /// last scan, the clock and draining say.
    pub(super) fn plan_continuous(&mut self) {
        let book = self.services.borrow().clone();
        let live = self.live.borrow().clone();
        let plan = self
            .continuous
            .plan(Now::read(), &book, &live, !self.draining);
        if plan.over_cap != self.over_cap {
            if !plan.over_cap.is_empty() {
                warn!(assignments = ?plan.over_cap, max = MAX_SEGMENTS,
                    "too many continuous profiles on this host; these wait for room");
            }
            self.over_cap = plan.over_cap;
        }
        for action in plan.actions {
            match action {
                Action::Start(segment) => self.start_segment(segment, live.scan),
                Action::Stop(profile_id) => {
                    info!(%profile_id, "stopping a continuous segment");
                    if let Some(handle) = self.running.get(&profile_id) {
                        handle.stop();
                    }
                }
            }
        }
    }

    /// Starts one part of a continuous segment as a start command would:
    /// the assignment's event and budget resolved like a command's options.
    fn start_segment(&mut self, segment: SegmentStart, scan: u64) {
        let SegmentStart {
            start,
            first_sequence,
        } = segment;
        let profile_id = start.profile_id;
        info!(%profile_id, first_sequence, "starting a continuous segment");
        let started = match self.config.cost.resolve(start.frequency_hz, &start.options) {
            Ok(cost) => self.start(start, cost, first_sequence),
            Err(reason) => {
                error!(%profile_id, %reason, "cannot start a continuous segment");
                false
            }
        };
        if !started {
            // Tried again after the next scan.
            self.continuous.ended(&profile_id, Now::read(), scan);
        }
    }
}
