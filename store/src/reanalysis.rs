//! Re-analysis jobs: after an admin creates or changes a rule, the rules are
//! run again over every profile stored before the change.
//!
//! The api-server queues a job in the same transaction as the rule change
//! ([`crate::create_user_rule`], [`crate::update_user_rule`]); pipeline
//! workers claim open jobs with a lease and walk the profiles in
//! `(created_at, id)` order, recording a cursor and a count after each
//! batch, so progress is visible and a job survives its worker.

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

pub use odp_api_types::ReanalysisStatus;

use crate::columns::Text;
use crate::Result;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Reanalysis {
    pub id: Uuid,
    pub rule_id: String,
    pub requested_by: String,
    pub requested_at: DateTime<Utc>,
    #[sqlx(try_from = "Text<ReanalysisStatus>")]
    pub status: ReanalysisStatus,
    /// Profiles to evaluate, known once a worker starts the job.
    pub profiles_total: Option<i64>,
    pub profiles_done: i64,
    pub cursor_created_at: Option<DateTime<Utc>>,
    pub cursor_id: Option<Uuid>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
}

/// The job as the API shows it: without the worker's cursor.
impl From<Reanalysis> for odp_api_types::Reanalysis {
    fn from(job: Reanalysis) -> Self {
        odp_api_types::Reanalysis {
            id: job.id,
            rule_id: job.rule_id,
            requested_by: job.requested_by,
            requested_at: job.requested_at,
            status: job.status,
            profiles_total: job.profiles_total,
            profiles_done: job.profiles_done,
            started_at: job.started_at,
            finished_at: job.finished_at,
            error: job.error,
        }
    }
}

const COLUMNS: &str = "id, rule_id, requested_by, requested_at, status, profiles_total,
                       profiles_done, cursor_created_at, cursor_id, started_at, finished_at,
                       error";

/// Queues a re-analysis for `rule_id` inside the caller's transaction.
pub(crate) async fn queue(
    tx: &mut Transaction<'_, Postgres>,
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
    .fetch_one(&mut **tx)
    .await?)
}

/// The most recent re-analysis of a rule, if it ever had one.
pub async fn latest_reanalysis(pool: &PgPool, rule_id: &str) -> Result<Option<Reanalysis>> {
    Ok(sqlx::query_as(&format!(
        "select {COLUMNS} from rule_reanalyses where rule_id = $1
         order by requested_at desc limit 1"
    ))
    .bind(rule_id)
    .fetch_optional(pool)
    .await?)
}

pub async fn get_reanalysis(pool: &PgPool, id: Uuid) -> Result<Option<Reanalysis>> {
    Ok(sqlx::query_as(&format!(
        "select {COLUMNS} from rule_reanalyses where id = $1"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?)
}

/// Takes the oldest open job nobody holds, leasing it for `lease_secs`;
/// counts its profiles when it starts.
pub async fn claim_reanalysis(pool: &PgPool, lease_secs: i64) -> Result<Option<Reanalysis>> {
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

/// The next profiles of the job after its cursor, oldest first.
pub async fn reanalysis_batch(
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

/// Moves the job's cursor past `evaluated` profiles ending at `last` and
/// renews its lease. `false` when the job is no longer this worker's (its
/// lease ran out and another worker took it).
pub async fn record_reanalysis_progress(
    pool: &PgPool,
    job: &mut Reanalysis,
    last: (Uuid, DateTime<Utc>),
    evaluated: i64,
    lease_secs: i64,
) -> Result<bool> {
    let moved = sqlx::query(
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
        == 1;
    if moved {
        job.cursor_id = Some(last.0);
        job.cursor_created_at = Some(last.1);
        job.profiles_done += evaluated;
    }
    Ok(moved)
}

/// Gives a job back (its worker is stopping) so another takes it at once.
pub async fn release_reanalysis(pool: &PgPool, job: &Reanalysis) -> Result<()> {
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

/// Ends the job: `error` makes it `failed`.
pub async fn finish_reanalysis(pool: &PgPool, id: Uuid, error: Option<&str>) -> Result<()> {
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
