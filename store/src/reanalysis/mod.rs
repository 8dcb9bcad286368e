//! Re-analysis jobs: after an admin creates or changes a rule, the rules are
//! run again over every profile stored before the change.
//!
//! The api-server queues a job in the same transaction as the rule change
//! ([`crate::create_user_rule`], [`crate::update_user_rule`]); pipeline
//! workers claim open jobs with a lease and walk the profiles in
//! `(created_at, id)` order, recording a cursor and a count after each
//! batch, so progress is visible and a job survives its worker.

use chrono::{DateTime, Utc};
use uuid::Uuid;

pub use odp_api_types::ReanalysisStatus;

use crate::columns::Text;
use crate::database::{on_backend, Database};
use crate::Result;

pub(crate) mod mysql;
pub(crate) mod postgres;

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

/// The most recent re-analysis of a rule, if it ever had one.
pub async fn latest_reanalysis(
    db: impl Into<Database>,
    rule_id: &str,
) -> Result<Option<Reanalysis>> {
    let db = db.into();
    on_backend!(db, latest_reanalysis(rule_id))
}

/// The job, if there is one with that id.
pub async fn get_reanalysis(db: impl Into<Database>, id: Uuid) -> Result<Option<Reanalysis>> {
    let db = db.into();
    on_backend!(db, get_reanalysis(id))
}

/// Takes the oldest open job nobody holds, leasing it for `lease_secs`;
/// counts its profiles when it starts.
pub async fn claim_reanalysis(
    db: impl Into<Database>,
    lease_secs: i64,
) -> Result<Option<Reanalysis>> {
    let db = db.into();
    on_backend!(db, claim_reanalysis(lease_secs))
}

/// The next profiles of the job after its cursor, oldest first.
pub async fn reanalysis_batch(
    db: impl Into<Database>,
    job: &Reanalysis,
    limit: i64,
) -> Result<Vec<(Uuid, DateTime<Utc>)>> {
    let db = db.into();
    on_backend!(db, reanalysis_batch(job, limit))
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
    let db = db.into();
    let moved = on_backend!(
        db,
        record_reanalysis_progress(job, last, evaluated, lease_secs)
    )?;
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
    on_backend!(db, release_reanalysis(job))
}

/// Ends the job: `error` makes it `failed`.
pub async fn finish_reanalysis(
    db: impl Into<Database>,
    id: Uuid,
    error: Option<&str>,
) -> Result<()> {
    let db = db.into();
    on_backend!(db, finish_reanalysis(id, error))
}
