//! A read's window headers in Postgres.

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use super::{GroupRow, Read, ReadScope};
use crate::Result;

pub(super) async fn window_groups(pool: &PgPool, read: &Read) -> Result<Vec<GroupRow>> {
    let mut qb = QueryBuilder::new(
        "select n.host, n.event, count(*)::bigint, array_agg(distinct n.profile_id)
         from snapshots n where",
    );
    push_conditions(read, &mut qb);
    if let Some(event) = read.event {
        qb.push(" and n.event = ").push_bind(event.as_str());
    }
    qb.push(" group by n.host, n.event");
    Ok(qb.build_query_as().fetch_all(pool).await?)
}

/// Which of `ids` are rolled up.
pub(super) async fn rolled_members(pool: &PgPool, ids: &[Uuid]) -> Result<Vec<Uuid>> {
    Ok(sqlx::query_scalar(
        "select profile_id from profile_blocks where profile_id = any($1) and rollup = 'rolled'",
    )
    .bind(ids)
    .fetch_all(pool)
    .await?)
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

/// The bytes of `service`'s rollups of `hours` and of `members`' blocks.
pub(super) async fn block_bytes(
    pool: &PgPool,
    service: &str,
    hours: &[DateTime<Utc>],
    members: &[Uuid],
) -> Result<(i64, i64)> {
    let (rollups, blocks): (Option<i64>, Option<i64>) = sqlx::query_as(
        "select (select sum(octet_length(block))::bigint from service_rollups
                 where service = $1 and hour = any($2)),
                (select sum(octet_length(block))::bigint from profile_blocks
                 where profile_id = any($3))",
    )
    .bind(service)
    .bind(hours)
    .bind(members)
    .fetch_one(pool)
    .await?;
    Ok((rollups.unwrap_or(0), blocks.unwrap_or(0)))
}

/// Appends the conditions on windows (aliased `n`) after a `where`.
fn push_conditions(read: &Read, qb: &mut QueryBuilder<'_, Postgres>) {
    match &read.scope {
        ReadScope::Profile(id) => {
            qb.push(" n.profile_id = ").push_bind(*id);
        }
        ReadScope::Service { service, hosts } => {
            qb.push(" n.profile_id in (select id from profiles where service = ")
                .push_bind(service.clone())
                .push(")");
            if !hosts.is_empty() {
                qb.push(" and n.host = any(")
                    .push_bind(hosts.clone())
                    .push(")");
            }
        }
    }
    if let Some(from) = read.from {
        qb.push(" and n.window_end > ").push_bind(from);
    }
    if let Some(to) = read.to {
        qb.push(" and n.window_start < ").push_bind(to);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::Read;
    use chrono::DateTime;
    use uuid::Uuid;

    fn sql(read: &Read) -> String {
        let mut qb = QueryBuilder::new("select 1 from snapshots n where");
        push_conditions(read, &mut qb);
        qb.sql().to_owned()
    }

    #[test]
    fn service_scope_filters_hosts_only_when_given() {
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let mut read = Read {
            scope: ReadScope::Service {
                service: "checkout".into(),
                hosts: vec![],
            },
            from: Some(at),
            to: Some(at),
            ..Read::profile(Uuid::nil())
        };
        assert_eq!(
            sql(&read),
            "select 1 from snapshots n where n.profile_id in (select id from profiles \
             where service = $1) and n.window_end > $2 and n.window_start < $3"
        );
        read.scope = ReadScope::Service {
            service: "checkout".into(),
            hosts: vec!["h-1".into()],
        };
        read.from = None;
        read.to = None;
        assert!(
            sql(&read).ends_with("and n.host = any($2)"),
            "{}",
            sql(&read)
        );
        assert_eq!(
            sql(&Read::profile(Uuid::nil())),
            "select 1 from snapshots n where n.profile_id = $1"
        );
    }
}
