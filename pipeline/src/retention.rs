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
use odp_store::downsample::{self, Downsampled, Tier};
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
    /// Length of a downsampled bucket, in seconds that divide an hour.
    #[arg(long = "downsample-bucket-secs", env = "ODP_DOWNSAMPLE_BUCKET_SECS", default_value_t = 600, value_parser = parse_bucket_secs)]
    pub downsample_bucket_secs: u64,
    /// More tiers of history, as `DAYS:SECS` pairs (`1:60,7:3600`: windows
    /// older than a day in minutes, older than a week in hours), each
    /// bucket dividing an hour; they apply beside
    /// `--downsample-after-days`, the coarsest bucket winning where ages
    /// overlap. Each must be at least a day old, as that one is.
    #[arg(long = "downsample-tiers", env = "ODP_DOWNSAMPLE_TIERS", value_delimiter = ',', value_parser = parse_tier)]
    pub downsample_tiers: Vec<TierAge>,
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
            downsample_tiers: Vec::new(),
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

    /// Every tier of history as of `now`: `--downsample-after-days` with
    /// its bucket, and `--downsample-tiers`.
    pub fn tiers(&self, now: DateTime<Utc>) -> Vec<Tier> {
        let first = self.downsample_cutoff(now).map(|cutoff| Tier {
            cutoff,
            bucket: self.bucket(),
        });
        first
            .into_iter()
            .chain(self.downsample_tiers.iter().map(|t| Tier {
                cutoff: now - DAY * t.after_days,
                bucket: Duration::from_secs(t.bucket_secs),
            }))
            .collect()
    }

    fn downsamples(&self) -> bool {
        self.downsample_after_days > 0 || !self.downsample_tiers.is_empty()
    }
}

/// A tier of `--downsample-tiers`: windows older than `after_days` are
/// kept in `bucket_secs` buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierAge {
    pub after_days: u32,
    pub bucket_secs: u64,
}

fn parse_bucket_secs(text: &str) -> Result<u64, String> {
    let secs: u64 = text
        .parse()
        .map_err(|_| format!("{text:?} is no whole number of seconds"))?;
    if secs < 10 || !downsample::bucket_fits_an_hour(Duration::from_secs(secs)) {
        return Err(format!(
            "a bucket is 10 s to an hour and divides an hour (60, 600, 3600, ...); {secs} s does not"
        ));
    }
    Ok(secs)
}

fn parse_tier(text: &str) -> Result<TierAge, String> {
    let (days, secs) = text
        .split_once(':')
        .ok_or_else(|| format!("{text:?}: a tier is DAYS:SECS, e.g. 7:3600"))?;
    let after_days: u32 = days
        .trim()
        .parse()
        .map_err(|_| format!("{text:?}: {days:?} is no whole number of days"))?;
    if !(1..=36_500).contains(&after_days) {
        return Err(format!(
            "{text:?}: a tier starts 1 to 36,500 days back, so no merged window can still be redelivered"
        ));
    }
    Ok(TierAge {
        after_days,
        bucket_secs: parse_bucket_secs(secs.trim())?,
    })
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
    let tiers = options.tiers(now);
    if !tiers.is_empty() {
        pass.downsampled = downsample::downsample_tiers(pool, &tiers, options.batch).await?;
    }
    Ok(pass)
}

/// Runs a pass every interval until `stop` is raised or its sender
/// dropped.
pub async fn run(pool: Database, options: RetentionOptions, mut stop: watch::Receiver<bool>) {
    if options.retention_days == 0 && !options.downsamples() {
        tracing::info!("retention and downsampling off");
        return;
    }
    tracing::info!(
        retention_days = options.retention_days,
        downsample_after_days = options.downsample_after_days,
        downsample_tiers = ?options.downsample_tiers,
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

    #[test]
    fn tiers_join_the_first_bucket() {
        let now = DateTime::from_timestamp(10 * 86_400, 0).unwrap();
        let options = RetentionOptions {
            downsample_after_days: 1,
            downsample_tiers: vec![parse_tier("7:3600").unwrap()],
            ..RetentionOptions::default()
        };
        assert_eq!(
            options.tiers(now),
            vec![
                Tier {
                    cutoff: DateTime::from_timestamp(9 * 86_400, 0).unwrap(),
                    bucket: Duration::from_secs(600),
                },
                Tier {
                    cutoff: DateTime::from_timestamp(3 * 86_400, 0).unwrap(),
                    bucket: Duration::from_secs(3600),
                },
            ]
        );
    }

    #[test]
    fn a_bucket_must_divide_an_hour() {
        assert_eq!(parse_bucket_secs("600"), Ok(600));
        assert_eq!(parse_bucket_secs("3600"), Ok(3600));
        for bad in ["7", "700", "7200", "86400", "-60", "1e3"] {
            assert!(parse_bucket_secs(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_tier(" 30 : 3600"),
            Ok(TierAge {
                after_days: 30,
                bucket_secs: 3600
            })
        );
        for bad in ["0:60", "7", "7:7200", "x:60", "7:"] {
            assert!(parse_tier(bad).is_err(), "{bad}");
        }
    }
}
