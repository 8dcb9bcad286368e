//! Service days (migration 0026): a service's hour rollups of one UTC day
//! in one block, each host's windows of the day merged into one per event
//! and period.
//!
//! A month of a service is 720 hour rollups, each with a window per host:
//! a read of it decodes and selects every one (25 s for ten hosts at
//! 19 Hz). A day block holds the same samples in one window per host, and
//! a service's stacks repeat from hour to hour, so it is a few times
//! smaller than its hours together and a read of whole days decodes a
//! 24th of the windows. Only what a day's windows cannot tell apart is
//! lost: when in the day a sample was taken, and which name a thread had
//! in which hour. So a read uses a day only when the day lies wholly in
//! its range, filters no threads, and (a trend) counts in steps of whole
//! days.
//!
//! A day is built once it has settled (its hours ended [`DAY_SETTLE`]
//! ago), and read only while it matches its hours: their count, their
//! samples and their latest write, each stored with the day. A late
//! window, a retention pass or a downsampling changes an hour's samples or
//! its `built_at`, and the day is then read from its hours until the next
//! pass rebuilds it. The times are the database's, taken when each write
//! runs (`{clock}`) while it holds its rows' locks: the day's build holds
//! the hours' rows shared, so an hour written after the day was read has a
//! later time than the day.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use odp_profile::windows::WindowKey;
use odp_profile::{Level, Profile};

use crate::cpu::blocking;
use crate::database::Database;
use crate::sql::{Sql, Tx};
use crate::{Result, StoreError};

use super::block_cache::Tier;
use super::cached::{decoded_and_cached, Cached, ReadBlock};
use super::{decoded, mysql, postgres, to_time};

const DAY_MS: i64 = 86_400_000;

/// How days are compressed: LZ4 (block version 2), decoded about ten
/// times faster than deflate at a third more bytes (a 30-day read
/// decodes 29 days). Nothing weighs a day's bytes against others', as
/// [`super::WORTH`] does a rollup's, so the codec can differ.
const DAY_LEVEL: Level = Level::Quick;

/// How long after a day ends it is first built: windows an agent spooled
/// through a broker outage, and the compaction of the last profiles of the
/// day, come in during it.
pub const DAY_SETTLE: std::time::Duration = std::time::Duration::from_secs(2 * 3600);

/// The UTC day a time falls in (its midnight, in unix ms).
pub(crate) fn day_of(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS) * DAY_MS
}

/// Service days to build or rebuild, oldest first, at most `limit`: days
/// that ended `settle` ago or earlier, whose hour rollups have no day
/// block or one that no longer matches them.
pub async fn days_to_build(
    db: impl Into<Database>,
    settle: std::time::Duration,
    limit: i64,
) -> Result<Vec<(String, DateTime<Utc>)>> {
    let db: Database = db.into();
    let settled = Utc::now() - chrono::Duration::from_std(settle).unwrap_or_default();
    let before = to_time(day_of(settled.timestamp_millis()))?;
    let stale = match &db {
        Database::Postgres(_) => postgres::STALE_DAYS,
        Database::MySql(_) => mysql::STALE_DAYS,
    };
    let mut days: Vec<(String, DateTime<Utc>)> = Sql::new(stale)
        .bind(before)
        .bind(limit)
        .fetch_all(&db)
        .await?;
    days.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    Ok(days)
}

/// What [`build_day`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayBuilt {
    /// The day's block now holds its hours: this many hours, windows
    /// (one per host, event and period) and samples.
    Built {
        hours: usize,
        windows: usize,
        samples: u64,
    },
    /// No hour of the day is left (retention took them): its block is
    /// gone too.
    Dropped,
}

/// Builds (or rebuilds) `service`'s block of `day` (a UTC midnight) from
/// its hour rollups, holding them shared while it does.
pub async fn build_day(
    db: impl Into<Database>,
    service: &str,
    day: DateTime<Utc>,
) -> Result<DayBuilt> {
    let db: Database = db.into();
    let mut tx = db.begin().await?;
    let (lock_hours, save_day) = match &tx {
        Tx::Postgres(_) => (postgres::LOCK_DAY_HOURS, postgres::SAVE_DAY),
        Tx::MySql(_) => (mysql::LOCK_DAY_HOURS, mysql::SAVE_DAY),
    };
    let next_day = day + chrono::Duration::days(1);
    let rows: Vec<(i64, Vec<u8>)> = Sql::new(lock_hours)
        .bind(service)
        .bind(day)
        .bind(next_day)
        .fetch_all(&mut tx)
        .await?;
    if rows.is_empty() {
        Sql::new(r#"delete from service_days where service = $1 and "day" = $2"#)
            .bind(service)
            .bind(day)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        return Ok(DayBuilt::Dropped);
    }
    let hours = rows.len();
    let hour_samples: i64 = rows.iter().map(|(samples, _)| samples).sum();
    let profiles = decoded(rows.into_iter().map(|(_, block)| block).collect()).await?;
    let (windows, samples, block) = blocking(move || {
        let merged = merged_day(&profiles);
        Ok((
            merged.windows.len(),
            merged.total_samples(),
            merged.encode(DAY_LEVEL),
        ))
    })
    .await?;
    if samples as i64 != hour_samples {
        return Err(StoreError::Corrupt(format!(
            "{service}'s day {day}: its hours count {hour_samples} samples, their blocks {samples}"
        )));
    }
    Sql::new(save_day)
        .bind(service)
        .bind(day)
        .bind(hours as i32)
        .bind(windows as i32)
        .bind(hour_samples)
        .bind(block)
        .execute(&mut tx)
        .await?;
    tx.commit().await?;
    Ok(DayBuilt::Built {
        hours,
        windows,
        samples,
    })
}

/// A day's hour rollups as one profile, each host's windows merged into
/// one per event and period (a window stands for its period's samples,
/// so windows of different periods stay apart).
pub(crate) fn merged_day(hours: &[Profile]) -> Profile {
    let all = Profile::merge(hours);
    let mut groups: BTreeMap<(&str, &str, u64, u32), Vec<WindowKey>> = BTreeMap::new();
    for window in &all.windows {
        groups
            .entry((
                &window.host,
                window.event.as_str(),
                window.period,
                window.frequency_hz,
            ))
            .or_default()
            .push(window.key());
    }
    let groups: Vec<Vec<WindowKey>> = groups.into_values().collect();
    all.merge_windows(&groups)
}

/// An hour rollup's row, without its block.
struct HourRow {
    hour: DateTime<Utc>,
    samples: i64,
    built_at: DateTime<Utc>,
}

/// `service`'s hour rollups in the days `hours` fall in.
async fn hour_rows(db: &Database, service: &str, hours: &[DateTime<Utc>]) -> Result<Vec<HourRow>> {
    let (Some(first), Some(last)) = (hours.iter().min(), hours.iter().max()) else {
        return Ok(Vec::new());
    };
    let from = to_time(day_of(first.timestamp_millis()))?;
    let to = to_time(day_of(last.timestamp_millis()) + DAY_MS)?;
    let rows: Vec<(DateTime<Utc>, i64, DateTime<Utc>)> = Sql::new(
        r#"select "hour", samples, built_at from service_rollups
           where service = $1 and "hour" >= $2 and "hour" < $3"#,
    )
    .bind(service)
    .bind(from)
    .bind(to)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(hour, samples, built_at)| HourRow {
            hour,
            samples,
            built_at,
        })
        .collect())
}

/// The days among those of `hours` that lie wholly in `[from, to)` and
/// whose blocks still match their hours (`stored`): (day, built_at).
async fn matching_days(
    db: &Database,
    service: &str,
    (hours, stored): (&[DateTime<Utc>], &[HourRow]),
    (from, to): (DateTime<Utc>, DateTime<Utc>),
) -> Result<Vec<(DateTime<Utc>, DateTime<Utc>)>> {
    let (from_ms, to_ms) = (from.timestamp_millis(), to.timestamp_millis());
    let wanted: BTreeSet<i64> = hours
        .iter()
        .map(|h| day_of(h.timestamp_millis()))
        .filter(|&day| day >= from_ms && day + DAY_MS <= to_ms)
        .collect();
    let (Some(&first), Some(&last)) = (wanted.first(), wanted.last()) else {
        return Ok(Vec::new());
    };
    let days: Vec<(DateTime<Utc>, i32, i64, DateTime<Utc>)> = Sql::new(
        r#"select "day", hours, samples, built_at from service_days
           where service = $1 and "day" >= $2 and "day" < $3"#,
    )
    .bind(service)
    .bind(to_time(first)?)
    .bind(to_time(last + DAY_MS)?)
    .fetch_all(db)
    .await?;
    let mut per_day: BTreeMap<i64, (i32, i64, DateTime<Utc>)> = BTreeMap::new();
    for row in stored {
        let day = per_day
            .entry(day_of(row.hour.timestamp_millis()))
            .or_insert((0, 0, row.built_at));
        day.0 += 1;
        day.1 += row.samples;
        day.2 = day.2.max(row.built_at);
    }
    Ok(days
        .into_iter()
        .filter(|(day, hours, samples, built_at)| {
            let ms = day.timestamp_millis();
            wanted.contains(&ms)
                && per_day
                    .get(&ms)
                    .is_some_and(|h| (h.0, h.1) == (*hours, *samples) && h.2 <= *built_at)
        })
        .map(|(day, _, _, built_at)| (day, built_at))
        .collect())
}

/// `service`'s rollups of `hours`, decoded (see [`hour_blocks`]).
pub(crate) async fn load_hours(
    db: &Database,
    service: &str,
    hours: &[DateTime<Utc>],
    whole_days_of: Option<(DateTime<Utc>, DateTime<Utc>)>,
) -> Result<Vec<Profile>> {
    decoded_and_cached(hour_blocks(db, service, hours, whole_days_of).await?).await
}

/// The blocks of `service`'s rollups of `hours`: the days that lie wholly
/// in `whole_days_of` (when given) and match their hours as one block
/// each, the other hours as theirs. Blocks come from the process's block
/// cache where it has them.
pub(crate) async fn hour_blocks(
    db: &Database,
    service: &str,
    hours: &[DateTime<Utc>],
    whole_days_of: Option<(DateTime<Utc>, DateTime<Utc>)>,
) -> Result<Vec<ReadBlock>> {
    let stored = hour_rows(db, service, hours).await?;
    let days = match whole_days_of {
        Some(range) => matching_days(db, service, (hours, &stored), range).await?,
        None => Vec::new(),
    };
    let in_days: BTreeSet<i64> = days.iter().map(|(d, _)| d.timestamp_millis()).collect();
    let wanted: BTreeSet<DateTime<Utc>> = hours
        .iter()
        .filter(|h| !in_days.contains(&day_of(h.timestamp_millis())))
        .copied()
        .collect();
    let left: Vec<(DateTime<Utc>, DateTime<Utc>)> = stored
        .iter()
        .filter(|row| wanted.contains(&row.hour))
        .map(|row| (row.hour, row.built_at))
        .collect();
    let started = std::time::Instant::now();
    let cached = Cached::new(db, service);
    let mut blocks = cached.blocks(Tier::Hour, &left).await?;
    blocks.extend(cached.blocks(Tier::Day, &days).await?);
    let fetched = blocks.iter().filter(|b| b.fetched).count();
    let bytes: usize = blocks.iter().map(|b| b.block.len()).sum();
    tracing::debug!(
        hours = left.len(),
        days = days.len(),
        fetched,
        mb = bytes as f64 / 1e6,
        fetch_ms = started.elapsed().as_millis() as u64,
        "service blocks"
    );
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_belong_to_the_utc_day_they_fall_in() {
        assert_eq!(day_of(0), 0);
        assert_eq!(day_of(DAY_MS - 1), 0);
        assert_eq!(day_of(DAY_MS), DAY_MS);
        assert_eq!(day_of(-1), -DAY_MS);
    }
}
