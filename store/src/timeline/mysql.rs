//! The timeline query in MySQL and MariaDB.

use sqlx::MySqlPool;
use uuid::Uuid;

use super::TimelineRow;
use crate::Result;

pub(super) async fn timeline_rows(pool: &MySqlPool, profile_id: Uuid) -> Result<Vec<TimelineRow>> {
    Ok(sqlx::query_as::<_, TimelineRow>(
        "select host, window_start, window_end, event, samples, frequency_hz
         from snapshots
         where profile_id = ?
           and event = (select event from snapshots where profile_id = ? order by id limit 1)
         order by window_start, id",
    )
    .bind(profile_id)
    .bind(profile_id)
    .fetch_all(pool)
    .await?)
}
