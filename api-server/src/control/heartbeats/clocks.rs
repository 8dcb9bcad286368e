//! Hosts' clock offsets, measured from their heartbeats as they arrive.
//!
//! A heartbeat carries its agent's time; the follower reads it within
//! moments of its sending, so `sent − received` is the host's clock offset
//! less the heartbeat's delay on the way. Delays only ever make it smaller,
//! so the largest reading of the last few minutes is the best estimate:
//! one slow delivery (a broker hiccup, this replica busy) does not move it.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// How long a reading counts towards its host's estimate.
const KEEP_MS: i64 = 5 * 60_000;
/// Readings kept per host, newest first out when more arrive: heartbeats
/// come every few seconds, so this spans the window above.
const KEEP_READINGS: usize = 128;
/// An estimate is recorded again when it moved by this much since it was
/// last recorded, or when the last record is older than
/// [`RECORD_AGAIN_MS`].
const RECORD_CHANGE_MS: i64 = 250;
const RECORD_AGAIN_MS: i64 = 5 * 60_000;

/// Each host's recent readings of `sent − received`, in ms.
#[derive(Debug, Default)]
pub(crate) struct HostClocks {
    readings: Mutex<HashMap<String, VecDeque<Reading>>>,
    /// What was last recorded in the store for each host, and when.
    recorded: Mutex<HashMap<String, Reading>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reading {
    received_ms: i64,
    offset_ms: i64,
}

impl HostClocks {
    /// Notes a message of `host` sent at `sent_ms` by its clock and
    /// received at `received_ms` by ours; returns the host's offset
    /// estimate with it.
    pub(crate) fn note(&self, host: &str, sent_ms: i64, received_ms: i64) -> i64 {
        let mut readings = self.readings.lock().expect("clocks lock");
        let host_readings = readings.entry(host.to_owned()).or_default();
        host_readings.push_back(Reading {
            received_ms,
            offset_ms: sent_ms.saturating_sub(received_ms),
        });
        while host_readings.len() > KEEP_READINGS
            || host_readings
                .front()
                .is_some_and(|r| received_ms - r.received_ms > KEEP_MS)
        {
            host_readings.pop_front();
        }
        estimate(host_readings).unwrap_or(0)
    }

    /// `host`'s offset estimate, if it was heard from lately.
    pub(crate) fn offset_ms(&self, host: &str) -> Option<i64> {
        estimate(self.readings.lock().expect("clocks lock").get(host)?)
    }

    /// The hosts whose estimate is to be recorded at `now_ms`, with it.
    pub(crate) fn due(&self, now_ms: i64) -> Vec<(String, i64)> {
        let readings = self.readings.lock().expect("clocks lock");
        let recorded = self.recorded.lock().expect("clocks lock");
        let mut due: Vec<(String, i64)> = readings
            .iter()
            .filter(|(_, r)| r.back().is_some_and(|r| now_ms - r.received_ms <= KEEP_MS))
            .filter_map(|(host, r)| Some((host, estimate(r)?)))
            .filter(|(host, offset)| {
                recorded.get(*host).is_none_or(|last| {
                    (offset - last.offset_ms).abs() >= RECORD_CHANGE_MS
                        || now_ms - last.received_ms >= RECORD_AGAIN_MS
                })
            })
            .map(|(host, offset)| (host.clone(), offset))
            .collect();
        due.sort();
        due
    }

    /// Remembers that `clocks` were recorded at `now_ms`.
    pub(crate) fn recorded(&self, clocks: &[(String, i64)], now_ms: i64) {
        let mut recorded = self.recorded.lock().expect("clocks lock");
        for (host, offset_ms) in clocks {
            recorded.insert(
                host.clone(),
                Reading {
                    received_ms: now_ms,
                    offset_ms: *offset_ms,
                },
            );
        }
    }
}

fn estimate(readings: &VecDeque<Reading>) -> Option<i64> {
    readings.iter().map(|r| r.offset_ms).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_the_least_delayed_reading_of_the_last_minutes() {
        let clocks = HostClocks::default();
        let t = 1_800_000_000_000;
        // Two hours behind, delivered after 40 ms, 3 s (a broker stall)
        // and 15 ms.
        let behind = -7_200_000;
        assert_eq!(clocks.note("web-1", t + behind - 40, t), behind - 40);
        assert_eq!(clocks.note("web-1", t + behind, t + 3_000), behind - 40);
        assert_eq!(clocks.note("web-1", t + behind, t + 15), behind - 15);
        assert_eq!(clocks.offset_ms("web-1"), Some(behind - 15));
        assert_eq!(clocks.offset_ms("web-2"), None);
        // Readings older than the window no longer count: the clock was
        // set right meanwhile.
        let later = t + KEEP_MS + 1_000;
        assert_eq!(clocks.note("web-1", later - 20, later), -20);
    }

    #[test]
    fn estimates_are_recorded_when_new_moved_or_old() {
        let clocks = HostClocks::default();
        let t = 1_800_000_000_000;
        clocks.note("web-1", t + 5_000, t);
        clocks.note("web-2", t - 10, t);
        let due = clocks.due(t);
        assert_eq!(
            due,
            [("web-1".to_owned(), 5_000), ("web-2".to_owned(), -10)]
        );
        clocks.recorded(&due, t);
        assert!(clocks.due(t + 1_000).is_empty());
        // Web-1's clock jumps by a minute: its readings now all say more.
        clocks.note("web-1", t + 2_000 + 65_000, t + 2_000);
        assert_eq!(clocks.due(t + 2_000), [("web-1".to_owned(), 65_000)]);
        // Unchanged estimates are recorded again every few minutes.
        let again = t + RECORD_AGAIN_MS;
        clocks.note("web-2", again - 10, again);
        assert_eq!(
            clocks.due(again),
            [("web-1".to_owned(), 65_000), ("web-2".to_owned(), -10)]
        );
    }
}
