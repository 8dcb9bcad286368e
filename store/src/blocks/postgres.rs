//! Blocks in Postgres: `= any($1)` arrays and `on conflict` upserts.

use std::collections::HashMap;

use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{
    compaction, rollup_parts, stacks_with_frames, Compacted, FrameRow, LegacyRows, Parts,
    SampleRow, ThreadRow, WindowRowWithProfile, WINDOW_COLUMNS,
};
use crate::Result;
use odp_core::Frame;
use odp_profile::{Level, Profile};

pub(crate) async fn read_parts_pooled(
    pool: &PgPool,
    profile_ids: &[Uuid],
    with_blocks: bool,
) -> Result<HashMap<Uuid, Parts>> {
    let mut conn = pool.acquire().await?;
    read_parts(&mut conn, profile_ids, false, with_blocks).await
}

/// The parts of `profile_ids`: their blocks (when `with_blocks`) and the
/// windows not compacted into them; locked with `lock`.
async fn read_parts(
    conn: &mut PgConnection,
    profile_ids: &[Uuid],
    lock: bool,
    with_blocks: bool,
) -> Result<HashMap<Uuid, Parts>> {
    let lock_clause = if lock { " for update" } else { "" };
    let blocks: Vec<(Uuid, Vec<u8>)> = if with_blocks {
        sqlx::query_as(&format!(
            "select profile_id, block from profile_blocks where profile_id = any($1){lock_clause}"
        ))
        .bind(profile_ids)
        .fetch_all(&mut *conn)
        .await?
    } else {
        Vec::new()
    };
    let windows: Vec<WindowRowWithProfile> = sqlx::query_as(&format!(
        "select n.profile_id, {WINDOW_COLUMNS} from snapshots n
         where n.profile_id = any($1) and not n.compacted order by n.id{lock_clause}"
    ))
    .bind(profile_ids)
    .fetch_all(&mut *conn)
    .await?;
    let mut parts = Parts::by_profile(blocks, windows);
    for parts in parts.values_mut() {
        let legacy = parts.legacy_ids();
        if !legacy.is_empty() {
            parts.legacy = legacy_rows(conn, &legacy).await?;
        }
    }
    Ok(parts)
}

async fn legacy_rows(conn: &mut PgConnection, windows: &[i64]) -> Result<LegacyRows> {
    let samples: Vec<SampleRow> = sqlx::query_as(
        "select snapshot_id, stack_id, tid, count from samples where snapshot_id = any($1)",
    )
    .bind(windows)
    .fetch_all(&mut *conn)
    .await?;
    let threads: Vec<ThreadRow> = sqlx::query_as(
        "select snapshot_id, tid, name from snapshot_threads where snapshot_id = any($1)",
    )
    .bind(windows)
    .fetch_all(&mut *conn)
    .await?;
    let mut rows = LegacyRows::from_rows(samples, threads);
    rows.stacks = legacy_stacks(conn, &rows.stack_ids()).await?;
    Ok(rows)
}

/// Stored stacks by id, with their whole frames.
async fn legacy_stacks(conn: &mut PgConnection, ids: &[Uuid]) -> Result<HashMap<Uuid, Vec<Frame>>> {
    let stacks: Vec<(Uuid, Vec<u8>)> =
        sqlx::query_as("select id, frame_ids from stacks where id = any($1)")
            .bind(ids)
            .fetch_all(&mut *conn)
            .await?;
    let frames: Vec<FrameRow> =
        sqlx::query_as("select id, function, module, file, line from frames where id = any($1)")
            .bind(super::frame_ids_of(&stacks))
            .fetch_all(&mut *conn)
            .await?;
    stacks_with_frames(stacks, frames)
}

pub(crate) async fn compact_profile(pool: &PgPool, profile_id: Uuid) -> Result<Compacted> {
    let mut tx = pool.begin().await?;
    let mut parts = read_parts(&mut tx, &[profile_id], true, true).await?;
    let parts = parts.remove(&profile_id).unwrap_or_default();
    if parts.windows.is_empty() {
        return Ok(Compacted::default());
    }
    let ids = parts.window_ids();
    let legacy = parts.legacy_ids();
    // A profile already rolled up gets its new windows added to its
    // service's rollups too.
    let rolled_up: Option<(String,)> = sqlx::query_as(
        "select p.service from profile_blocks b join profiles p on p.id = b.profile_id
         where b.profile_id = $1 and b.rollup = 'rolled' and p.service is not null",
    )
    .bind(profile_id)
    .fetch_optional(&mut *tx)
    .await?;
    let done = compaction(profile_id, parts).await?;
    if let Some((service,)) = rolled_up {
        crate::rollups::postgres::add_parts(&mut tx, rollup_parts(service, &done.new_windows))
            .await?;
    }
    sqlx::query(
        "insert into profile_blocks (profile_id, windows, samples, block) values ($1, $2, $3, $4)
         on conflict (profile_id) do update set windows = excluded.windows,
             samples = excluded.samples, block = excluded.block, built_at = now()",
    )
    .bind(profile_id)
    .bind(done.profile.windows.len() as i32)
    .bind(done.profile.total_samples() as i64)
    .bind(&done.block)
    .execute(&mut *tx)
    .await?;
    sqlx::query("update snapshots set block = null, compacted = true where id = any($1)")
        .bind(&ids)
        .execute(&mut *tx)
        .await?;
    if !legacy.is_empty() {
        sqlx::query("delete from samples where snapshot_id = any($1)")
            .bind(&legacy)
            .execute(&mut *tx)
            .await?;
        sqlx::query("delete from snapshot_threads where snapshot_id = any($1)")
            .bind(&legacy)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(Compacted {
        windows: ids.len() as u64,
        legacy_windows: legacy.len() as u64,
        block_bytes: done.block.len() as u64,
    })
}

pub(crate) async fn profiles_to_compact(
    pool: &PgPool,
    grace: std::time::Duration,
    limit: i64,
) -> Result<Vec<Uuid>> {
    let rows: Vec<(Uuid,)> = sqlx::query_as(
        "select n.profile_id
         from snapshots n left join profiles p on p.id = n.profile_id
         where not n.compacted
         group by n.profile_id, p.id, p.status, p.finished_at, p.updated_at
         having (p.id is null and max(n.window_end) < now() - make_interval(secs => $1))
             or (p.status in ('finished', 'stopped', 'failed', 'expired')
                 and coalesce(p.finished_at, p.updated_at) < now() - make_interval(secs => $1))
         order by min(n.id)
         limit $2",
    )
    .bind(grace.as_secs_f64())
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// Rewrites the profile block of `profile_id` (locked for the rest of the
/// transaction) as `change` makes it; a result without windows deletes it.
/// Returns whether there was a block.
pub(crate) async fn rewrite_block(
    tx: &mut PgConnection,
    profile_id: Uuid,
    change: impl FnOnce(&Profile) -> Profile,
) -> Result<bool> {
    let row: Option<(Vec<u8>,)> =
        sqlx::query_as("select block from profile_blocks where profile_id = $1 for update")
            .bind(profile_id)
            .fetch_optional(&mut *tx)
            .await?;
    let Some((bytes,)) = row else {
        return Ok(false);
    };
    let changed = super::changed_block(profile_id, &bytes, change)?;
    if changed.windows.is_empty() {
        sqlx::query("delete from profile_blocks where profile_id = $1")
            .bind(profile_id)
            .execute(&mut *tx)
            .await?;
    } else {
        sqlx::query(
            "update profile_blocks set windows = $2, samples = $3, block = $4, built_at = now()
             where profile_id = $1",
        )
        .bind(profile_id)
        .bind(changed.windows.len() as i32)
        .bind(changed.total_samples() as i64)
        .bind(changed.encode(Level::Small))
        .execute(&mut *tx)
        .await?;
    }
    Ok(true)
}
