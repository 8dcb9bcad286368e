//! A profile's timeline: its windows' headers, of the profile's first
//! event, in time order.

use chrono::{DateTime, Utc};
pub use odp_api_types::TimelineWindow;
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
        "select host, window_start, window_end, event, samples, frequency_hz
         from snapshots
         where profile_id = $1
           and event = (select event from snapshots where profile_id = $1 order by id limit 1)
         order by window_start, id",
    )
    .bind(profile_id)
    .fetch_all(&db.into())
    .await?;
    Ok(rows.into_iter().map(TimelineWindow::from).collect())
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
        }
    }
}
