//! Continuous profiles' segments ([`odp_core::continuous`]), recognised
//! by their profile ids: an agent names its windows and events with the
//! id of its host's segment, and the profile is opened here, as the
//! segment's first message arrives, so that no message to the api-server
//! has to come first and a control plane that is down loses nothing.
//!
//! A message for a profile the store does not hold is a segment when its
//! id is that of an enabled configuration's segment, on the host the
//! message was signed for (which its assignment covers), at the time the
//! message gives. Anything else stays unknown and is refused as before.

use std::collections::HashMap;

use odp_core::continuous::{find_segment, ContinuousAssignment, SEGMENT_SECS};
use uuid::Uuid;

use crate::batch::Decoded;

/// A message whose profile the store does not hold: its id, the host it
/// was signed for, its agent, and the times (Unix seconds) whose segments
/// it may be of.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unknown {
    pub(crate) profile_id: Uuid,
    pub(crate) host: String,
    pub(crate) agent_id: String,
    pub(crate) times: Vec<i64>,
}

/// The messages of `decoded` for profiles `hosts` does not hold. A window
/// is of the segment holding its start; an event (an acknowledgement, or
/// the `profile_finished` sent just after the segment's end) of the
/// segment holding its time or the one before.
pub(crate) fn unknown(decoded: &Decoded, hosts: &HashMap<Uuid, String>) -> Vec<Unknown> {
    let windows = decoded.snapshots.iter().map(|(_, s)| {
        (
            s.profile_id,
            &s.host,
            &s.agent_id,
            vec![s.window_start_ms.div_euclid(1000)],
        )
    });
    let events = decoded.events.iter().filter_map(|(_, e)| {
        let at = e.at_ms.div_euclid(1000);
        e.profile_id()
            .map(|id| (id, &e.host, &e.agent_id, vec![at, at - SEGMENT_SECS]))
    });
    let mut unknown: Vec<Unknown> = Vec::new();
    for (profile_id, host, agent_id, times) in windows.chain(events) {
        if hosts.contains_key(&profile_id) || unknown.iter().any(|u| u.profile_id == profile_id) {
            continue;
        }
        unknown.push(Unknown {
            profile_id,
            host: host.clone(),
            agent_id: agent_id.clone(),
            times,
        });
    }
    unknown
}

/// Of `unknown`, the segments of `assignments`: each with its assignment
/// and start.
pub(crate) fn segments<'a>(
    unknown: &'a [Unknown],
    assignments: &'a [ContinuousAssignment],
) -> Vec<(&'a Unknown, &'a ContinuousAssignment, i64)> {
    unknown
        .iter()
        .filter_map(|u| {
            u.times.iter().find_map(|&at| {
                find_segment(assignments, u.profile_id, &u.host, at)
                    .filter(|(assignment, _)| assignment.covers(&u.host))
                    .map(|(assignment, start)| (u, assignment, start))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use odp_core::continuous::{segment_profile_id, segment_start};
    use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
    use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
    use odp_core::{EventKind, Frame, Snapshot};

    use super::*;
    use crate::batch::authenticity::testing::unsigned;
    use crate::batch::RawMessage;

    fn raw() -> RawMessage {
        unsigned("odp.stacks", 0, Vec::new())
    }

    fn snapshot_for(profile_id: Uuid, host: &str, window_start_ms: i64) -> Snapshot {
        let mut b = SnapshotBuilder::new();
        b.add(&[Frame::function("main")], 1, 3);
        b.build(SnapshotHeader {
            profile_id,
            host: host.into(),
            agent_id: "agent".into(),
            sequence: 0,
            window_start_ms,
            window_end_ms: window_start_ms + 10_000,
            event: EventKind::CpuClock,
            period: 1,
            frequency_hz: 19,
        })
    }

    fn assignment(id: u128, hosts: Option<Vec<&str>>) -> ContinuousAssignment {
        ContinuousAssignment {
            id: Uuid::from_u128(id),
            service: "checkout".into(),
            event: EventKind::CpuClock,
            frequency_hz: 19,
            cpu_budget_ppm: 5_000,
            hosts: hosts.map(|h| h.into_iter().map(str::to_owned).collect()),
        }
    }

    #[test]
    fn windows_and_late_events_find_their_segment_and_nothing_else_does() {
        let hour = segment_start(1_800_000_000);
        let assignments = [assignment(1, None), assignment(2, Some(vec!["web-9"]))];
        let ours = segment_profile_id(assignments[0].id, "web-1", hour);
        let not_covered = segment_profile_id(assignments[1].id, "web-1", hour);
        let other_host = segment_profile_id(assignments[0].id, "web-2", hour);
        let known = Uuid::from_u128(77);
        let window_at = |id, s: i64| snapshot_for(id, "web-1", s * 1000);
        let finished = AgentEvent {
            host: "web-1".into(),
            agent_id: "agent".into(),
            // Just past the segment's end.
            at_ms: (hour + SEGMENT_SECS + 1) * 1000,
            kind: AgentEventKind::ProfileFinished {
                profile_id: ours,
                reason: FinishReason::DurationElapsed,
                snapshots: 2,
                samples: 6,
                spooled_snapshots: 0,
                spooled_samples: 0,
            },
        };
        let decoded = Decoded {
            snapshots: vec![
                (raw(), window_at(ours, hour + 10)),
                (raw(), window_at(ours, hour + 20)),
                (raw(), window_at(not_covered, hour + 10)),
                (raw(), window_at(other_host, hour + 10)),
                (raw(), window_at(known, hour + 10)),
            ],
            events: vec![(raw(), finished)],
            rejected: Vec::new(),
        };
        let hosts = HashMap::from([(known, "web-1".to_owned())]);
        let unknown = unknown(&decoded, &hosts);
        assert_eq!(
            unknown.iter().map(|u| u.profile_id).collect::<Vec<_>>(),
            [ours, not_covered, other_host],
            "each unknown profile once, the known one left out"
        );
        let found = segments(&unknown, &assignments);
        assert_eq!(found.len(), 1, "{found:?}");
        let (u, a, start) = found[0];
        assert_eq!((u.profile_id, a.id, start), (ours, assignments[0].id, hour));

        // The finished event alone (no window yet) finds the hour before.
        let only_event = Decoded {
            snapshots: Vec::new(),
            events: decoded.events.clone(),
            rejected: Vec::new(),
        };
        let unknown = super::unknown(&only_event, &HashMap::new());
        let found = segments(&unknown, &assignments);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].2, hour);
    }
}
