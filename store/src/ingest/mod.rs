//! Bulk ingest of snapshots: one row per agent window, holding the
//! window's block (the snapshot as the agent sent it, [`SnapshotToStore`]:
//! frames deduplicated, LZ4), one transaction per batch (`postgres.rs`: one
//! `UNNEST` insert; `mysql.rs`: the keys already stored, then multi-row
//! inserts). Windows already stored are skipped, so a redelivery changes
//! nothing; a profile's windows from any agent but its owner are refused
//! ([`ownership`]). Once the profile ends, its windows are compacted into
//! one profile block (`crate::blocks`).

mod mysql;
mod ownership;
mod postgres;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use odp_core::coverage::LossReason;
use odp_core::Snapshot;
use uuid::Uuid;

use crate::database::{on_backend, Database};
use crate::{Result, StoreError};

/// What [`store_snapshots`] did with a batch: every snapshot of it is
/// counted once, as stored, duplicate or foreign.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IngestOutcome {
    /// Snapshots stored by this call.
    pub stored: usize,
    /// Snapshots already stored before (same agent, profile and sequence),
    /// ignored.
    pub duplicates: usize,
    /// Samples of the snapshots stored by this call.
    pub samples: u64,
    /// Snapshots of profiles that belong to another agent, not stored.
    pub foreign: Vec<ForeignSnapshot>,
}

/// A snapshot refused because its profile belongs to another agent: the
/// one that first acknowledged it (see the `ownership` module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignSnapshot {
    pub agent_id: String,
    pub profile_id: Uuid,
    pub sequence: u64,
    pub owner: String,
}

impl ForeignSnapshot {
    /// Why it was refused, for the dead-letter topic.
    pub fn reason(&self) -> String {
        format!(
            "profile {} belongs to agent {}, which acknowledged it first; \
             snapshot {} from agent {} refused",
            self.profile_id, self.owner, self.sequence, self.agent_id
        )
    }
}

/// A snapshot to store, with the bytes it was decoded from when it came
/// off the wire. Those bytes become its block as they are, when they are
/// in the form blocks are kept in ([`odp_core::snapshot::is_current_form`]):
/// decoding them gave `snapshot`, so encoding it again would only spend the
/// time to write the same snapshot. A snapshot from elsewhere (an import, a
/// test), or received in an older or uncompressed form, is encoded here.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotToStore<'a> {
    snapshot: &'a Snapshot,
    /// What [`Snapshot::decode`] read `snapshot` from, if anything.
    received: Option<&'a [u8]>,
}

impl<'a> SnapshotToStore<'a> {
    /// `snapshot`, as [`Snapshot::decode`] read it from `bytes`.
    pub fn received(snapshot: &'a Snapshot, bytes: &'a [u8]) -> Self {
        SnapshotToStore {
            snapshot,
            received: Some(bytes),
        }
    }

    /// The block to store: the bytes as received, or encoded again.
    fn block(&self) -> Cow<'a, [u8]> {
        match self.received {
            Some(bytes) if odp_core::snapshot::is_current_form(bytes) => Cow::Borrowed(bytes),
            _ => Cow::Owned(self.snapshot.encode()),
        }
    }
}

impl<'a> From<&'a Snapshot> for SnapshotToStore<'a> {
    fn from(snapshot: &'a Snapshot) -> Self {
        SnapshotToStore {
            snapshot,
            received: None,
        }
    }
}

impl std::ops::Deref for SnapshotToStore<'_> {
    type Target = Snapshot;

    fn deref(&self) -> &Snapshot {
        self.snapshot
    }
}

/// Stores a batch of snapshots (`&Snapshot`s, or [`SnapshotToStore`]s with
/// the bytes received) in one transaction. Snapshots already stored are
/// skipped, so redelivered messages change nothing.
pub async fn store_snapshots<'a, S>(
    db: impl Into<Database>,
    snapshots: &[S],
) -> Result<IngestOutcome>
where
    S: Into<SnapshotToStore<'a>> + Copy,
{
    let db = db.into();
    let mut outcome = IngestOutcome::default();
    // Duplicates inside one batch (a redelivery racing the original).
    let mut unique: BTreeMap<(&str, Uuid, u64), SnapshotToStore<'a>> = BTreeMap::new();
    for &s in snapshots {
        let s: SnapshotToStore<'a> = s.into();
        let snapshot = s.snapshot;
        if unique
            .insert(
                (
                    snapshot.agent_id.as_str(),
                    snapshot.profile_id,
                    snapshot.sequence,
                ),
                s,
            )
            .is_some()
        {
            outcome.duplicates += 1;
        }
    }
    let snapshots: Vec<SnapshotToStore<'a>> = unique.into_values().collect();
    if snapshots.is_empty() {
        return Ok(outcome);
    }

    let started = std::time::Instant::now();
    let written: Written = on_backend!(db, write_batch(&snapshots))?;
    outcome.foreign = written.foreign;
    outcome.duplicates += written.kept - written.stored.len();
    outcome.stored = written.stored.len();
    outcome.samples = snapshots
        .iter()
        .filter(|s| written.stored.contains(&key(s)))
        .map(|s| s.total_samples())
        .fold(0u64, u64::saturating_add);
    tracing::debug!(
        snapshots = snapshots.len(),
        write_ms = started.elapsed().as_secs_f64() * 1000.0,
        "batch written"
    );
    Ok(outcome)
}

/// What one backend's transaction did with a batch of distinct snapshots.
struct Written {
    /// Refused: their profiles belong to other agents.
    foreign: Vec<ForeignSnapshot>,
    /// How many were not refused.
    kept: usize,
    /// The keys of those this transaction inserted; the other kept ones
    /// were stored before.
    stored: HashSet<SnapshotKey>,
}

/// A window's unique key: agent, profile, sequence.
type SnapshotKey = (String, Uuid, i64);

fn key(s: &Snapshot) -> SnapshotKey {
    // Sequences beyond i64 are refused by `Window::of` before any insert.
    (
        s.agent_id.clone(),
        s.profile_id,
        i64::try_from(s.sequence).unwrap_or(-1),
    )
}

/// One snapshots row, its values checked against the columns' types.
struct Window<'a> {
    profile_id: Uuid,
    agent_id: String,
    sequence: i64,
    host: String,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    event: &'static str,
    period: i64,
    frequency_hz: i32,
    samples: i64,
    /// What the target earned in the window, when the agent measured it.
    expected: Option<i64>,
    /// Samples lost, in [`LossReason::ALL`]'s order (the `lost_*` columns).
    lost: [i64; 5],
    /// The snapshot as the agent sent it (frames deduplicated, LZ4).
    block: Cow<'a, [u8]>,
}

impl<'a> Window<'a> {
    fn of(to_store: SnapshotToStore<'a>) -> Result<Window<'a>> {
        let s = to_store.snapshot;
        let to_time = |ms: i64| {
            DateTime::<Utc>::from_timestamp_millis(ms)
                .ok_or_else(|| StoreError::Corrupt(format!("timestamp {ms} ms out of range")))
        };
        Ok(Window {
            profile_id: s.profile_id,
            agent_id: s.agent_id.clone(),
            sequence: i64::try_from(s.sequence).map_err(|_| {
                StoreError::Corrupt(format!("sequence {} out of range", s.sequence))
            })?,
            host: s.host.clone(),
            start: to_time(s.window_start_ms)?,
            end: to_time(s.window_end_ms)?,
            event: s.event.as_str(),
            period: i64::try_from(s.period)
                .map_err(|_| StoreError::Corrupt(format!("period {} out of range", s.period)))?,
            frequency_hz: i32::try_from(s.frequency_hz).map_err(|_| {
                StoreError::Corrupt(format!("frequency {} out of range", s.frequency_hz))
            })?,
            samples: i64::try_from(s.total_samples()).unwrap_or(i64::MAX),
            // Bounded by the decoder (`MAX_WINDOW_SAMPLES`).
            expected: s
                .coverage
                .expected
                .map(|e| i64::try_from(e).unwrap_or(i64::MAX)),
            lost: LossReason::ALL
                .map(|reason| i64::try_from(s.coverage.lost.get(reason)).unwrap_or(i64::MAX)),
            block: to_store.block(),
        })
    }
}
