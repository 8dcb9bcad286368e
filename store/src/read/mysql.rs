//! A read's window headers in MySQL and MariaDB: `in (?, …)` lists, and
//! per-profile counts grouped in Rust where Postgres has `array_agg`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::{MySqlPool, QueryBuilder};
use uuid::Uuid;

use super::{push_conditions, window_query, GroupRow, Read};
use crate::database::push_in_list;
use crate::sql::mysql_lists::IN_LIST_CHUNK;
use crate::Result;

pub(super) async fn window_groups(pool: &MySqlPool, read: &Read) -> Result<Vec<GroupRow>> {
    let group_by = "n.host, n.event, n.profile_id";
    let mut qb = window_query(read, &format!("{group_by}, count(*)"), group_by);
    let rows: Vec<(String, String, Uuid, i64)> = qb.build_query_as().fetch_all(pool).await?;
    let mut groups: BTreeMap<(String, String), (i64, Vec<Uuid>)> = BTreeMap::new();
    for (host, event, profile_id, windows) in rows {
        let group = groups.entry((host, event)).or_default();
        group.0 += windows;
        group.1.push(profile_id);
    }
    Ok(groups
        .into_iter()
        .map(|((host, event), (windows, profiles))| (host, event, windows, profiles))
        .collect())
}

/// The hours of the read's compacted windows of `members`.
pub(super) async fn rolled_hours(
    pool: &MySqlPool,
    read: &Read,
    members: &[Uuid],
) -> Result<Vec<DateTime<Utc>>> {
    let mut hours = Vec::new();
    for chunk in members.chunks(IN_LIST_CHUNK) {
        // `from_unixtime` and `unix_timestamp` use the session's zone,
        // which sqlx sets to UTC.
        let mut qb = QueryBuilder::new(
            "select distinct from_unixtime(floor(unix_timestamp(n.window_start) / 3600) * 3600)
             from snapshots n where n.compacted and n.profile_id in ",
        );
        push_in_list(&mut qb, chunk.iter());
        qb.push(" and");
        push_conditions(read, &mut qb);
        let rows: Vec<DateTime<Utc>> = qb.build_query_scalar().fetch_all(pool).await?;
        hours.extend(rows);
    }
    hours.sort_unstable();
    hours.dedup();
    Ok(hours)
}
