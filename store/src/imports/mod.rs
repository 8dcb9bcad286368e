//! Profiles uploaded from other tools' files (pprof, folded stacks): a
//! finished profile row and its samples as one snapshot, stored through
//! the same ingest path as agents' windows so every query works on them,
//! then compacted into the profile's block at once.

use chrono::{DateTime, Utc};
use odp_core::{Snapshot, Target};

use crate::database::Database;
use crate::sql::{Arg, Sql};
use crate::{store_snapshots, ProfileRow, Result, StoreError};

/// The finished profile row of an imported file.
struct ImportedProfile<'a> {
    snapshot: &'a Snapshot,
    service: &'a str,
    target: Target,
    frequency_hz: i32,
    requested_by: &'a str,
    started: DateTime<Utc>,
    finished: DateTime<Utc>,
}

/// Stores `snapshot` and then the finished profile it belongs to
/// (`snapshot.profile_id`), of `service`, imported from a `format` file by
/// `requested_by`. The snapshot goes first: should the profile insert
/// fail, the samples belong to no profile any query can name, whereas the
/// other order could leave a finished profile without its samples.
pub async fn import_profile(
    db: impl Into<Database>,
    snapshot: &Snapshot,
    service: &str,
    format: &str,
    requested_by: &str,
) -> Result<ProfileRow> {
    let db = db.into();
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
    store_snapshots(&db, &[snapshot]).await?;
    let profile = ImportedProfile {
        snapshot,
        service,
        target: Target::Imported(format.to_owned()),
        frequency_hz,
        requested_by,
        started,
        finished,
    };
    let row = insert_finished(&db, &profile).await?;
    // The profile is finished already: its one window goes into its
    // profile block at once, so the first read is of the compact block.
    crate::blocks::compact_profile(&db, snapshot.profile_id).await?;
    Ok(row)
}

/// Inserts the finished profile and reads it back, in one transaction.
async fn insert_finished(db: &Database, p: &ImportedProfile<'_>) -> Result<ProfileRow> {
    let s = p.snapshot;
    let mut tx = db.begin().await?;
    Sql::new(
        "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                               requested_by, event, agent_id, started_at, finished_at)
         values ($1, $2, $3, $4, $5, $6, 'finished', $7, $8, $9, $10, $11)",
    )
    .bind(s.profile_id)
    .bind(&s.host)
    .bind(p.service)
    .bind(Arg::json(&p.target)?)
    .bind(s.window_end_ms - s.window_start_ms)
    .bind(p.frequency_hz)
    .bind(p.requested_by)
    .bind(s.event.as_str())
    .bind(&s.agent_id)
    .bind(p.started)
    .bind(p.finished)
    .execute(&mut tx)
    .await?;
    let row = Sql::new("select * from profiles where id = $1")
        .bind(s.profile_id)
        .fetch_one(&mut tx)
        .await?;
    tx.commit().await?;
    Ok(row)
}
