//! Service rollups (migration 0015): a service's compacted profiles of one
//! hour in one block.
//!
//! An aggregate over a fleet reads every instance's profile: a thousand
//! blocks, each with its own dictionary of the same function names. A
//! rollup holds the same windows (each still with its profile id, host,
//! times and threads, so every filter applies as before) over one
//! dictionary, so such a read is one block per hour. Profiles are rolled
//! up once compacted; windows compacted into a rolled-up profile later
//! (spooled through a broker outage) are added to its rollups as they are
//! compacted. Retention and downsampling rewrite rollups as they rewrite
//! profile blocks, so both always hold the same samples.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use odp_profile::{Level, Profile, ProfileBuilder};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::blocks::blocking;
use crate::{Result, StoreError};

const HOUR_MS: i64 = 3_600_000;

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
pub async fn profiles_to_roll_up(pool: &PgPool, limit: i64) -> Result<Vec<Uuid>> {
    let rows: Vec<(Uuid,)> = sqlx::query_as(
        "select b.profile_id from profile_blocks b join profiles p on p.id = b.profile_id
         where b.rollup = 'pending' and p.service is not null
         order by b.built_at limit $1",
    )
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
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
/// by [`WORTH`]; else the profiles are marked to be read on their own. A
/// profile that would start a rollup alone waits for others (up to
/// [`ALONE_AFTER_SECS`]).
pub async fn roll_up(pool: &PgPool, profile_ids: &[Uuid]) -> Result<RolledUp> {
    let services: Vec<(String, Vec<Uuid>)> = sqlx::query_as(
        "select p.service, array_agg(b.profile_id)
         from profile_blocks b join profiles p on p.id = b.profile_id
         where b.profile_id = any($1) and b.rollup = 'pending' and p.service is not null
         group by p.service",
    )
    .bind(profile_ids)
    .fetch_all(pool)
    .await?;
    let mut done = RolledUp::default();
    for (service, ids) in services {
        let one = roll_up_service(pool, &service, &ids).await?;
        done.rolled += one.rolled;
        done.alone += one.alone;
    }
    Ok(done)
}

async fn roll_up_service(pool: &PgPool, service: &str, ids: &[Uuid]) -> Result<RolledUp> {
    let mut tx = pool.begin().await?;
    let rows: Vec<(Uuid, Vec<u8>, f64)> = sqlx::query_as(
        "select profile_id, block, extract(epoch from now() - built_at)::float8
         from profile_blocks where profile_id = any($1) and rollup = 'pending'
         for update skip locked",
    )
    .bind(ids)
    .fetch_all(&mut *tx)
    .await?;
    let member_bytes: usize = rows.iter().map(|r| r.1.len()).sum();
    let oldest = rows.iter().map(|r| r.2).fold(0.0, f64::max);
    let ids: Vec<Uuid> = rows.iter().map(|r| r.0).collect();
    let owned_service = service.to_owned();
    let parts = blocking(move || {
        let mut parts = Parts::new();
        for (id, bytes, _) in rows {
            let profile = Profile::decode(&bytes)
                .map_err(|e| StoreError::Corrupt(format!("profile {id}: {e}")))?;
            for (hour, part) in by_hour(&profile) {
                parts
                    .entry((owned_service.clone(), hour))
                    .or_default()
                    .push(part);
            }
        }
        Ok(parts)
    })
    .await?;
    let built = build_rollups(&mut tx, parts).await?;
    let old_bytes: usize = built.iter().map(|b| b.old_bytes).sum();
    let new_bytes: usize = built.iter().map(|b| b.block.len()).sum();
    let starts_alone = old_bytes == 0 && ids.len() < 2;
    if starts_alone && oldest < ALONE_AFTER_SECS {
        // Wait for others of the service to share a rollup with.
        return Ok(RolledUp::default());
    }
    let worth = !starts_alone && (new_bytes as f64) <= WORTH * (old_bytes + member_bytes) as f64;
    if worth {
        for rollup in built {
            write(&mut tx, service, rollup).await?;
        }
    }
    sqlx::query("update profile_blocks set rollup = $2 where profile_id = any($1)")
        .bind(&ids)
        .bind(if worth { "rolled" } else { "alone" })
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    let n = ids.len() as u64;
    Ok(if worth {
        RolledUp {
            rolled: n,
            alone: 0,
        }
    } else {
        RolledUp {
            rolled: 0,
            alone: n,
        }
    })
}

/// A rollup rebuilt in memory, with the size of the one it replaces.
struct Built {
    hour: DateTime<Utc>,
    old_bytes: usize,
    block: Vec<u8>,
    windows: i32,
    samples: i64,
}

/// The rollups `parts` make when added to the stored ones (locked for the
/// rest of the transaction, in key order so callers cannot deadlock).
async fn build_rollups(tx: &mut PgConnection, parts: Parts) -> Result<Vec<Built>> {
    let mut built = Vec::new();
    for ((service, hour), profiles) in parts {
        let hour = to_time(hour)?;
        let old: Option<(Vec<u8>,)> = sqlx::query_as(
            "select block from service_rollups where service = $1 and hour = $2 for update",
        )
        .bind(&service)
        .bind(hour)
        .fetch_optional(&mut *tx)
        .await?;
        let old_bytes = old.as_ref().map_or(0, |(b,)| b.len());
        let rollup = blocking(move || {
            let mut builder = ProfileBuilder::default();
            if let Some((bytes,)) = old {
                let old = Profile::decode(&bytes)
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
                old_bytes: 0,
                windows: rollup.windows.len() as i32,
                samples: rollup.total_samples() as i64,
                block,
            })
        })
        .await?;
        built.push(Built {
            old_bytes,
            ..rollup
        });
    }
    Ok(built)
}

/// Writes a rebuilt rollup.
async fn write(tx: &mut PgConnection, service: &str, rollup: Built) -> Result<()> {
    sqlx::query(
        "insert into service_rollups (service, hour, windows, samples, block)
         values ($1, $2, $3, $4, $5)
         on conflict (service, hour) do update set windows = excluded.windows,
             samples = excluded.samples, block = excluded.block, built_at = now()",
    )
    .bind(service)
    .bind(rollup.hour)
    .bind(rollup.windows)
    .bind(rollup.samples)
    .bind(rollup.block)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Adds `parts` to their rollups, in the caller's transaction.
pub(crate) async fn add_parts(tx: &mut PgConnection, parts: Parts) -> Result<()> {
    let services: Vec<String> = parts.keys().map(|(service, _)| service.clone()).collect();
    let built = build_rollups(tx, parts).await?;
    for (service, rollup) in services.iter().zip(built) {
        write(tx, service, rollup).await?;
    }
    Ok(())
}

/// Writes a changed rollup (deleting it when it has no window left).
async fn rewrite_one(
    tx: &mut PgConnection,
    service: &str,
    hour: DateTime<Utc>,
    rollup: Profile,
) -> Result<()> {
    if rollup.windows.is_empty() {
        sqlx::query("delete from service_rollups where service = $1 and hour = $2")
            .bind(service)
            .bind(hour)
            .execute(&mut *tx)
            .await?;
        return Ok(());
    }
    let (windows, samples) = (rollup.windows.len() as i32, rollup.total_samples() as i64);
    let block = blocking(move || Ok(rollup.encode(Level::Small))).await?;
    sqlx::query(
        "update service_rollups set windows = $3, samples = $4, block = $5, built_at = now()
         where service = $1 and hour = $2",
    )
    .bind(service)
    .bind(hour)
    .bind(windows)
    .bind(samples)
    .bind(block)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Rewrites every rollup of `hours` (all services) as `change` makes it.
pub(crate) async fn rewrite(
    tx: &mut PgConnection,
    hours: &[DateTime<Utc>],
    change: impl Fn(&Profile) -> Profile + Send + Sync + Clone + 'static,
) -> Result<()> {
    let rows: Vec<(String, DateTime<Utc>, Vec<u8>)> = sqlx::query_as(
        "select service, hour, block from service_rollups where hour = any($1)
         order by service, hour for update",
    )
    .bind(hours)
    .fetch_all(&mut *tx)
    .await?;
    for (service, hour, bytes) in rows {
        let change = change.clone();
        let rollup = blocking(move || {
            let old =
                Profile::decode(&bytes).map_err(|e| StoreError::Corrupt(format!("rollup: {e}")))?;
            Ok(change(&old))
        })
        .await?;
        rewrite_one(tx, &service, hour, rollup).await?;
    }
    Ok(())
}

/// The rollups of `service` for `hours`, decoded on blocking threads.
pub(crate) async fn load(
    pool: &PgPool,
    service: &str,
    hours: &[DateTime<Utc>],
) -> Result<Vec<Profile>> {
    let rows: Vec<(Vec<u8>,)> = sqlx::query_as(
        "select block from service_rollups where service = $1 and hour = any($2) order by hour",
    )
    .bind(service)
    .bind(hours)
    .fetch_all(pool)
    .await?;
    blocking(move || {
        rows.into_iter()
            .map(|(bytes,)| {
                Profile::decode(&bytes).map_err(|e| StoreError::Corrupt(format!("rollup: {e}")))
            })
            .collect()
    })
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
