//! Downsampling in MySQL and MariaDB: the groups' ids and sequence
//! numbers come as ordered `group_concat` lists (MySQL's `JSON_ARRAYAGG`
//! cannot order), and the kept rows' spans, which Postgres computes in an
//! `update … from`, are computed in Rust from the locked rows and written
//! one kept row at a time.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;
use uuid::Uuid;

use super::{Group, Span};
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

/// At most `batch` groups of two or more windows to merge, each with its
/// ids in order, so the row to keep comes first.
pub(super) async fn groups(
    tx: &mut MySqlConnection,
    cutoff: DateTime<Utc>,
    bucket_secs: f64,
    batch: u32,
) -> Result<Vec<Group>> {
    // MySQL cuts `group_concat` at 1024 bytes by default.
    sqlx::query("set session group_concat_max_len = 16777216")
        .execute(&mut *tx)
        .await?;
    let rows: Vec<GroupRow> = sqlx::query_as(
        "select cast(group_concat(id order by id) as char), profile_id, agent_id,
                cast(group_concat(`sequence` order by id) as char), min(window_start)
         from snapshots
         where window_end < ? and compacted
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
    rows.into_iter()
        .map(|(ids, profile, agent, sequences, start)| {
            Ok((numbers(&ids)?, profile, agent, numbers(&sequences)?, start))
        })
        .collect()
}

/// Widens each group's kept row to the group's span, samples and merged
/// windows, computed from the `locked` rows.
pub(super) async fn widen(
    tx: &mut MySqlConnection,
    groups: &[Group],
    locked: Vec<Span>,
) -> Result<()> {
    let spans: BTreeMap<i64, Span> = locked.into_iter().map(|s| (s.0, s)).collect();
    for (ids, ..) in groups {
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
    Ok(())
}
