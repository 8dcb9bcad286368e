//! Profiles no ODP agent sampled: files uploaded from other tools (pprof,
//! folded stacks, …) and profiles pushed by their clients (OTLP, Pyroscope).
//! Each is a finished profile row and its samples as one snapshot, stored
//! through the same ingest path as agents' windows so every query works on
//! them, then compacted into the profile's block at once.

use chrono::{DateTime, Utc};
use odp_core::{Snapshot, Target};
use uuid::Uuid;

use crate::database::Database;
use crate::sql::{Arg, Sql};
use crate::{store_snapshots, Labels, ProfileRow, Result, StoreError, Violation};

/// Where a profile that no ODP agent sampled comes from, and what it is
/// labelled with.
#[derive(Debug, Clone, Copy)]
pub struct ImportedMeta<'a> {
    pub service: &'a str,
    /// The file format or wire protocol: `pprof`, `folded`, `otlp`, …
    pub format: &'a str,
    pub requested_by: &'a str,
    pub labels: &'a Labels,
}

/// What [`ingest_profile`] did.
#[derive(Debug)]
pub enum IngestedProfile {
    Stored(ProfileRow),
    /// The profile id was stored before, by a client retrying the same
    /// upload: nothing changed.
    Replayed(ProfileRow),
}

impl IngestedProfile {
    pub fn row(&self) -> &ProfileRow {
        match self {
            IngestedProfile::Stored(row) | IngestedProfile::Replayed(row) => row,
        }
    }
}

/// The finished profile row of an imported file.
struct ImportedProfile<'a> {
    snapshot: &'a Snapshot,
    meta: ImportedMeta<'a>,
    target: Target,
    frequency_hz: i32,
    started: DateTime<Utc>,
    finished: DateTime<Utc>,
}

/// Stores `snapshot` and then the finished profile it belongs to
/// (`snapshot.profile_id`), of `service`, imported from a `format` file by
/// `requested_by`. The snapshot goes first: should the profile insert
/// fail, the samples belong to no profile any query can name, whereas the
/// other order could leave a finished profile without its samples. A
/// profile id stored before is refused.
pub async fn import_profile(
    db: impl Into<Database>,
    snapshot: &Snapshot,
    service: &str,
    format: &str,
    requested_by: &str,
) -> Result<ProfileRow> {
    let labels = Labels::from([("source".to_owned(), "import".to_owned())]);
    let meta = ImportedMeta {
        service,
        format,
        requested_by,
        labels: &labels,
    };
    match ingest_profile(db, snapshot, meta).await? {
        IngestedProfile::Stored(row) => Ok(row),
        IngestedProfile::Replayed(row) => Err(StoreError::Conflict(format!(
            "profile {} exists already",
            row.id
        ))),
    }
}

/// Stores a profile another tool sampled, as [`import_profile`] does, but
/// idempotently: clients that retry send the same `snapshot.profile_id`
/// (derived from what they sent), and a second store of it changes nothing
/// and answers [`IngestedProfile::Replayed`] with the row stored first.
pub async fn ingest_profile(
    db: impl Into<Database>,
    snapshot: &Snapshot,
    meta: ImportedMeta<'_>,
) -> Result<IngestedProfile> {
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
    // Redelivered windows are skipped, so a retry stores no sample twice.
    store_snapshots(&db, &[snapshot]).await?;
    let profile = ImportedProfile {
        snapshot,
        meta,
        target: Target::Imported(meta.format.to_owned()),
        frequency_hz,
        started,
        finished,
    };
    let row = match insert_finished(&db, &profile).await {
        Ok(row) => row,
        Err(e) if e.violation() == Some(Violation::Unique) => {
            let row: ProfileRow = Sql::by_id("*", "profiles", snapshot.profile_id)
                .fetch_one(&db)
                .await?;
            return Ok(IngestedProfile::Replayed(row));
        }
        Err(e) => return Err(e),
    };
    // The profile is finished already: its one window goes into its
    // profile block at once, so the first read is of the compact block.
    crate::blocks::compact_profile(&db, snapshot.profile_id).await?;
    Ok(IngestedProfile::Stored(row))
}

/// Inserts the finished profile and reads it back, in one transaction.
async fn insert_finished(db: &Database, p: &ImportedProfile<'_>) -> Result<ProfileRow> {
    let s = p.snapshot;
    let mut tx = db.begin().await?;
    Sql::new(
        "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                               requested_by, event, agent_id, started_at, finished_at, labels)
         values ($1, $2, $3, $4, $5, $6, 'finished', $7, $8, $9, $10, $11, $12)",
    )
    .bind(s.profile_id)
    .bind(&s.host)
    .bind(p.meta.service)
    .bind(Arg::json(&p.target)?)
    .bind(s.window_end_ms - s.window_start_ms)
    .bind(p.frequency_hz)
    .bind(p.meta.requested_by)
    .bind(s.event.as_str())
    .bind(&s.agent_id)
    .bind(p.started)
    .bind(p.finished)
    .bind(Arg::json(p.meta.labels)?)
    .execute(&mut tx)
    .await?;
    // No pipeline worker saw these samples: one runs the rules over them
    // (see [`awaiting_detection`]), as over an agent's profile.
    Sql::new("insert into detection_queue (profile_id) values ($1)")
        .bind(s.profile_id)
        .execute(&mut tx)
        .await?;
    let row = Sql::by_id("*", "profiles", s.profile_id)
        .fetch_one(&mut tx)
        .await?;
    tx.commit().await?;
    Ok(row)
}

/// Up to `limit` imported or pushed profiles whose detection has not run
/// yet, oldest first.
pub async fn awaiting_detection(db: impl Into<Database>, limit: i64) -> Result<Vec<Uuid>> {
    Sql::new("select profile_id from detection_queue order by queued_at, profile_id limit $1")
        .bind(limit)
        .fetch_column(&db.into())
        .await
}

/// Marks the profiles' detection done. Evaluation is idempotent, so two
/// workers that evaluated one profile at once change nothing by both
/// marking it.
pub async fn detection_done(db: impl Into<Database>, profile_ids: &[Uuid]) -> Result<()> {
    let db = db.into();
    for &id in profile_ids {
        Sql::new("delete from detection_queue where profile_id = $1")
            .bind(id)
            .execute(&db)
            .await?;
    }
    Ok(())
}
