//! A profile's timeline: its windows' headers, of the profile's first
//! event, in time order. A window the agent sent in several messages (see
//! `Snapshot::split_to_fit`) is one entry, its parts' samples summed.

use chrono::{DateTime, Utc};
use odp_core::timeline::LostSamples;
pub use odp_core::timeline::TimelineWindow;
use odp_core::EventKind;
use uuid::Uuid;

use crate::columns::Text;
use crate::database::Database;
use crate::sql::Sql;
use crate::Result;

/// A profile's windows in time order, of its first event only.
pub async fn profile_timeline(
    db: impl Into<Database>,
    profile_id: Uuid,
) -> Result<Vec<TimelineWindow>> {
    let rows: Vec<TimelineRow> = Sql::new(
        "select host, window_start, window_end, event, samples, frequency_hz, expected_samples,
                lost_overflow, lost_throttled, lost_paused, lost_undiscovered, lost_transport
         from snapshots
         where profile_id = $1
           and event = (select event from snapshots where profile_id = $1 order by id limit 1)
         order by window_start, host, id",
    )
    .bind(profile_id)
    .fetch_all(&db.into())
    .await?;
    Ok(whole_windows(rows.into_iter().map(TimelineWindow::from)))
}

/// Consecutive rows of one window (same host and bounds) as one.
fn whole_windows(rows: impl Iterator<Item = TimelineWindow>) -> Vec<TimelineWindow> {
    let mut windows: Vec<TimelineWindow> = Vec::new();
    for row in rows {
        match windows.last_mut() {
            Some(last)
                if (&last.host, last.window_start, last.window_end)
                    == (&row.host, row.window_start, row.window_end) =>
            {
                // Only a window's first part carries its coverage.
                last.samples = last.samples.saturating_add(row.samples);
                last.expected = match (last.expected, row.expected) {
                    (Some(a), b) => Some(a.saturating_add(b.unwrap_or(0))),
                    (None, b) => b,
                };
                last.lost = last.lost.plus(&row.lost);
            }
            _ => windows.push(row),
        }
    }
    windows
}

/// One window's header.
#[derive(sqlx::FromRow)]
struct TimelineRow {
    host: String,
    window_start: DateTime<Utc>,
    window_end: DateTime<Utc>,
    #[sqlx(try_from = "Text<EventKind>")]
    event: EventKind,
    samples: i64,
    frequency_hz: i32,
    expected_samples: Option<i64>,
    lost_overflow: i64,
    lost_throttled: i64,
    lost_paused: i64,
    lost_undiscovered: i64,
    lost_transport: i64,
}

impl From<TimelineRow> for TimelineWindow {
    fn from(row: TimelineRow) -> Self {
        TimelineWindow {
            host: row.host,
            window_start: row.window_start,
            window_end: row.window_end,
            event: row.event,
            samples: row.samples,
            frequency_hz: row.frequency_hz,
            expected: row.expected_samples,
            lost: LostSamples {
                overflow: row.lost_overflow,
                throttled: row.lost_throttled,
                paused: row.lost_paused,
                undiscovered: row.lost_undiscovered,
                transport: row.lost_transport,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn window(host: &str, start_s: i64, samples: i64) -> TimelineWindow {
        TimelineWindow {
            host: host.into(),
            window_start: Utc.timestamp_opt(start_s, 0).unwrap(),
            window_end: Utc.timestamp_opt(start_s + 10, 0).unwrap(),
            event: EventKind::CpuClock,
            samples,
            frequency_hz: 999,
            expected: None,
            lost: LostSamples::default(),
        }
    }

    #[test]
    fn the_parts_of_a_window_are_one_entry() {
        let rows = [
            window("a", 0, 5),
            window("a", 0, 7),
            window("b", 0, 1),
            window("a", 10, 2),
            window("a", 10, 3),
            window("a", 10, 4),
        ];
        let merged = whole_windows(rows.into_iter());
        let got: Vec<(&str, i64)> = merged
            .iter()
            .map(|w| (w.host.as_str(), w.samples))
            .collect();
        assert_eq!(got, [("a", 12), ("b", 1), ("a", 9)]);
    }
}
