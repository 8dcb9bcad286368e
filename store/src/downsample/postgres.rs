//! Downsampling in Postgres: arrays, `unnest` and `update … from`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use super::{merged_keys, Downsampled, Group};
use crate::blocks::postgres::rewrite_block;
use crate::Result;

/// Merges the windows that ended before `cutoff` into `bucket`-long
/// buckets, `batch` buckets per transaction.
pub(super) async fn downsample(
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

/// Merges each group's windows in its profile's block, as the rows are,
/// and in the rollups of its hour.
async fn merge_in_blocks(tx: &mut PgConnection, groups: &[Group]) -> Result<()> {
    let (by_profile, by_hour) = merged_keys(groups);
    for (profile_id, groups) in by_profile {
        rewrite_block(tx, profile_id, |p| p.merge_windows(&groups)).await?;
    }
    for (hour, groups) in by_hour {
        let hour = DateTime::<Utc>::from_timestamp_millis(hour).expect("an hour of a window");
        crate::rollups::postgres::rewrite(tx, &[hour], move |p| p.merge_windows(&groups)).await?;
    }
    Ok(())
}
