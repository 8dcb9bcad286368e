//! The re-analysis job: when an admin creates or changes a rule, the
//! api-server queues a job and a pipeline worker runs the current rules
//! over every profile stored before the change, so past profiles show what
//! the rule finds (or stop showing what a disabled rule found).
//!
//! Jobs are claimed with a lease and walked in batches; each batch moves
//! the job's cursor and renews the lease, so the API shows progress and a
//! job whose worker died resumes on another worker where it stopped (one
//! that stops gives its job back at once).
//! Findings in past profiles are recorded without alerts.

use std::time::Duration;

use odp_store::Database;
use tokio::sync::watch;

use crate::detect::{evaluate_with, Alerting, DetectError, Detector};

/// How long a claimed job stays a worker's without progress.
const LEASE_SECS: i64 = 60;
/// Profiles evaluated between two progress records.
const BATCH: i64 = 50;
/// How often to look for a job when there is none.
const IDLE_POLL: Duration = Duration::from_secs(2);

/// Runs jobs until `stop` says so (or its sender is gone).
pub async fn run(
    pool: Database,
    detector: std::sync::Arc<Detector>,
    mut stop: watch::Receiver<bool>,
) {
    while !stopping(&stop) {
        let idle = match run_next(&pool, &detector, &stop).await {
            Ok(ran) => !ran,
            Err(e) => {
                tracing::warn!(error = %e, "rule re-analysis pass failed");
                true
            }
        };
        if idle {
            tokio::select! {
                _ = stop.changed() => {}
                _ = tokio::time::sleep(IDLE_POLL) => {}
            }
        }
    }
}

/// Claims the oldest open job and works on it until it is done, the worker
/// stops (the lease then lapses and the job resumes elsewhere) or another
/// worker takes it over. `false` when there was no job.
pub async fn run_next(
    pool: &Database,
    detector: &Detector,
    stop: &watch::Receiver<bool>,
) -> Result<bool, DetectError> {
    let Some(mut job) = odp_store::claim_reanalysis(pool, LEASE_SECS).await? else {
        return Ok(false);
    };
    tracing::info!(job = %job.id, rule = %job.rule_id, total = ?job.profiles_total, done = job.profiles_done, "rule re-analysis started");
    // The rules as they are now, the change included; this also refreshes
    // what this worker's live evaluation uses.
    detector.reload(pool).await?;
    let rules = detector.loaded_rules().await;
    while !stopping(stop) {
        let batch = odp_store::reanalysis_batch(pool, &job, BATCH).await?;
        let Some(&last) = batch.last() else {
            odp_store::finish_reanalysis(pool, job.id, None).await?;
            tracing::info!(job = %job.id, rule = %job.rule_id, profiles = job.profiles_done, "rule re-analysis finished");
            return Ok(true);
        };
        // A failure leaves the cursor where it was: the lease lapses and
        // the batch is evaluated again (evaluation is idempotent).
        for &(profile_id, _) in &batch {
            evaluate_with(pool, profile_id, &rules, Alerting::Off).await?;
        }
        let evaluated = batch.len() as i64;
        if !odp_store::record_reanalysis_progress(pool, &mut job, last, evaluated, LEASE_SECS)
            .await?
        {
            tracing::info!(job = %job.id, "re-analysis taken over by another worker");
            return Ok(true);
        }
    }
    odp_store::release_reanalysis(pool, &job).await?;
    Ok(true)
}

fn stopping(stop: &watch::Receiver<bool>) -> bool {
    *stop.borrow() || stop.has_changed().is_err()
}
