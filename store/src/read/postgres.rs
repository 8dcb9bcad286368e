//! A read's window headers in Postgres.

use chrono::{DateTime, Utc};
use sqlx::{PgPool, QueryBuilder};
use uuid::Uuid;

use super::{push_conditions, window_query, GroupRow, Read};
use crate::Result;

pub(super) async fn window_groups(pool: &PgPool, read: &Read) -> Result<Vec<GroupRow>> {
    let columns = "n.host, n.event, count(*)::bigint, array_agg(distinct n.profile_id)";
    let mut qb = window_query(read, columns, "n.host, n.event");
    Ok(qb.build_query_as().fetch_all(pool).await?)
}

/// The hours of the read's compacted windows of `members`.
pub(super) async fn rolled_hours(
    pool: &PgPool,
    read: &Read,
    members: &[Uuid],
) -> Result<Vec<DateTime<Utc>>> {
    let mut qb = QueryBuilder::new(
        "select distinct to_timestamp(floor(extract(epoch from n.window_start) / 3600) * 3600)
         from snapshots n where n.compacted and n.profile_id = any(",
    );
    qb.push_bind(members.to_vec()).push(") and");
    push_conditions(read, &mut qb);
    Ok(qb.build_query_scalar().fetch_all(pool).await?)
}
