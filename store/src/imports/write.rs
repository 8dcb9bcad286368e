//! The one transaction that stores an imported profile: its profile row
//! first (a retry stops there, on the primary key, before writing
//! anything), its place in the detection queue, its window's header row
//! and its profile block. The header row is what an agent's window is
//! once compacted (block null, `compacted`): reads count windows, hosts
//! and events from it and the timeline its samples and coverage, while
//! the samples are in the block, whose rollup is pending like any
//! compacted profile's.

use chrono::{DateTime, Utc};
use odp_core::coverage::LossReason;
use odp_core::{Snapshot, Target};
use odp_profile::Profile;

use super::ImportedMeta;
use crate::database::Database;
use crate::sql::{Arg, Sql, Tx};
use crate::{ProfileRow, Result, StoreError};

/// An imported profile's row and its window's, their values checked
/// against the columns' types.
pub(super) struct ImportedProfile<'a> {
    snapshot: &'a Snapshot,
    meta: ImportedMeta<'a>,
    target: Target,
    started: DateTime<Utc>,
    finished: DateTime<Utc>,
    sequence: i64,
    period: i64,
    frequency_hz: i32,
    samples: i64,
    expected: Option<i64>,
    /// Samples lost, in [`LossReason::ALL`]'s order (the `lost_*` columns).
    lost: [i64; 5],
}

impl<'a> ImportedProfile<'a> {
    pub(super) fn of(snapshot: &'a Snapshot, meta: ImportedMeta<'a>) -> Result<Self> {
        let s = snapshot;
        let to_time = |ms: i64| {
            DateTime::<Utc>::from_timestamp_millis(ms)
                .ok_or_else(|| StoreError::Corrupt(format!("timestamp {ms} ms out of range")))
        };
        let out_of_range = |what: &'static str, value: u64| {
            move |_| StoreError::Corrupt(format!("{what} {value} out of range"))
        };
        let saturated = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        Ok(ImportedProfile {
            snapshot,
            meta,
            target: Target::Imported(meta.format.to_owned()),
            started: to_time(s.window_start_ms)?,
            finished: to_time(s.window_end_ms)?,
            sequence: i64::try_from(s.sequence).map_err(out_of_range("sequence", s.sequence))?,
            period: i64::try_from(s.period).map_err(out_of_range("period", s.period))?,
            frequency_hz: i32::try_from(s.frequency_hz)
                .map_err(out_of_range("frequency", s.frequency_hz.into()))?,
            samples: saturated(s.total_samples()),
            expected: s.coverage.expected.map(saturated),
            lost: LossReason::ALL.map(|reason| saturated(s.coverage.lost.get(reason))),
        })
    }
}

/// What [`write()`] stored.
pub(super) enum Written {
    /// The profile, its window and its block.
    Whole(ProfileRow),
    /// Only the profile row (and its detection): windows of it were
    /// stored before, and are to be compacted.
    ProfileOnly(ProfileRow),
}

/// Stores `p` with `block` (its profile and encoding, from
/// `crate::blocks::window_block`) in one transaction. Fails with a unique
/// violation, having written nothing, when the profile exists.
pub(super) async fn write(
    db: &Database,
    p: &ImportedProfile<'_>,
    block: &(Profile, Vec<u8>),
) -> Result<Written> {
    let s = p.snapshot;
    let mut tx = db.begin().await?;
    insert_profile(&mut tx, p).await?;
    // No pipeline worker saw these samples: one runs the rules over them
    // (see `awaiting_detection`), as over an agent's profile.
    Sql::new("insert into detection_queue (profile_id) values ($1)")
        .bind(s.profile_id)
        .execute(&mut tx)
        .await?;
    let stored_before: Option<i64> =
        Sql::new("select id from snapshots where profile_id = $1 limit 1")
            .bind(s.profile_id)
            .fetch_value(&mut tx)
            .await?;
    if stored_before.is_none() {
        insert_window(&mut tx, p).await?;
        let (profile, bytes) = block;
        crate::blocks::save_block(&mut tx, s.profile_id, profile, bytes).await?;
    }
    let row = Sql::by_id("*", "profiles", s.profile_id)
        .fetch_one(&mut tx)
        .await?;
    tx.commit().await?;
    Ok(match stored_before {
        None => Written::Whole(row),
        Some(_) => Written::ProfileOnly(row),
    })
}

async fn insert_profile(tx: &mut Tx, p: &ImportedProfile<'_>) -> Result<()> {
    let s = p.snapshot;
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
    .execute(tx)
    .await?;
    Ok(())
}

/// The window's row as compaction leaves it: its samples are in the
/// profile block.
async fn insert_window(tx: &mut Tx, p: &ImportedProfile<'_>) -> Result<()> {
    let s = p.snapshot;
    let [overflow, throttled, paused, undiscovered, transport] = p.lost;
    Sql::new(
        "insert into snapshots (profile_id, agent_id, \"sequence\", host, window_start,
                                window_end, event, period, frequency_hz, samples, block,
                                compacted, expected_samples, lost_overflow, lost_throttled,
                                lost_paused, lost_undiscovered, lost_transport)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, null, true, $11, $12, $13, $14, $15,
                 $16)",
    )
    .bind(s.profile_id)
    .bind(&s.agent_id)
    .bind(p.sequence)
    .bind(&s.host)
    .bind(p.started)
    .bind(p.finished)
    .bind(s.event.as_str())
    .bind(p.period)
    .bind(p.frequency_hz)
    .bind(p.samples)
    .bind(p.expected)
    .bind(overflow)
    .bind(throttled)
    .bind(paused)
    .bind(undiscovered)
    .bind(transport)
    .execute(tx)
    .await?;
    Ok(())
}
