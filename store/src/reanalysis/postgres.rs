//! Re-analysis jobs in Postgres.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{Reanalysis, COLUMNS};
use crate::Result;

/// Queues a re-analysis for `rule_id` inside the caller's transaction.
pub(crate) async fn queue(
    tx: &mut PgConnection,
    rule_id: &str,
    requested_by: &str,
) -> Result<Reanalysis> {
    Ok(sqlx::query_as(&format!(
        "insert into rule_reanalyses (id, rule_id, requested_by) values ($1, $2, $3)
         returning {COLUMNS}"
    ))
    .bind(Uuid::new_v4())
    .bind(rule_id)
    .bind(requested_by)
    .fetch_one(&mut *tx)
    .await?)
}

pub(super) async fn latest_reanalysis(pool: &PgPool, rule_id: &str) -> Result<Option<Reanalysis>> {
    Ok(sqlx::query_as(&format!(
        "select {COLUMNS} from rule_reanalyses where rule_id = $1
         order by requested_at desc limit 1"
    ))
    .bind(rule_id)
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn get_reanalysis(pool: &PgPool, id: Uuid) -> Result<Option<Reanalysis>> {
    Ok(sqlx::query_as(&format!(
        "select {COLUMNS} from rule_reanalyses where id = $1"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn claim_reanalysis(pool: &PgPool, lease_secs: i64) -> Result<Option<Reanalysis>> {
    Ok(sqlx::query_as(&format!(
        "update rule_reanalyses r set
             status = 'running',
             lease_until = now() + make_interval(secs => $1),
             started_at = coalesce(r.started_at, now()),
             profiles_total = coalesce(r.profiles_total,
                 (select count(*) from profiles p where p.created_at <= r.requested_at))
         where r.id = (select id from rule_reanalyses
                       where status in ('pending', 'running') and lease_until < now()
                       order by requested_at limit 1 for update skip locked)
         returning {COLUMNS}"
    ))
    .bind(lease_secs as f64)
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn reanalysis_batch(
    pool: &PgPool,
    job: &Reanalysis,
    limit: i64,
) -> Result<Vec<(Uuid, DateTime<Utc>)>> {
    Ok(sqlx::query_as(
        "select id, created_at from profiles
         where created_at <= $1
           and ($2::timestamptz is null or (created_at, id) > ($2, $3))
         order by created_at, id limit $4",
    )
    .bind(job.requested_at)
    .bind(job.cursor_created_at)
    .bind(job.cursor_id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

pub(super) async fn record_reanalysis_progress(
    pool: &PgPool,
    job: &Reanalysis,
    last: (Uuid, DateTime<Utc>),
    evaluated: i64,
    lease_secs: i64,
) -> Result<bool> {
    Ok(sqlx::query(
        "update rule_reanalyses set
             cursor_id = $2, cursor_created_at = $3, profiles_done = profiles_done + $4,
             lease_until = now() + make_interval(secs => $5)
         where id = $1 and status = 'running'
           and cursor_id is not distinct from $6 and cursor_created_at is not distinct from $7",
    )
    .bind(job.id)
    .bind(last.0)
    .bind(last.1)
    .bind(evaluated)
    .bind(lease_secs as f64)
    .bind(job.cursor_id)
    .bind(job.cursor_created_at)
    .execute(pool)
    .await?
    .rows_affected()
        == 1)
}

pub(super) async fn release_reanalysis(pool: &PgPool, job: &Reanalysis) -> Result<()> {
    sqlx::query(
        "update rule_reanalyses set lease_until = '-infinity'
         where id = $1 and status = 'running' and cursor_id is not distinct from $2",
    )
    .bind(job.id)
    .bind(job.cursor_id)
    .execute(pool)
    .await?;
    Ok(())
}

pub(super) async fn finish_reanalysis(pool: &PgPool, id: Uuid, error: Option<&str>) -> Result<()> {
    sqlx::query(
        "update rule_reanalyses set
             status = case when $2::text is null then 'finished' else 'failed' end,
             error = $2, finished_at = now(), lease_until = '-infinity'
         where id = $1",
    )
    .bind(id)
    .bind(error)
    .execute(pool)
    .await?;
    Ok(())
}
