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

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use odp_profile::windows::WindowKey;
use sqlx::PgPool;
use uuid::Uuid;

use crate::blocks::postgres::rewrite_block;
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
    pool: &PgPool,
    cutoff: DateTime<Utc>,
    bucket: Duration,
    batch: u32,
) -> Result<Downsampled> {
    let mut done = Downsampled::default();
    let bucket_secs = bucket.as_secs_f64().max(1.0);
    loop {
        let mut tx = pool.begin().await?;
        // Each group's ids (the row to keep first), its profile and its
        // windows' sequence numbers. Only compacted windows: their samples
        // are in the profile block, which is rewritten below.
        let groups: Vec<Group> = sqlx::query_as(
            "select array_agg(id order by id), profile_id, agent_id,
                    array_agg(sequence order by id), min(window_start)
             from snapshots
             where window_end < $1 and merged_windows = 1 and compacted
             group by profile_id, agent_id, host, event, period, frequency_hz,
                      floor(extract(epoch from window_start) / $2)
             having count(*) > 1
             limit $3",
        )
        .bind(cutoff)
        .bind(bucket_secs)
        .bind(i64::from(batch))
        .fetch_all(&mut *tx)
        .await?;
        if groups.is_empty() {
            return Ok(done);
        }
        let (mut fine, mut keepers) = (Vec::new(), Vec::new());
        for (ids, ..) in &groups {
            for &id in ids {
                fine.push(id);
                keepers.push(ids[0]);
            }
        }
        let locked: Vec<i64> =
            sqlx::query_scalar("select id from snapshots where id = any($1) for update")
                .bind(&fine)
                .fetch_all(&mut *tx)
                .await?;
        if locked.len() != fine.len() {
            // Some rows went (retention) between reading and locking: read
            // the groups again.
            tx.rollback().await?;
            continue;
        }
        merge_in_blocks(&mut tx, &groups).await?;
        sqlx::query(
            "with map as (select * from unnest($1::bigint[], $2::bigint[]) as m(fine, keeper)),
             spans as (
                 select m.keeper, min(n.window_start) as window_start,
                        max(n.window_end) as window_end, sum(n.samples)::bigint as samples,
                        sum(n.merged_windows)::int as merged_windows
                 from map m join snapshots n on n.id = m.fine
                 group by m.keeper
             )
             update snapshots n
             set window_start = spans.window_start, window_end = spans.window_end,
                 samples = spans.samples, merged_windows = spans.merged_windows
             from spans where n.id = spans.keeper",
        )
        .bind(&fine)
        .bind(&keepers)
        .execute(&mut *tx)
        .await?;
        let merged_away: Vec<i64> = fine
            .iter()
            .zip(&keepers)
            .filter(|(f, k)| f != k)
            .map(|(f, _)| *f)
            .collect();
        sqlx::query("delete from snapshots where id = any($1)")
            .bind(&merged_away)
            .execute(&mut *tx)
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

/// A group's window ids (the one kept first), profile, agent, the
/// windows' sequence numbers and the first one's start.
type Group = (Vec<i64>, Uuid, String, Vec<i64>, DateTime<Utc>);

/// Merges each group's windows in its profile's block, as the rows are,
/// and in the rollups of its hour (a bucket that divides an hour keeps
/// each group within one).
async fn merge_in_blocks(tx: &mut sqlx::PgConnection, groups: &[Group]) -> Result<()> {
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
    for (profile_id, groups) in by_profile {
        rewrite_block(tx, profile_id, |p| p.merge_windows(&groups)).await?;
    }
    for (hour, groups) in by_hour {
        let hour = DateTime::<Utc>::from_timestamp_millis(hour).expect("an hour of a window");
        crate::rollups::postgres::rewrite(tx, &[hour], move |p| p.merge_windows(&groups)).await?;
    }
    Ok(())
}
