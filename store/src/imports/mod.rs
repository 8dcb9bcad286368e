//! Profiles no ODP agent sampled: files uploaded from other tools (pprof,
//! folded stacks, …) and profiles pushed by their clients (OTLP, Pyroscope).
//! Each is a finished profile of one window (one snapshot), stored as an
//! agent's profile is once compacted (`write.rs`): the window's header row
//! in `snapshots` (its block already compacted), the profile block, the
//! profile row and its place in the detection queue, in one transaction.
//! The block is built in memory, as compaction would build it, so the
//! samples never go through the window tables and back.

mod write;

use odp_core::Snapshot;
use uuid::Uuid;

use crate::cpu::blocking;
use crate::database::Database;
use crate::sql::Sql;
use crate::{Labels, ProfileRow, Result, StoreError, Violation};
use write::{write, ImportedProfile, Written};

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

/// Stores `snapshot` as the finished profile it belongs to
/// (`snapshot.profile_id`), of `service`, imported from a `format` file by
/// `requested_by`: whole, or not at all. A profile id stored before is
/// refused.
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
    let profile = ImportedProfile::of(snapshot, meta)?;
    // Built before the transaction begins, which then only writes.
    let window = snapshot.clone();
    let block = blocking(move || Ok(crate::blocks::window_block(&window))).await?;
    let row = match write(&db, &profile, &block).await {
        Ok(Written::Whole(row)) => row,
        // Windows of the profile were stored before, apart from it (by an
        // older server, between its two writes): they are its samples,
        // compacted now as the pipeline would.
        Ok(Written::ProfileOnly(row)) => {
            crate::blocks::compact_profile(&db, snapshot.profile_id).await?;
            row
        }
        // The profile row was there: a retry, and nothing was written.
        Err(e) if e.violation() == Some(Violation::Unique) => {
            let row: ProfileRow = Sql::by_id("*", "profiles", snapshot.profile_id)
                .fetch_one(&db)
                .await?;
            return Ok(IngestedProfile::Replayed(row));
        }
        Err(e) => return Err(e),
    };
    Ok(IngestedProfile::Stored(row))
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
