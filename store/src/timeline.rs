//! A profile's timeline: its windows' headers, of the profile's first
//! event, in time order.

use chrono::{DateTime, Utc};
pub use odp_api_types::TimelineWindow;
use sqlx::PgPool;
use uuid::Uuid;

use crate::Result;

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
