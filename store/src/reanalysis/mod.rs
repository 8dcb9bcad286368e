//! Re-analysis jobs: after an admin creates or changes a rule, the rules are
//! run again over every profile stored before the change.
//!
//! The api-server queues a job in the same transaction as the rule change
//! ([`crate::create_user_rule`], [`crate::update_user_rule`]); pipeline
//! workers claim open jobs with a lease and walk the profiles in
//! `(created_at, id)` order, recording a cursor and a count after each
//! batch, so progress is visible and a job survives its worker.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

pub use odp_core::domain::ReanalysisStatus;

use crate::columns::Text;
use crate::database::{Backend, Database};
use crate::sql::{On, Sql, Table, Tx};
use crate::Result;

mod mysql;
mod postgres;

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

const REANALYSES: Table = Table {
    name: "rule_reanalyses",
    columns: "id, rule_id, requested_by, requested_at, status, profiles_total, profiles_done,
              cursor_created_at, cursor_id, started_at, finished_at, error",
};

/// A lease that has always run out, as `backend` writes it.
fn expired(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => postgres::EXPIRED,
        Backend::MySql => mysql::EXPIRED,
    }
}

/// A lease of `secs` seconds (none when negative: it has run out).
fn lease(secs: i64) -> Duration {
    Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

async fn read<'a>(on: impl Into<On<'a>>, id: Uuid) -> Result<Option<Reanalysis>> {
    REANALYSES.get(on, id).await
}

/// The job this transaction just wrote.
async fn written(tx: &mut Tx, id: Uuid) -> Result<Reanalysis> {
    crate::written(read(tx, id).await?, || format!("re-analysis {id}"))
}

/// Queues a re-analysis for `rule_id` inside the caller's transaction.
pub(crate) async fn queue(tx: &mut Tx, rule_id: &str, requested_by: &str) -> Result<Reanalysis> {
    let id = Uuid::new_v4();
    Sql::new("insert into rule_reanalyses (id, rule_id, requested_by) values ($1, $2, $3)")
        .bind(id)
        .bind(rule_id)
        .bind(requested_by)
        .execute(&mut *tx)
        .await?;
    written(tx, id).await
}

/// The most recent re-analysis of a rule, if it ever had one.
pub async fn latest_reanalysis(
    db: impl Into<Database>,
    rule_id: &str,
) -> Result<Option<Reanalysis>> {
    REANALYSES
        .select("where rule_id = $1 order by requested_at desc limit 1")
        .bind(rule_id)
        .fetch_optional(&db.into())
        .await
}

/// The job, if there is one with that id.
pub async fn get_reanalysis(db: impl Into<Database>, id: Uuid) -> Result<Option<Reanalysis>> {
    read(&db.into(), id).await
}

/// Takes the oldest open job nobody holds, leasing it for `lease_secs`;
/// counts its profiles when it starts. The job is chosen, then updated
/// (MySQL refuses an update whose subquery reads its own table), in one
/// transaction.
pub async fn claim_reanalysis(
    db: impl Into<Database>,
    lease_secs: i64,
) -> Result<Option<Reanalysis>> {
    let mut tx = db.into().begin().await?;
    let open: Option<Uuid> = Sql::new(
        "select id from rule_reanalyses
         where status in ('pending', 'running') and lease_until < {now}
         order by requested_at limit 1 for update skip locked",
    )
    .fetch_value(&mut tx)
    .await?;
    let Some(id) = open else {
        tx.commit().await?;
        return Ok(None);
    };
    Sql::new(
        "update rule_reanalyses r set
             status = 'running',
             lease_until = {now} + $1,
             started_at = coalesce(r.started_at, {now}),
             profiles_total = coalesce(r.profiles_total,
                 (select count(*) from profiles p where p.created_at <= r.requested_at))
         where r.id = $2",
    )
    .bind(lease(lease_secs))
    .bind(id)
    .execute(&mut tx)
    .await?;
    let job = written(&mut tx, id).await?;
    tx.commit().await?;
    Ok(Some(job))
}

/// The next profiles of the job after its cursor, oldest first.
pub async fn reanalysis_batch(
    db: impl Into<Database>,
    job: &Reanalysis,
    limit: i64,
) -> Result<Vec<(Uuid, DateTime<Utc>)>> {
    let batch = match job.cursor_created_at {
        None => Sql::new(
            "select id, created_at from profiles
             where created_at <= $1
             order by created_at, id limit $2",
        )
        .bind(job.requested_at)
        .bind(limit),
        // After (cursor_created_at, cursor_id), written so that both
        // backends start the index scan at the cursor.
        Some(after) => Sql::new(
            "select id, created_at from profiles
             where created_at <= $1
               and created_at >= $2 and (created_at > $2 or id > $3)
             order by created_at, id limit $4",
        )
        .bind(job.requested_at)
        .bind(after)
        .bind(job.cursor_id)
        .bind(limit),
    };
    batch.fetch_all(&db.into()).await
}

/// Moves the job's cursor past `evaluated` profiles ending at `last` and
/// renews its lease. `false` when the job is no longer this worker's (its
/// lease ran out and another worker took it).
pub async fn record_reanalysis_progress(
    db: impl Into<Database>,
    job: &mut Reanalysis,
    last: (Uuid, DateTime<Utc>),
    evaluated: i64,
    lease_secs: i64,
) -> Result<bool> {
    // MySQL counts a matched row even when nothing changed
    // (CLIENT_FOUND_ROWS), as Postgres does.
    let moved = Sql::new(
        "update rule_reanalyses set
             cursor_id = $2, cursor_created_at = $3, profiles_done = profiles_done + $4,
             lease_until = {now} + $5
         where id = $1 and status = 'running'
           and (cursor_id = $6 or (cursor_id is null and $6 is null))
           and (cursor_created_at = $7 or (cursor_created_at is null and $7 is null))",
    )
    .bind(job.id)
    .bind(last.0)
    .bind(last.1)
    .bind(evaluated)
    .bind(lease(lease_secs))
    .bind(job.cursor_id)
    .bind(job.cursor_created_at)
    .execute(&db.into())
    .await?
        == 1;
    if moved {
        job.cursor_id = Some(last.0);
        job.cursor_created_at = Some(last.1);
        job.profiles_done += evaluated;
    }
    Ok(moved)
}

/// Gives a job back (its worker is stopping) so another takes it at once.
pub async fn release_reanalysis(db: impl Into<Database>, job: &Reanalysis) -> Result<()> {
    let db = db.into();
    Sql::new(format!(
        "update rule_reanalyses set lease_until = {expired}
         where id = $1 and status = 'running'
           and (cursor_id = $2 or (cursor_id is null and $2 is null))",
        expired = expired(db.backend()),
    ))
    .bind(job.id)
    .bind(job.cursor_id)
    .execute(&db)
    .await?;
    Ok(())
}

/// Ends the job: `error` makes it `failed`.
pub async fn finish_reanalysis(
    db: impl Into<Database>,
    id: Uuid,
    error: Option<&str>,
) -> Result<()> {
    let db = db.into();
    Sql::new(format!(
        "update rule_reanalyses set
             status = case when $2 is null then 'finished' else 'failed' end,
             error = $2, finished_at = {{now}}, lease_until = {expired}
         where id = $1",
        expired = expired(db.backend()),
    ))
    .bind(id)
    .bind(error)
    .execute(&db)
    .await?;
    Ok(())
}
