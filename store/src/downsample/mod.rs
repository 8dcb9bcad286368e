//! Downsampling: old fine windows merged into coarse buckets, so long
//! ranges read fewer rows (perfGenie keeps 10-minute aggregates the same
//! way), in tiers: [`downsample_tiers`] merges windows older than a week
//! into hours, say, and those older than a day into minutes.
//!
//! Windows that ended before a cutoff are grouped per profile, agent,
//! host, event, period and sampling frequency and per bucket of their start
//! time (e.g. 10 minutes). Each group of two or more becomes one snapshot:
//! the group's first row is kept, its window widened to the group's span,
//! and in the profile's block the windows become one, their samples summed
//! per (stack, thread), so every total a query computes stays exactly the
//! same. Thread names are kept per thread (the latest name when a thread
//! was renamed within the bucket), and `merged_windows` counts the agent
//! windows a row holds. Rows merged before take part like any other: a
//! coarser tier merges a finer tier's rows, and a window spooled in late
//! joins the row of its bucket. Only compacted windows are merged (the
//! others are compacted once their profile ends).
//!
//! A bucket divides an hour, so each group lies within one hour and one
//! service rollup (which holds an hour), and merges there as in the block.
//!
//! Each run merges `batch` groups per transaction; the rows are locked
//! first, so a concurrent retention pass or a second downsampler cannot
//! merge or delete them halfway. The kept row keeps its (agent, profile,
//! sequence) key, the others' keys are freed: a copy of one of those old
//! windows redelivered from Kafka would be stored again, so the cutoff
//! must lie far beyond how long a message can stay uncommitted (minutes),
//! which a cutoff in days does.
//!
//! `postgres.rs` and `mysql.rs` hold what differs: how the groups are
//! read (arrays, or ordered `group_concat` lists) and how the kept rows
//! are widened (one `update … from`, or one update per kept row).

mod mysql;
mod postgres;

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use odp_profile::windows::WindowKey;
use uuid::Uuid;

use crate::blocks::rewrite_block;
use crate::database::Database;
use crate::sql::mysql_lists::{execute_any, fetch_any};
use crate::sql::Tx;
use crate::{rollups, Result, StoreError};

/// What [`downsample`] merged.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Downsampled {
    /// Coarse rows written (one per merged group).
    pub buckets: u64,
    /// Fine rows merged away (not counting the kept ones).
    pub snapshots_merged: u64,
}

/// A tier of history: windows that ended before `cutoff` are kept in
/// `bucket`-long windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tier {
    pub cutoff: DateTime<Utc>,
    pub bucket: Duration,
}

/// Whether windows can be merged into `bucket`s: whole seconds that
/// divide an hour (see the module documentation).
pub fn bucket_fits_an_hour(bucket: Duration) -> bool {
    let secs = bucket.as_secs();
    bucket.subsec_nanos() == 0 && secs > 0 && 3600 % secs == 0
}

/// Merges windows into each of `tiers`, coarsest first, so a window old
/// enough for an hour is not first merged into minutes.
pub async fn downsample_tiers(
    db: impl Into<Database>,
    tiers: &[Tier],
    batch: u32,
) -> Result<Downsampled> {
    let db: Database = db.into();
    let mut tiers = tiers.to_vec();
    tiers.sort_by_key(|t| std::cmp::Reverse(t.bucket));
    let mut done = Downsampled::default();
    for tier in tiers {
        let one = downsample(&db, tier.cutoff, tier.bucket, batch).await?;
        done.buckets += one.buckets;
        done.snapshots_merged += one.snapshots_merged;
    }
    Ok(done)
}

/// Merges the windows that ended before `cutoff` into `bucket`-long
/// buckets, `batch` buckets per transaction. A bucket must divide an hour
/// ([`bucket_fits_an_hour`]).
pub async fn downsample(
    db: impl Into<Database>,
    cutoff: DateTime<Utc>,
    bucket: Duration,
    batch: u32,
) -> Result<Downsampled> {
    if !bucket_fits_an_hour(bucket) {
        return Err(StoreError::Invalid(format!(
            "a downsampling bucket divides an hour in whole seconds; {} s does not",
            bucket.as_secs_f64()
        )));
    }
    let db: Database = db.into();
    let mut done = Downsampled::default();
    let bucket_secs = bucket.as_secs_f64();
    loop {
        // `read committed` on MySQL: its rollup rewrite locks only the
        // hours' rows.
        let mut tx = rollups::begin_rewrite(&db).await?;
        // Only compacted windows: their samples are in the profile block,
        // which is rewritten below.
        let groups = match &mut tx {
            Tx::Postgres(tx) => postgres::groups(tx, cutoff, bucket_secs, batch).await?,
            Tx::MySql(tx) => mysql::groups(tx, cutoff, bucket_secs, batch).await?,
        };
        if groups.is_empty() {
            return Ok(done);
        }
        let fine: Vec<i64> = groups.iter().flat_map(|g| g.0.iter().copied()).collect();
        // MySQL widens the kept rows from these spans; Postgres reads
        // them again in its `update … from`.
        let locked: Vec<Span> = fetch_any(
            &mut tx,
            "select id, window_start, window_end, samples, merged_windows
             from snapshots where id = any($1) for update",
            &fine,
        )
        .await?;
        if locked.len() != fine.len() {
            // Some rows went (retention) between reading and locking: read
            // the groups again.
            match tx {
                Tx::Postgres(tx) => tx.rollback().await?,
                Tx::MySql(tx) => tx.rollback().await?,
            }
            continue;
        }
        merge_in_blocks(&mut tx, &groups).await?;
        match &mut tx {
            Tx::Postgres(tx) => postgres::widen(tx, &groups).await?,
            Tx::MySql(tx) => mysql::widen(tx, &groups, locked).await?,
        }
        let merged_away: Vec<i64> = groups
            .iter()
            .flat_map(|g| g.0[1..].iter().copied())
            .collect();
        execute_any(
            &mut tx,
            "delete from snapshots where id = any($1)",
            &merged_away,
        )
        .await?;
        tx.commit().await?;
        done.buckets += groups.len() as u64;
        done.snapshots_merged += merged_away.len() as u64;
        tracing::debug!(
            buckets = groups.len(),
            merged = merged_away.len(),
            "windows downsampled"
        );
    }
}

/// A locked window: id, start, end, samples, merged windows.
type Span = (i64, DateTime<Utc>, DateTime<Utc>, i64, i32);

/// A group's window ids (the one kept first), profile, agent, the
/// windows' sequence numbers and the first one's start.
type Group = (Vec<i64>, Uuid, String, Vec<i64>, DateTime<Utc>);

/// Per profile and per hour (unix ms), the keys of each group's windows
/// to merge into one (a bucket that divides an hour keeps each group
/// within one).
type MergedKeys = (
    BTreeMap<Uuid, Vec<Vec<WindowKey>>>,
    BTreeMap<i64, Vec<Vec<WindowKey>>>,
);

fn merged_keys(groups: &[Group]) -> MergedKeys {
    let mut by_profile: BTreeMap<Uuid, Vec<Vec<WindowKey>>> = BTreeMap::new();
    let mut by_hour: BTreeMap<i64, Vec<Vec<WindowKey>>> = BTreeMap::new();
    for (_, profile_id, agent_id, sequences, start) in groups {
        let keys: Vec<WindowKey> = sequences
            .iter()
            .map(|&s| (*profile_id, agent_id.clone(), s as u64))
            .collect();
        let hour = crate::rollups::hour_of(start.timestamp_millis());
        by_hour.entry(hour).or_default().push(keys.clone());
        by_profile.entry(*profile_id).or_default().push(keys);
    }
    (by_profile, by_hour)
}

/// Merges each group's windows in its profile's block, as the rows are,
/// and in the rollups of its hour.
async fn merge_in_blocks(tx: &mut Tx, groups: &[Group]) -> Result<()> {
    let (by_profile, by_hour) = merged_keys(groups);
    for (profile_id, groups) in by_profile {
        rewrite_block(tx, profile_id, |p| p.merge_windows(&groups)).await?;
    }
    for (hour, groups) in by_hour {
        let hour = DateTime::<Utc>::from_timestamp_millis(hour).expect("an hour of a window");
        rollups::rewrite(tx, &[hour], move |p| p.merge_windows(&groups)).await?;
    }
    Ok(())
}
