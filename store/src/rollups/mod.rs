//! Service rollups (migration 0015): a service's compacted profiles of one
//! hour in one block.
//!
//! An aggregate over a fleet reads every instance's profile: a thousand
//! blocks, each with its own dictionary of the same function names. A
//! rollup holds the same windows (each still with its profile id, host,
//! times and threads, so every filter applies as before) over one
//! dictionary, so such a read is one block per hour. Profiles are rolled
//! up once compacted, and a rolled-up profile's block is dropped: its
//! samples are stored once, in the rollups, and reading the profile alone
//! keeps its windows of them (`blocks/rolled.rs`). Windows compacted into a
//! rolled-up profile later (spooled through a broker outage) are added to
//! its rollups as they are compacted. Retention and downsampling rewrite
//! rollups as they rewrite profile blocks.
//!
//! Rollups are deflate blocks, as profile blocks are: whether one pays
//! ([`WORTH`]) compares its bytes with its profiles' blocks. Days are LZ4
//! blocks (see `days.rs`).
//!
//! `postgres.rs` and `mysql.rs` hold the statements that differ: the
//! upsert, the age of a block, the locking read of whole hours, and
//! MySQL's `read committed` transactions.

mod block_cache;
mod cached;
mod days;
mod mysql;
mod postgres;

pub use block_cache::{block_cache, BlockCache, BlockCacheStats};
pub(crate) use cached::{decode_and_cache, decoded_and_cached, ReadBlock};
pub use days::{build_day, days_to_build, DayBuilt, DAY_SETTLE};
pub(crate) use days::{hour_blocks, load_hours};

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use odp_profile::codec::decode_weight;
use odp_profile::{Level, Profile, ProfileBuilder};
use uuid::Uuid;

use crate::cpu::{blocking, in_halves};
use crate::database::Database;
use crate::sql::mysql_lists::{execute_any, fetch_any};
use crate::sql::{Sql, Tx};
use crate::{Result, StoreError};

pub(crate) const HOUR_MS: i64 = 3_600_000;

/// The hour a window belongs to: the one its start falls in.
pub(crate) fn hour_of(start_ms: i64) -> i64 {
    start_ms.div_euclid(HOUR_MS) * HOUR_MS
}

fn to_time(ms: i64) -> Result<DateTime<Utc>> {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .ok_or_else(|| StoreError::Corrupt(format!("hour {ms} ms out of range")))
}

/// Windows to add, per (service, hour start in unix ms).
pub(crate) type Parts = BTreeMap<(String, i64), Vec<Profile>>;

/// `profile`'s windows, one profile per hour.
pub(crate) fn by_hour(profile: &Profile) -> BTreeMap<i64, Profile> {
    let mut hours: Vec<i64> = profile
        .windows
        .iter()
        .map(|w| hour_of(w.start_ms))
        .collect();
    hours.sort_unstable();
    hours.dedup();
    hours
        .into_iter()
        .map(|hour| {
            (
                hour,
                profile.retain_windows(|w| hour_of(w.start_ms) == hour),
            )
        })
        .collect()
}

/// How much smaller than the blocks it replaces a rollup must be to be
/// kept: a rollup pays by sharing one dictionary among many profiles.
const WORTH: f64 = 0.7;
/// A profile alone in its service's hour waits this long for others
/// before it is read on its own for good.
const ALONE_AFTER_SECS: f64 = 3600.0;

/// Compacted profiles of a service not rolled up yet, at most `limit`.
pub async fn profiles_to_roll_up(db: impl Into<Database>, limit: i64) -> Result<Vec<Uuid>> {
    let db: Database = db.into();
    Sql::new(
        "select b.profile_id from profile_blocks b join profiles p on p.id = b.profile_id
         where b.rollup = 'pending' and p.service is not null
         order by b.built_at limit $1",
    )
    .bind(limit)
    .fetch_column(&db)
    .await
}

/// What [`roll_up`] did with the profiles it was given.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RolledUp {
    /// Added to their service's rollups.
    pub rolled: u64,
    /// Left to be read on their own: a rollup of them would not be smaller.
    pub alone: u64,
}

/// Adds the windows of `profile_ids` (those pending, and not being rolled
/// up by another worker) to their services' rollups, one transaction per
/// service, when that makes the rollups smaller than the profiles' blocks
/// by `WORTH`; else the profiles are marked to be read on their own. A
/// profile that would start a rollup alone waits for others (up to
/// `ALONE_AFTER_SECS`).
pub async fn roll_up(db: impl Into<Database>, profile_ids: &[Uuid]) -> Result<RolledUp> {
    let db: Database = db.into();
    let pending: Vec<(String, Uuid)> = fetch_any(
        &db,
        "select p.service, b.profile_id
         from profile_blocks b join profiles p on p.id = b.profile_id
         where b.profile_id = any($1) and b.rollup = 'pending' and p.service is not null",
        profile_ids,
    )
    .await?;
    let mut services: BTreeMap<String, Vec<Uuid>> = BTreeMap::new();
    for (service, id) in pending {
        services.entry(service).or_default().push(id);
    }
    let mut done = RolledUp::default();
    for (service, ids) in services {
        let one = roll_up_service(&db, &service, &ids).await?;
        done.rolled += one.rolled;
        done.alone += one.alone;
    }
    Ok(done)
}

/// Rolls up the pending profiles among `ids` of `service`, in one
/// transaction (see [`roll_up`]).
async fn roll_up_service(db: &Database, service: &str, ids: &[Uuid]) -> Result<RolledUp> {
    let mut tx = db.begin().await?;
    let lock_pending = match &tx {
        Tx::Postgres(_) => postgres::LOCK_PENDING,
        Tx::MySql(_) => mysql::LOCK_PENDING,
    };
    let pending: Pending = fetch_any(&mut tx, lock_pending, ids).await?;
    let ids: Vec<Uuid> = pending.iter().map(|r| r.0).collect();
    let summary = PendingSummary::of(&pending);
    let built = build_rollups(&mut tx, parts_of(service, pending).await?).await?;
    let verdict = verdict(&summary, &built);
    if verdict == Verdict::Wait {
        // Wait for others of the service to share a rollup with.
        return Ok(verdict.outcome(0));
    }
    if verdict == Verdict::Roll {
        for rollup in built {
            write(&mut tx, service, rollup).await?;
        }
    }
    let mark = if verdict == Verdict::Roll {
        // One copy of the samples: the rollups hold them now.
        "update profile_blocks set rollup = 'rolled', block = null, windows = 0, samples = 0
         where profile_id = any($1)"
    } else {
        "update profile_blocks set rollup = 'alone' where profile_id = any($1)"
    };
    execute_any(&mut tx, mark, &ids).await?;
    tx.commit().await?;
    Ok(verdict.outcome(ids.len()))
}

/// The locked pending profile blocks of one service: (id, block, seconds
/// since built).
type Pending = Vec<(Uuid, Vec<u8>, f64)>;

/// The pending blocks' windows, by (service, hour).
async fn parts_of(service: &str, rows: Pending) -> Result<Parts> {
    let service = service.to_owned();
    blocking(move || {
        let mut parts = Parts::new();
        for (id, bytes, _) in rows {
            let profile = Profile::decode(&bytes)
                .map_err(|e| StoreError::Corrupt(format!("profile {id}: {e}")))?;
            for (hour, part) in by_hour(&profile) {
                parts.entry((service.clone(), hour)).or_default().push(part);
            }
        }
        Ok(parts)
    })
    .await
}

/// What to do with a service's pending profiles, given the rollups
/// rebuilt with them.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Leave them pending: one profile would start a rollup alone.
    Wait,
    /// Write the rollups; the profiles are `rolled`.
    Roll,
    /// Keep the rollups; the profiles are read `alone`.
    Alone,
}

/// What [`verdict`] needs of the pending blocks once they are decoded.
struct PendingSummary {
    profiles: usize,
    member_bytes: usize,
    /// Seconds since the oldest was built.
    oldest: f64,
}

impl PendingSummary {
    fn of(pending: &Pending) -> PendingSummary {
        PendingSummary {
            profiles: pending.len(),
            member_bytes: pending.iter().map(|r| r.1.len()).sum(),
            oldest: pending.iter().map(|r| r.2).fold(0.0, f64::max),
        }
    }
}

fn verdict(pending: &PendingSummary, built: &[Built]) -> Verdict {
    let PendingSummary {
        member_bytes,
        oldest,
        ..
    } = *pending;
    let old_bytes: usize = built.iter().map(|b| b.old_bytes).sum();
    let new_bytes: usize = built.iter().map(|b| b.block.len()).sum();
    let starts_alone = old_bytes == 0 && pending.profiles < 2;
    if starts_alone && oldest < ALONE_AFTER_SECS {
        return Verdict::Wait;
    }
    if !starts_alone && (new_bytes as f64) <= WORTH * (old_bytes + member_bytes) as f64 {
        Verdict::Roll
    } else {
        Verdict::Alone
    }
}

impl Verdict {
    fn outcome(&self, profiles: usize) -> RolledUp {
        let n = profiles as u64;
        match self {
            Verdict::Wait => RolledUp::default(),
            Verdict::Roll => RolledUp {
                rolled: n,
                alone: 0,
            },
            Verdict::Alone => RolledUp {
                rolled: 0,
                alone: n,
            },
        }
    }
}

/// A rollup rebuilt in memory, with the size of the one it replaces.
struct Built {
    hour: DateTime<Utc>,
    old_bytes: usize,
    block: Vec<u8>,
    windows: i32,
    samples: i64,
}

/// The stored rollup of `hour` (if any) with `profiles` added.
async fn rebuilt(
    hour: DateTime<Utc>,
    old: Option<Vec<u8>>,
    profiles: Vec<Profile>,
) -> Result<Built> {
    let old_bytes = old.as_ref().map_or(0, Vec::len);
    blocking(move || {
        let mut builder = ProfileBuilder::default();
        if let Some(bytes) = old {
            let old = Profile::decode(bytes.as_ref())
                .map_err(|e| StoreError::Corrupt(format!("rollup: {e}")))?;
            builder.add_profile(&old);
        }
        for part in &profiles {
            builder.add_profile(part);
        }
        let rollup = builder.build();
        let block = rollup.encode(Level::Small);
        Ok(Built {
            hour,
            old_bytes,
            windows: rollup.windows.len() as i32,
            samples: rollup.total_samples() as i64,
            block,
        })
    })
    .await
}

/// The rollups `parts` make when added to the stored ones (locked for the
/// rest of the transaction, in key order so callers cannot deadlock).
async fn build_rollups(tx: &mut Tx, parts: Parts) -> Result<Vec<Built>> {
    let mut built = Vec::new();
    for ((service, hour), profiles) in parts {
        let hour = to_time(hour)?;
        let old: Option<Vec<u8>> = Sql::new(
            "select block from service_rollups where service = $1 and hour = $2 for update",
        )
        .bind(&service)
        .bind(hour)
        .fetch_value(&mut *tx)
        .await?;
        built.push(rebuilt(hour, old, profiles).await?);
    }
    Ok(built)
}

/// Writes a rebuilt rollup (one block per statement, so that MySQL's
/// packet holds at most one block).
async fn write(tx: &mut Tx, service: &str, rollup: Built) -> Result<()> {
    let upsert = match tx {
        Tx::Postgres(_) => postgres::SAVE_ROLLUP,
        Tx::MySql(_) => mysql::SAVE_ROLLUP,
    };
    Sql::new(upsert)
        .bind(service)
        .bind(rollup.hour)
        .bind(rollup.windows)
        .bind(rollup.samples)
        .bind(rollup.block)
        .execute(tx)
        .await?;
    Ok(())
}

/// Adds `parts` to their rollups, in the caller's transaction.
pub(crate) async fn add_parts(tx: &mut Tx, parts: Parts) -> Result<()> {
    let services: Vec<String> = parts.keys().map(|(service, _)| service.clone()).collect();
    let built = build_rollups(tx, parts).await?;
    for (service, rollup) in services.iter().zip(built) {
        write(tx, service, rollup).await?;
    }
    Ok(())
}

/// A transaction to [`rewrite`] rollups in: on MySQL `read committed`,
/// so that its locking read locks the hours' rows and nothing else.
pub(crate) async fn begin_rewrite(db: &Database) -> Result<Tx> {
    match db {
        Database::Postgres(_) => db.begin().await,
        Database::MySql(pool) => mysql::begin_read_committed(pool).await,
    }
}

/// Rewrites every rollup of `hours` (all services) as `change` makes it,
/// in a transaction from [`begin_rewrite`].
pub(crate) async fn rewrite(
    tx: &mut Tx,
    hours: &[DateTime<Utc>],
    change: impl Fn(&Profile) -> Profile + Send + Sync + Clone + 'static,
) -> Result<()> {
    let lock_hours = match tx {
        Tx::Postgres(_) => postgres::LOCK_HOURS,
        Tx::MySql(_) => mysql::LOCK_HOURS,
    };
    let rows: Vec<(String, DateTime<Utc>, Vec<u8>)> =
        fetch_any(&mut *tx, lock_hours, hours).await?;
    for (service, hour, bytes) in rows {
        let rollup = changed(bytes, change.clone()).await?;
        rewrite_one(tx, &service, hour, rollup).await?;
    }
    Ok(())
}

/// Writes a changed rollup (deleting it when it has no window left).
async fn rewrite_one(
    tx: &mut Tx,
    service: &str,
    hour: DateTime<Utc>,
    rollup: Profile,
) -> Result<()> {
    if rollup.windows.is_empty() {
        Sql::new("delete from service_rollups where service = $1 and hour = $2")
            .bind(service)
            .bind(hour)
            .execute(tx)
            .await?;
        return Ok(());
    }
    let (windows, samples) = (rollup.windows.len() as i32, rollup.total_samples() as i64);
    let block = blocking(move || Ok(rollup.encode(Level::Small))).await?;
    Sql::new(
        "update service_rollups set windows = $3, samples = $4, block = $5, built_at = {clock}
         where service = $1 and hour = $2",
    )
    .bind(service)
    .bind(hour)
    .bind(windows)
    .bind(samples)
    .bind(block)
    .execute(tx)
    .await?;
    Ok(())
}

/// A stored rollup changed by `change`.
async fn changed(
    bytes: Vec<u8>,
    change: impl FnOnce(&Profile) -> Profile + Send + 'static,
) -> Result<Profile> {
    blocking(move || {
        let old = Profile::decode(bytes.as_ref())
            .map_err(|e| StoreError::Corrupt(format!("rollup: {e}")))?;
        Ok(change(&old))
    })
    .await
}

/// Stored rollups decoded, on two blocking threads.
async fn decoded<B: AsRef<[u8]> + Send + 'static>(blocks: Vec<B>) -> Result<Vec<Profile>> {
    in_halves(
        blocks,
        |bytes| decode_weight(bytes.as_ref()),
        |bytes| {
            Profile::decode(bytes.as_ref()).map_err(|e| StoreError::Corrupt(format!("rollup: {e}")))
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_belong_to_the_hour_they_start_in() {
        assert_eq!(hour_of(0), 0);
        assert_eq!(hour_of(HOUR_MS - 1), 0);
        assert_eq!(hour_of(HOUR_MS), HOUR_MS);
        assert_eq!(hour_of(-1), -HOUR_MS);
    }
}
