//! Re-analysis jobs in MySQL and MariaDB: a read after each write instead
//! of `returning`; the claim selects the job `for update skip locked`, then
//! updates it (MySQL refuses an update whose subquery reads its own table);
//! `'-infinity'` is DATETIME's smallest value; `<=>` is `is not distinct
//! from`.

use chrono::{DateTime, Utc};
use sqlx::{MySqlConnection, MySqlPool};
use uuid::Uuid;

use super::{Reanalysis, COLUMNS};
use crate::{Result, StoreError};

/// Where Postgres writes `'-infinity'`: a lease that has always run out.
const EXPIRED: &str = "'1000-01-01 00:00:00'";

/// `secs` in microseconds, for `interval ? microsecond`.
fn micros(secs: i64) -> i64 {
    secs.saturating_mul(1_000_000)
}

async fn read(conn: &mut MySqlConnection, id: Uuid) -> Result<Reanalysis> {
    let job: Option<Reanalysis> = sqlx::query_as(&format!(
        "select {COLUMNS} from rule_reanalyses where id = ?"
    ))
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    job.ok_or_else(|| StoreError::Corrupt(format!("re-analysis {id} vanished")))
}

/// Queues a re-analysis for `rule_id` inside the caller's transaction.
pub(crate) async fn queue(
    tx: &mut MySqlConnection,
    rule_id: &str,
    requested_by: &str,
) -> Result<Reanalysis> {
    let id = Uuid::new_v4();
    sqlx::query("insert into rule_reanalyses (id, rule_id, requested_by) values (?, ?, ?)")
        .bind(id)
        .bind(rule_id)
        .bind(requested_by)
        .execute(&mut *tx)
        .await?;
    read(tx, id).await
}

pub(super) async fn latest_reanalysis(
    pool: &MySqlPool,
    rule_id: &str,
) -> Result<Option<Reanalysis>> {
    Ok(sqlx::query_as(&format!(
        "select {COLUMNS} from rule_reanalyses where rule_id = ?
         order by requested_at desc limit 1"
    ))
    .bind(rule_id)
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn get_reanalysis(pool: &MySqlPool, id: Uuid) -> Result<Option<Reanalysis>> {
    Ok(sqlx::query_as(&format!(
        "select {COLUMNS} from rule_reanalyses where id = ?"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn claim_reanalysis(
    pool: &MySqlPool,
    lease_secs: i64,
) -> Result<Option<Reanalysis>> {
    let mut tx = pool.begin().await?;
    let open: Option<Uuid> = sqlx::query_scalar(
        "select id from rule_reanalyses
         where status in ('pending', 'running') and lease_until < now(6)
         order by requested_at limit 1 for update skip locked",
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(id) = open else {
        tx.commit().await?;
        return Ok(None);
    };
    sqlx::query(
        "update rule_reanalyses r set
             r.status = 'running',
             r.lease_until = now(6) + interval ? microsecond,
             r.started_at = coalesce(r.started_at, now(6)),
             r.profiles_total = coalesce(r.profiles_total,
                 (select count(*) from profiles p where p.created_at <= r.requested_at))
         where r.id = ?",
    )
    .bind(micros(lease_secs))
    .bind(id)
    .execute(&mut *tx)
    .await?;
    let job = read(&mut tx, id).await?;
    tx.commit().await?;
    Ok(Some(job))
}

pub(super) async fn reanalysis_batch(
    pool: &MySqlPool,
    job: &Reanalysis,
    limit: i64,
) -> Result<Vec<(Uuid, DateTime<Utc>)>> {
    Ok(sqlx::query_as(
        "select id, created_at from profiles
         where created_at <= ?
           and (? is null or created_at > ? or (created_at = ? and id > ?))
         order by created_at, id limit ?",
    )
    .bind(job.requested_at)
    .bind(job.cursor_created_at)
    .bind(job.cursor_created_at)
    .bind(job.cursor_created_at)
    .bind(job.cursor_id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

pub(super) async fn record_reanalysis_progress(
    pool: &MySqlPool,
    job: &Reanalysis,
    last: (Uuid, DateTime<Utc>),
    evaluated: i64,
    lease_secs: i64,
) -> Result<bool> {
    // sqlx sets CLIENT_FOUND_ROWS, so a matched row counts 1 even if no
    // column changed.
    Ok(sqlx::query(
        "update rule_reanalyses set
             cursor_id = ?, cursor_created_at = ?, profiles_done = profiles_done + ?,
             lease_until = now(6) + interval ? microsecond
         where id = ? and status = 'running'
           and cursor_id <=> ? and cursor_created_at <=> ?",
    )
    .bind(last.0)
    .bind(last.1)
    .bind(evaluated)
    .bind(micros(lease_secs))
    .bind(job.id)
    .bind(job.cursor_id)
    .bind(job.cursor_created_at)
    .execute(pool)
    .await?
    .rows_affected()
        == 1)
}

pub(super) async fn release_reanalysis(pool: &MySqlPool, job: &Reanalysis) -> Result<()> {
    sqlx::query(&format!(
        "update rule_reanalyses set lease_until = {EXPIRED}
         where id = ? and status = 'running' and cursor_id <=> ?"
    ))
    .bind(job.id)
    .bind(job.cursor_id)
    .execute(pool)
    .await?;
    Ok(())
}

pub(super) async fn finish_reanalysis(
    pool: &MySqlPool,
    id: Uuid,
    error: Option<&str>,
) -> Result<()> {
    sqlx::query(&format!(
        "update rule_reanalyses set
             status = case when ? is null then 'finished' else 'failed' end,
             error = ?, finished_at = now(6), lease_until = {EXPIRED}
         where id = ?"
    ))
    .bind(error)
    .bind(error)
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}
