//! Service rollups in Postgres.

use chrono::{DateTime, Utc};
use odp_profile::{Level, Profile};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{
    changed, parts_of, rebuilt, to_time, verdict, Built, Parts, Pending, PendingSummary, Verdict,
};
use crate::blocks::blocking;
use crate::Result;

pub(crate) async fn profiles_to_roll_up(pool: &PgPool, limit: i64) -> Result<Vec<Uuid>> {
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

pub(crate) async fn pending_by_service(
    pool: &PgPool,
    profile_ids: &[Uuid],
) -> Result<Vec<(String, Vec<Uuid>)>> {
    Ok(sqlx::query_as(
        "select p.service, array_agg(b.profile_id)
         from profile_blocks b join profiles p on p.id = b.profile_id
         where b.profile_id = any($1) and b.rollup = 'pending' and p.service is not null
         group by p.service",
    )
    .bind(profile_ids)
    .fetch_all(pool)
    .await?)
}

pub(crate) async fn roll_up_service(
    pool: &PgPool,
    service: &str,
    ids: &[Uuid],
) -> Result<super::RolledUp> {
    let mut tx = pool.begin().await?;
    let pending: Pending = sqlx::query_as(
        "select profile_id, block, extract(epoch from now() - built_at)::float8
         from profile_blocks where profile_id = any($1) and rollup = 'pending'
         for update skip locked",
    )
    .bind(ids)
    .fetch_all(&mut *tx)
    .await?;
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
    sqlx::query("update profile_blocks set rollup = $2 where profile_id = any($1)")
        .bind(&ids)
        .bind(if verdict == Verdict::Roll {
            "rolled"
        } else {
            "alone"
        })
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(verdict.outcome(ids.len()))
}

/// The rollups `parts` make when added to the stored ones (locked for the
/// rest of the transaction, in key order so callers cannot deadlock).
async fn build_rollups(tx: &mut PgConnection, parts: Parts) -> Result<Vec<Built>> {
    let mut built = Vec::new();
    for ((service, hour), profiles) in parts {
        let hour = to_time(hour)?;
        let old: Option<Vec<u8>> = sqlx::query_scalar(
            "select block from service_rollups where service = $1 and hour = $2 for update",
        )
        .bind(&service)
        .bind(hour)
        .fetch_optional(&mut *tx)
        .await?;
        built.push(rebuilt(hour, old, profiles).await?);
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
        let rollup = changed(bytes, change.clone()).await?;
        rewrite_one(tx, &service, hour, rollup).await?;
    }
    Ok(())
}

pub(crate) async fn load(
    pool: &PgPool,
    service: &str,
    hours: &[DateTime<Utc>],
) -> Result<Vec<Vec<u8>>> {
    Ok(sqlx::query_scalar(
        "select block from service_rollups where service = $1 and hour = any($2) order by hour",
    )
    .bind(service)
    .bind(hours)
    .fetch_all(pool)
    .await?)
}
