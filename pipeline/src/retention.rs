//! The periodic retention job: downsampling old windows, deleting expired
//! data, and collecting the frames and stacks left unreferenced.
//!
//! Every worker runs the loop, but a pass runs only in the one holding the
//! retention lock ([`odp_store::retention::RetentionLock`]: a Postgres
//! advisory lock, or MySQL's `GET_LOCK`), so several workers never run it
//! at once; the others skip the pass. The
//! work itself is done in short batched transactions by `odp_store`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use odp_store::downsample::{self, Downsampled};
use odp_store::retention::{self, Collected, Expired};
use odp_store::Database;
use odp_store::StoreError;
use tokio::sync::watch;

const DAY: Duration = Duration::from_secs(24 * 3600);

/// Retention and downsampling settings.
#[derive(Debug, Clone, clap::Args)]
pub struct RetentionOptions {
    /// Delete profile data older than this many days, then the frames and
    /// stacks nothing references any more; 0 keeps everything (the
    /// default: deleting data is the operator's call).
    #[arg(long = "retention-days", env = "ODP_RETENTION_DAYS", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=36_500))]
    pub retention_days: u32,
    /// Merge windows older than this many days into coarse buckets (7 is a
    /// good start); 0, the default, turns downsampling off, as it rewrites
    /// stored windows. At least a day, so no merged window can still be
    /// redelivered from Kafka.
    #[arg(long = "downsample-after-days", env = "ODP_DOWNSAMPLE_AFTER_DAYS", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=36_500))]
    pub downsample_after_days: u32,
    /// Length of a downsampled bucket.
    #[arg(long = "downsample-bucket-secs", env = "ODP_DOWNSAMPLE_BUCKET_SECS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(10..=86_400))]
    pub downsample_bucket_secs: u64,
    /// How often a pass runs.
    #[arg(long = "retention-interval-secs", env = "ODP_RETENTION_INTERVAL_SECS", default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub interval_secs: u64,
    /// Rows (or buckets) per transaction, which bounds how long a lock is
    /// held.
    #[arg(long = "retention-batch", env = "ODP_RETENTION_BATCH", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub batch: u32,
}

impl Default for RetentionOptions {
    fn default() -> Self {
        RetentionOptions {
            retention_days: 0,
            downsample_after_days: 0,
            downsample_bucket_secs: 600,
            interval_secs: 3600,
            batch: 1000,
        }
    }
}

impl RetentionOptions {
    /// Windows that ended before this are deleted.
    pub fn retention_cutoff(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        (self.retention_days > 0).then(|| now - DAY * self.retention_days)
    }

    /// Windows that ended before this are downsampled.
    pub fn downsample_cutoff(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        (self.downsample_after_days > 0).then(|| now - DAY * self.downsample_after_days)
    }

    pub fn bucket(&self) -> Duration {
        Duration::from_secs(self.downsample_bucket_secs)
    }
}

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub downsampled: Downsampled,
    pub expired: Expired,
    pub collected: Collected,
}

/// Runs one pass as of `now` when this process gets the lock; `None` when
/// another holds it.
pub async fn run_once(
    pool: &Database,
    options: &RetentionOptions,
    now: DateTime<Utc>,
) -> Result<Option<Pass>, StoreError> {
    let Some(lock) = retention::RetentionLock::try_acquire(pool).await? else {
        return Ok(None);
    };
    let pass = run_locked(pool, options, now).await;
    // Released on error too; should the release itself fail, the lock
    // goes with its connection, which is then closed.
    let _ = lock.release().await;
    pass.map(Some)
}

async fn run_locked(
    pool: &Database,
    options: &RetentionOptions,
    now: DateTime<Utc>,
) -> Result<Pass, StoreError> {
    let mut pass = Pass::default();
    // Expired windows go first, so none is merged only to be deleted.
    if let Some(cutoff) = options.retention_cutoff(now) {
        pass.expired = retention::delete_expired(pool, cutoff, options.batch).await?;
        // Collection reads every stack and frame; only deletions make
        // garbage (downsampling keeps every stack), and a collection cut
        // short is finished by the next pass that deletes.
        if pass.expired != Expired::default() {
            pass.collected = retention::collect_garbage(pool, options.batch).await?;
        }
    }
    if let Some(cutoff) = options.downsample_cutoff(now) {
        pass.downsampled =
            downsample::downsample(pool, cutoff, options.bucket(), options.batch).await?;
    }
    Ok(pass)
}

/// Runs a pass every interval until `stop` is raised or its sender
/// dropped.
pub async fn run(pool: Database, options: RetentionOptions, mut stop: watch::Receiver<bool>) {
    if options.retention_days == 0 && options.downsample_after_days == 0 {
        tracing::info!("retention and downsampling off");
        return;
    }
    tracing::info!(
        retention_days = options.retention_days,
        downsample_after_days = options.downsample_after_days,
        interval_secs = options.interval_secs,
        "retention job started"
    );
    let interval = Duration::from_secs(options.interval_secs);
    while !*stop.borrow() && stop.has_changed().is_ok() {
        match run_once(&pool, &options, Utc::now()).await {
            Ok(Some(pass)) => tracing::info!(
                buckets = pass.downsampled.buckets,
                windows_merged = pass.downsampled.snapshots_merged,
                snapshots_deleted = pass.expired.snapshots,
                samples_deleted = pass.expired.samples,
                profiles_deleted = pass.expired.profiles,
                stacks_deleted = pass.collected.stacks,
                frames_deleted = pass.collected.frames,
                "retention pass done"
            ),
            Ok(None) => tracing::debug!("retention pass running elsewhere, skipped"),
            Err(e) => tracing::warn!(error = %e, "retention pass failed"),
        }
        tokio::select! {
            _ = stop.changed() => {}
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutoffs_are_off_at_zero_days() {
        let now = DateTime::from_timestamp(10 * 86_400, 0).unwrap();
        let mut options = RetentionOptions::default();
        assert_eq!(options.retention_cutoff(now), None);
        assert_eq!(options.downsample_cutoff(now), None);
        options.downsample_after_days = 7;
        assert_eq!(
            options.downsample_cutoff(now),
            DateTime::from_timestamp(3 * 86_400, 0)
        );
        options.retention_days = 2;
        options.downsample_after_days = 0;
        assert_eq!(
            options.retention_cutoff(now),
            DateTime::from_timestamp(8 * 86_400, 0)
        );
        assert_eq!(options.downsample_cutoff(now), None);
    }
}
