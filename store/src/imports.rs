//! Profiles uploaded from other tools' files (pprof, folded stacks): a
//! finished profile row and its samples as one snapshot, stored through
//! the same ingest path as agents' windows so every query works on them,
//! then compacted into the profile's block at once.

use chrono::{DateTime, Utc};
use odp_core::{Snapshot, Target};
use sqlx::types::Json;
use sqlx::PgPool;

use crate::{store_snapshots, ProfileRow, Result, StoreError};

/// Stores `snapshot` and then the finished profile it belongs to
/// (`snapshot.profile_id`), of `service`, imported from a `format` file by
/// `requested_by`. The snapshot goes first: should the profile insert
/// fail, the samples belong to no profile any query can name, whereas the
/// other order could leave a finished profile without its samples.
pub async fn import_profile(
    pool: &PgPool,
    snapshot: &Snapshot,
    service: &str,
    format: &str,
    requested_by: &str,
) -> Result<ProfileRow> {
    let to_time = |ms: i64| {
        DateTime::<Utc>::from_timestamp_millis(ms)
            .ok_or_else(|| StoreError::Corrupt(format!("timestamp {ms} ms out of range")))
    };
    let (started, finished) = (
        to_time(snapshot.window_start_ms)?,
        to_time(snapshot.window_end_ms)?,
    );
    let frequency_hz = i32::try_from(snapshot.frequency_hz).map_err(|_| {
        StoreError::Corrupt(format!("frequency {} out of range", snapshot.frequency_hz))
    })?;
    store_snapshots(pool, &[snapshot]).await?;
    let row = sqlx::query_as::<_, ProfileRow>(
        "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                               requested_by, event, agent_id, started_at, finished_at)
         values ($1, $2, $3, $4, $5, $6, 'finished', $7, $8, $9, $10, $11)
         returning *",
    )
    .bind(snapshot.profile_id)
    .bind(&snapshot.host)
    .bind(service)
    .bind(Json(Target::Imported(format.to_owned())))
    .bind(snapshot.window_end_ms - snapshot.window_start_ms)
    .bind(frequency_hz)
    .bind(requested_by)
    .bind(snapshot.event.as_str())
    .bind(&snapshot.agent_id)
    .bind(started)
    .bind(finished)
    .fetch_one(pool)
    .await?;
    // The profile is finished already: its one window goes into its
    // profile block at once, so the first read is of the compact block.
    crate::blocks::compact_profile(pool, snapshot.profile_id).await?;
    Ok(row)
}
