//! Service rollups in MySQL and MariaDB: `in (?, …)` lists for arrays,
//! `on duplicate key update` for `on conflict`, and the age of a block
//! computed in Rust from microseconds (no `extract(epoch …)`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use odp_profile::{Level, Profile};
use sqlx::{MySqlConnection, MySqlPool};
use uuid::Uuid;

use super::{
    changed, parts_of, rebuilt, to_time, verdict, Built, Parts, Pending, PendingSummary, Verdict,
};
use crate::blocks::blocking;
use crate::blocks::mysql::{execute_in, fetch_in};
use crate::Result;

pub(crate) async fn profiles_to_roll_up(pool: &MySqlPool, limit: i64) -> Result<Vec<Uuid>> {
    let rows: Vec<(Uuid,)> = sqlx::query_as(
        "select b.profile_id from profile_blocks b join profiles p on p.id = b.profile_id
         where b.rollup = 'pending' and p.service is not null
         order by b.built_at limit ?",
    )
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

pub(crate) async fn pending_by_service(
    pool: &MySqlPool,
    profile_ids: &[Uuid],
) -> Result<Vec<(String, Vec<Uuid>)>> {
    let mut conn = pool.acquire().await?;
    let rows: Vec<(String, Uuid)> = fetch_in(
        &mut conn,
        "select p.service, b.profile_id
         from profile_blocks b join profiles p on p.id = b.profile_id
         where b.rollup = 'pending' and p.service is not null and b.profile_id in ",
        profile_ids,
        "",
    )
    .await?;
    let mut services: BTreeMap<String, Vec<Uuid>> = BTreeMap::new();
    for (service, id) in rows {
        services.entry(service).or_default().push(id);
    }
    Ok(services.into_iter().collect())
}

pub(crate) async fn roll_up_service(
    pool: &MySqlPool,
    service: &str,
    ids: &[Uuid],
) -> Result<super::RolledUp> {
    let mut tx = pool.begin().await?;
    let rows: Vec<(Uuid, Vec<u8>, i64)> = fetch_in(
        &mut tx,
        "select profile_id, block, timestampdiff(microsecond, built_at, now(6))
         from profile_blocks where rollup = 'pending' and profile_id in ",
        ids,
        " for update skip locked",
    )
    .await?;
    let pending: Pending = rows
        .into_iter()
        .map(|(id, block, age_us)| (id, block, age_us as f64 / 1e6))
        .collect();
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
    let set = if verdict == Verdict::Roll {
        "update profile_blocks set rollup = 'rolled' where profile_id in "
    } else {
        "update profile_blocks set rollup = 'alone' where profile_id in "
    };
    execute_in(&mut tx, set, &ids, "").await?;
    tx.commit().await?;
    Ok(verdict.outcome(ids.len()))
}

/// The rollups `parts` make when added to the stored ones (locked for the
/// rest of the transaction, in key order so callers cannot deadlock).
async fn build_rollups(tx: &mut MySqlConnection, parts: Parts) -> Result<Vec<Built>> {
    let mut built = Vec::new();
    for ((service, hour), profiles) in parts {
        let hour = to_time(hour)?;
        let old: Option<Vec<u8>> = sqlx::query_scalar(
            "select block from service_rollups where service = ? and `hour` = ? for update",
        )
        .bind(&service)
        .bind(hour)
        .fetch_optional(&mut *tx)
        .await?;
        built.push(rebuilt(hour, old, profiles).await?);
    }
    Ok(built)
}

/// Writes a rebuilt rollup (one block per statement, so the packet holds
/// at most one block).
async fn write(tx: &mut MySqlConnection, service: &str, rollup: Built) -> Result<()> {
    sqlx::query(
        "insert into service_rollups (service, `hour`, windows, samples, block)
         values (?, ?, ?, ?, ?)
         on duplicate key update windows = values(windows), samples = values(samples),
             block = values(block), built_at = now(6)",
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
pub(crate) async fn add_parts(tx: &mut MySqlConnection, parts: Parts) -> Result<()> {
    let services: Vec<String> = parts.keys().map(|(service, _)| service.clone()).collect();
    let built = build_rollups(tx, parts).await?;
    for (service, rollup) in services.iter().zip(built) {
        write(tx, service, rollup).await?;
    }
    Ok(())
}

/// Writes a changed rollup (deleting it when it has no window left).
async fn rewrite_one(
    tx: &mut MySqlConnection,
    service: &str,
    hour: DateTime<Utc>,
    rollup: Profile,
) -> Result<()> {
    if rollup.windows.is_empty() {
        sqlx::query("delete from service_rollups where service = ? and `hour` = ?")
            .bind(service)
            .bind(hour)
            .execute(&mut *tx)
            .await?;
        return Ok(());
    }
    let (windows, samples) = (rollup.windows.len() as i32, rollup.total_samples() as i64);
    let block = blocking(move || Ok(rollup.encode(Level::Small))).await?;
    sqlx::query(
        "update service_rollups set windows = ?, samples = ?, block = ?, built_at = now(6)
         where service = ? and `hour` = ?",
    )
    .bind(windows)
    .bind(samples)
    .bind(block)
    .bind(service)
    .bind(hour)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Rewrites every rollup of `hours` (all services) as `change` makes it.
///
/// The rows are read through `service_rollups_hour` (migration 0002),
/// forced so that the lock scope never depends on the optimizer's
/// statistics: a full scan would lock every row of every hour (and, under
/// repeatable read, every gap), holding up compactions into other hours
/// until the caller commits. Run in a `read committed` transaction
/// ([`crate::pool::mysql::read_committed`]), this locks the hours' rows
/// and nothing else. They are locked in the index's order, hour then
/// service: per service that is the ascending hours in which
/// [`add_parts`] locks them, so the two cannot deadlock.
pub(crate) async fn rewrite(
    tx: &mut MySqlConnection,
    hours: &[DateTime<Utc>],
    change: impl Fn(&Profile) -> Profile + Send + Sync + Clone + 'static,
) -> Result<()> {
    let rows: Vec<(String, DateTime<Utc>, Vec<u8>)> = fetch_in(
        tx,
        "select service, `hour`, block from service_rollups
         force index (service_rollups_hour) where `hour` in ",
        hours,
        " order by `hour`, service for update",
    )
    .await?;
    for (service, hour, bytes) in rows {
        let rollup = changed(bytes, change.clone()).await?;
        rewrite_one(tx, &service, hour, rollup).await?;
    }
    Ok(())
}

pub(crate) async fn load(
    pool: &MySqlPool,
    service: &str,
    hours: &[DateTime<Utc>],
) -> Result<Vec<Vec<u8>>> {
    let mut conn = pool.acquire().await?;
    let mut rows: Vec<(DateTime<Utc>, Vec<u8>)> = Vec::new();
    for chunk in hours.chunks(crate::blocks::mysql::IN_LIST_CHUNK) {
        let mut query = sqlx::QueryBuilder::<sqlx::MySql>::new(
            "select `hour`, block from service_rollups where service = ",
        );
        query.push_bind(service).push(" and `hour` in ");
        crate::database::push_in_list(&mut query, chunk.iter());
        rows.extend(query.build_query_as().fetch_all(&mut *conn).await?);
    }
    rows.sort_by_key(|(hour, _)| *hour);
    Ok(rows.into_iter().map(|(_, block)| block).collect())
}
