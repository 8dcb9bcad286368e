//! A profile's timeline: its windows' headers, of the profile's first
//! event, in time order.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use crate::Result;

/// One window of a profile on one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimelineWindow {
    pub host: String,
    pub window_start: DateTime<Utc>,
    pub window_end: DateTime<Utc>,
    pub event: String,
    pub samples: i64,
    pub frequency_hz: i32,
}

/// A profile's windows in time order, of its first event only.
pub async fn profile_timeline(pool: &PgPool, profile_id: Uuid) -> Result<Vec<TimelineWindow>> {
    Ok(
        sqlx::query_as::<_, (String, DateTime<Utc>, DateTime<Utc>, String, i64, i32)>(
            "select host, window_start, window_end, event, samples, frequency_hz
         from snapshots
         where profile_id = $1
           and event = (select event from snapshots where profile_id = $1 order by id limit 1)
         order by window_start, id",
        )
        .bind(profile_id)
        .fetch_all(pool)
        .await?
        .into_iter()
        .map(
            |(host, window_start, window_end, event, samples, frequency_hz)| TimelineWindow {
                host,
                window_start,
                window_end,
                event,
                samples,
                frequency_hz,
            },
        )
        .collect(),
    )
}
