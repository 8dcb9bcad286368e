//! Downsampling: old fine windows merged into coarse buckets, so long
//! ranges read fewer rows (perfGenie keeps 10-minute aggregates the same
//! way).
//!
//! Windows not merged yet that ended before a cutoff (so a run reads
//! only what earlier runs left) are grouped per profile, agent,
//! host, event, period and sampling frequency and per bucket of their start
//! time (e.g. 10 minutes). Each group of two or more becomes one snapshot:
//! the group's first row is kept, its window widened to the group's span,
//! and in the profile's block the windows become one, their samples summed
//! per (stack, thread), so every total a query computes stays exactly the
//! same. Thread names are kept per thread (the latest name when a thread
//! was renamed within the bucket), and `merged_windows` counts the agent
//! windows a row holds. Only compacted windows are merged (the others are
//! compacted once their profile ends).
//!
//! Each run merges `batch` groups per transaction; the rows are locked
//! first, so a concurrent retention pass or a second downsampler cannot
//! merge or delete them halfway. The kept row keeps its (agent, profile,
//! sequence) key, the others' keys are freed: a copy of one of those old
//! windows redelivered from Kafka would be stored again, so the cutoff
//! must lie far beyond how long a message can stay uncommitted (minutes),
//! which a cutoff in days does.
//!
//! `postgres.rs` and `mysql.rs` hold each backend's statements.

mod mysql;
mod postgres;

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use odp_profile::windows::WindowKey;
use uuid::Uuid;

use crate::database::{on_backend, Database};
use crate::Result;

/// What [`downsample`] merged.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Downsampled {
    /// Coarse rows written (one per merged group).
    pub buckets: u64,
    /// Fine rows merged away (not counting the kept ones).
    pub snapshots_merged: u64,
}

/// Merges the windows that ended before `cutoff` into `bucket`-long
/// buckets, `batch` buckets per transaction.
pub async fn downsample(
    db: impl Into<Database>,
    cutoff: DateTime<Utc>,
    bucket: Duration,
    batch: u32,
) -> Result<Downsampled> {
    let db = db.into();
    on_backend!(db, downsample(cutoff, bucket, batch))
}

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
