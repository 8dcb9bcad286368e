//! Placing a skewed host's windows and events at the time they happened.
//!
//! Agents stamp windows and events with their host's clock. The api-server
//! measures each host's offset from its heartbeats and records it
//! ([`odp_store::HostClock`]); here a batch's times are moved by the
//! offsets of their hosts before anything is stored, once an offset is
//! [`odp_store::CLOCK_CORRECTED_FROM_MS`] or more. A window is never
//! dropped for its time: late or early, it is stored where it belongs.
//!
//! Continuous segments are found before this, by the agent's own time:
//! that is the time the agent named the segment by.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use odp_store::{Database, StoreError};

use crate::batch::Decoded;

/// How often the offsets are read again: an offset recorded (or changed)
/// is applied within this long.
const RELOAD: Duration = Duration::from_secs(10);
/// Offsets measured longer ago than this are no longer applied: a host not
/// heard from in a day has likely been set right, or is gone.
const TRUST_FOR: chrono::Duration = chrono::Duration::hours(24);

/// The hosts' corrections, as last read.
#[derive(Debug, Default)]
pub(crate) struct Clocks {
    loaded: Mutex<Option<(Instant, HashMap<String, i64>)>>,
}

impl Clocks {
    /// The corrections in force, read again when older than [`RELOAD`].
    /// A failed read keeps the last ones.
    pub(crate) async fn corrections(&self, db: &Database) -> HashMap<String, i64> {
        if let Some((at, corrections)) = &*self.loaded.lock().expect("clocks lock") {
            if at.elapsed() < RELOAD {
                return corrections.clone();
            }
        }
        match read(db).await {
            Ok(corrections) => {
                *self.loaded.lock().expect("clocks lock") =
                    Some((Instant::now(), corrections.clone()));
                corrections
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the hosts' clock offsets failed");
                let mut loaded = self.loaded.lock().expect("clocks lock");
                let corrections = loaded.as_ref().map(|(_, c)| c.clone()).unwrap_or_default();
                // Not again before the next reload: the database is away.
                *loaded = Some((Instant::now(), corrections.clone()));
                corrections
            }
        }
    }
}

async fn read(db: &Database) -> Result<HashMap<String, i64>, StoreError> {
    let since = chrono::Utc::now() - TRUST_FOR;
    Ok(odp_store::host_clocks(db, since)
        .await?
        .into_iter()
        .filter_map(|clock| {
            let correction = clock.correction_ms();
            (correction != 0).then_some((clock.host, correction))
        })
        .collect())
}

/// Moves the times of `decoded`'s windows and events back by their
/// hosts' corrections; returns how many were moved.
pub(crate) fn correct(decoded: &mut Decoded, corrections: &HashMap<String, i64>) -> usize {
    if corrections.is_empty() {
        return 0;
    }
    let mut moved = 0;
    for (_, snapshot) in &mut decoded.snapshots {
        if let Some(&by) = corrections.get(&snapshot.host) {
            snapshot.window_start_ms = snapshot.window_start_ms.saturating_sub(by);
            snapshot.window_end_ms = snapshot.window_end_ms.saturating_sub(by);
            moved += 1;
        }
    }
    for (_, event) in &mut decoded.events {
        if let Some(&by) = corrections.get(&event.host) {
            event.at_ms = event.at_ms.saturating_sub(by);
            moved += 1;
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use odp_core::event::{AgentEvent, AgentEventKind};
    use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
    use odp_core::{EventKind, Frame};

    use super::*;
    use crate::batch::RawMessage;

    fn raw() -> RawMessage {
        RawMessage {
            topic: "t".into(),
            partition: 0,
            offset: 0,
            key: None,
            payload: Vec::new(),
            certificate: None,
            signature: None,
        }
    }

    fn window(host: &str, start_ms: i64) -> odp_core::Snapshot {
        let mut b = SnapshotBuilder::new();
        b.add(&[Frame::function("main")], 1, 3);
        b.build(SnapshotHeader {
            profile_id: uuid::Uuid::nil(),
            host: host.into(),
            agent_id: "a".into(),
            sequence: 0,
            window_start_ms: start_ms,
            window_end_ms: start_ms + 10_000,
            event: EventKind::CpuClock,
            period: 1,
            frequency_hz: 1,
        })
    }

    fn cost_event(host: &str, at_ms: i64) -> AgentEvent {
        AgentEvent {
            host: host.into(),
            agent_id: "a".into(),
            at_ms,
            kind: AgentEventKind::CommandRejected {
                command_id: None,
                profile_id: None,
                reason: "r".into(),
            },
        }
    }

    #[test]
    fn only_the_skewed_hosts_times_move_and_by_their_offsets() {
        let t = 1_800_000_000_000;
        let mut decoded = Decoded {
            snapshots: vec![(raw(), window("behind", t)), (raw(), window("right", t))],
            events: vec![
                (raw(), cost_event("ahead", t)),
                (raw(), cost_event("right", t)),
            ],
            rejected: Vec::new(),
        };
        let corrections = HashMap::from([
            ("behind".to_owned(), -7_200_000),
            ("ahead".to_owned(), 90_000),
        ]);
        assert_eq!(correct(&mut decoded, &corrections), 2);
        let behind = &decoded.snapshots[0].1;
        assert_eq!(
            (behind.window_start_ms, behind.window_end_ms),
            (t + 7_200_000, t + 7_210_000)
        );
        assert_eq!(decoded.snapshots[1].1.window_start_ms, t);
        assert_eq!(decoded.events[0].1.at_ms, t - 90_000);
        assert_eq!(decoded.events[1].1.at_ms, t);
    }
}
