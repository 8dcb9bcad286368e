//! Downsampling in MySQL and MariaDB: the groups' ids and sequence
//! numbers come as ordered `group_concat` lists (MySQL's `JSON_ARRAYAGG`
//! cannot order), and the kept rows' spans, which Postgres computes in an
//! `update … from`, are computed in Rust from the locked rows and written
//! one kept row at a time.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{Connection, MySqlConnection, MySqlPool};
use uuid::Uuid;

use super::{merged_keys, Downsampled, Group};
use crate::blocks::mysql::{execute_in, fetch_in, rewrite_block};
use crate::{Result, StoreError};

/// A group as the server sends it: ids and sequences comma-separated.
type GroupRow = (String, Uuid, String, String, DateTime<Utc>);

fn numbers(list: &str) -> Result<Vec<i64>> {
    list.split(',')
        .map(|n| {
            n.parse()
                .map_err(|_| StoreError::Corrupt(format!("group list {list:?}")))
        })
        .collect()
}

pub(super) async fn downsample(
    pool: &MySqlPool,
    cutoff: DateTime<Utc>,
    bucket: Duration,
    batch: u32,
) -> Result<Downsampled> {
    let mut done = Downsampled::default();
    let bucket_secs = bucket.as_secs_f64().max(1.0);
    loop {
        // Read committed: its rollup rewrite locks only the hour's rows.
        let mut conn = pool.acquire().await?;
        crate::pool::mysql::read_committed(&mut conn).await?;
        let mut tx = conn.begin().await?;
        // MySQL cuts `group_concat` at 1024 bytes by default.
        sqlx::query("set session group_concat_max_len = 16777216")
            .execute(&mut *tx)
            .await?;
        let rows: Vec<GroupRow> = sqlx::query_as(
            "select cast(group_concat(id order by id) as char), profile_id, agent_id,
                    cast(group_concat(`sequence` order by id) as char), min(window_start)
             from snapshots
             where window_end < ? and merged_windows = 1 and compacted
             group by profile_id, agent_id, host, event, period, frequency_hz,
                      floor(unix_timestamp(window_start) / ?)
             having count(*) > 1
             limit ?",
        )
        .bind(cutoff)
        .bind(bucket_secs)
        .bind(i64::from(batch))
        .fetch_all(&mut *tx)
        .await?;
        if rows.is_empty() {
            return Ok(done);
        }
        let groups: Vec<Group> = rows
            .into_iter()
            .map(|(ids, profile, agent, sequences, start)| {
                Ok((numbers(&ids)?, profile, agent, numbers(&sequences)?, start))
            })
            .collect::<Result<_>>()?;
        let fine: Vec<i64> = groups.iter().flat_map(|g| g.0.iter().copied()).collect();
        let locked: Vec<Span> = fetch_in(
            &mut tx,
            "select id, window_start, window_end, samples, merged_windows
             from snapshots where id in ",
            &fine,
            " for update",
        )
        .await?;
        if locked.len() != fine.len() {
            // Some rows went (retention) between reading and locking: read
            // the groups again.
            tx.rollback().await?;
            continue;
        }
        merge_in_blocks(&mut tx, &groups).await?;
        let spans: BTreeMap<i64, Span> = locked.into_iter().map(|s| (s.0, s)).collect();
        for (ids, ..) in &groups {
            let members = ids.iter().map(|id| &spans[id]);
            let start = members.clone().map(|s| s.1).min().expect("a group");
            let end = members.clone().map(|s| s.2).max().expect("a group");
            let samples: i64 = members.clone().map(|s| s.3).sum();
            let merged: i32 = members.map(|s| s.4).sum();
            sqlx::query(
                "update snapshots set window_start = ?, window_end = ?, samples = ?,
                     merged_windows = ?
                 where id = ?",
            )
            .bind(start)
            .bind(end)
            .bind(samples)
            .bind(merged)
            .bind(ids[0])
            .execute(&mut *tx)
            .await?;
        }
        let merged_away: Vec<i64> = groups
            .iter()
            .flat_map(|g| g.0[1..].iter().copied())
            .collect();
        execute_in(
            &mut tx,
            "delete from snapshots where id in ",
            &merged_away,
            "",
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

/// Merges each group's windows in its profile's block, as the rows are,
/// and in the rollups of its hour.
async fn merge_in_blocks(tx: &mut MySqlConnection, groups: &[Group]) -> Result<()> {
    let (by_profile, by_hour) = merged_keys(groups);
    for (profile_id, groups) in by_profile {
        rewrite_block(tx, profile_id, |p| p.merge_windows(&groups)).await?;
    }
    for (hour, groups) in by_hour {
        let hour = DateTime::<Utc>::from_timestamp_millis(hour).expect("an hour of a window");
        crate::rollups::mysql::rewrite(tx, &[hour], move |p| p.merge_windows(&groups)).await?;
    }
    Ok(())
}
