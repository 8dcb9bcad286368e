//! Ended profiles' windows merged into one block each (see
//! `odp_store::compact_profile`): a profile is then read as one row,
//! and its windows' own blocks (and rows stored before blocks existed) are
//! dropped. Compacted profiles are then rolled up into their service's
//! hourly rollups (`odp_store::roll_up`), which aggregates read instead of
//! one block per instance, and settled days of rollups into day blocks
//! (`odp_store::build_day`), which reads of whole days use. Every worker
//! runs a pass every few seconds (days once a minute); two passing over
//! one profile take turns on its rows' locks, and the second finds nothing
//! left to do.

use std::sync::Arc;
use std::time::Duration;

use odp_store::Database;
use tokio::sync::watch;

use crate::metrics::PipelineMetrics;

const EVERY: Duration = Duration::from_secs(5);
const BATCH: i64 = 50;
/// Profiles rolled up per transaction: each rewrites the rollups of its
/// hours once, so bigger batches cost less per profile.
const ROLL_UP_BATCH: i64 = 200;
/// How often a worker looks for days to build: a day settles once.
const DAYS_EVERY: Duration = Duration::from_secs(60);
const DAYS_BATCH: i64 = 20;

pub(crate) async fn run(
    pool: Database,
    grace: Duration,
    metrics: Arc<PipelineMetrics>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut days_passed: Option<tokio::time::Instant> = None;
    loop {
        if let Err(e) = pass(&pool, grace, &metrics, &stopped).await {
            tracing::warn!(error = %e, "compacting profiles failed; retrying later");
        }
        if days_passed.is_none_or(|at| at.elapsed() >= DAYS_EVERY) {
            days_passed = Some(tokio::time::Instant::now());
            if let Err(e) = build_days(&pool, &metrics, &stopped).await {
                tracing::warn!(error = %e, "building service days failed; retrying later");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = stopped.wait_for(|stop| *stop) => return,
        }
    }
}

async fn pass(
    pool: &Database,
    grace: Duration,
    metrics: &PipelineMetrics,
    stopped: &watch::Receiver<bool>,
) -> Result<(), odp_store::StoreError> {
    for profile_id in odp_store::profiles_to_compact(pool, grace, BATCH).await? {
        if *stopped.borrow() {
            return Ok(());
        }
        let done = odp_store::compact_profile(pool, profile_id).await?;
        if done.windows > 0 {
            metrics.profiles_compacted.inc();
            tracing::debug!(%profile_id, windows = done.windows, legacy = done.legacy_windows,
                bytes = done.block_bytes, "profile compacted");
        }
    }
    let ready = odp_store::profiles_to_roll_up(pool, ROLL_UP_BATCH).await?;
    if !ready.is_empty() && !*stopped.borrow() {
        let done = odp_store::roll_up(pool, &ready).await?;
        metrics.profiles_rolled_up.inc_by(done.rolled);
        tracing::debug!(
            rolled = done.rolled,
            alone = done.alone,
            "profiles rolled up"
        );
    }
    Ok(())
}

/// Builds the service days that settled, and rebuilds those whose hours
/// changed since.
async fn build_days(
    pool: &Database,
    metrics: &PipelineMetrics,
    stopped: &watch::Receiver<bool>,
) -> Result<(), odp_store::StoreError> {
    for (service, day) in odp_store::days_to_build(pool, odp_store::DAY_SETTLE, DAYS_BATCH).await? {
        if *stopped.borrow() {
            return Ok(());
        }
        let built = odp_store::build_day(pool, &service, day).await?;
        metrics.service_days_built.inc();
        tracing::debug!(%service, %day, ?built, "service day built");
    }
    Ok(())
}
