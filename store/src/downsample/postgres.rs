//! Downsampling in Postgres: arrays, `unnest` and `update … from`.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::Group;
use crate::Result;

/// At most `batch` groups of two or more windows to merge, each with its
/// ids in order, so the row to keep comes first.
pub(super) async fn groups(
    tx: &mut PgConnection,
    cutoff: DateTime<Utc>,
    bucket_secs: f64,
    batch: u32,
) -> Result<Vec<Group>> {
    Ok(sqlx::query_as(
        "select array_agg(id order by id), profile_id, agent_id,
                array_agg(sequence order by id), min(window_start)
         from snapshots
         where window_end < $1 and compacted
         group by profile_id, agent_id, host, event, period, frequency_hz,
                  floor(extract(epoch from window_start) / $2)
         having count(*) > 1
         limit $3",
    )
    .bind(cutoff)
    .bind(bucket_secs)
    .bind(i64::from(batch))
    .fetch_all(tx)
    .await?)
}

/// Widens each group's kept row to the group's span, samples and merged
/// windows, in one statement.
pub(super) async fn widen(tx: &mut PgConnection, groups: &[Group]) -> Result<()> {
    let (mut fine, mut keepers) = (Vec::new(), Vec::new());
    for (ids, ..) in groups {
        for &id in ids {
            fine.push(id);
            keepers.push(ids[0]);
        }
    }
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
    .execute(tx)
    .await?;
    Ok(())
}
