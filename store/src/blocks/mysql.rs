//! Blocks in MySQL and MariaDB: `in (?, …)` lists (chunked) for Postgres'
//! arrays, `on duplicate key update` for `on conflict`. A block is one
//! value of a statement, so the server's `max_allowed_packet` must hold
//! the largest block (see docs/mysql-schema.md).

use std::collections::HashMap;

use odp_core::Frame;
use odp_profile::{Level, Profile};
use sqlx::mysql::MySqlRow;
use sqlx::{Encode, MySql, MySqlConnection, MySqlPool, QueryBuilder, Type};
use uuid::Uuid;

use super::{
    compaction, rollup_parts, stacks_with_frames, Compacted, FrameRow, LegacyRows, Parts,
    SampleRow, ThreadRow, WindowRowWithProfile, WINDOW_COLUMNS,
};
use crate::database::push_in_list;
use crate::Result;

/// Values per `in (…)` list: far below MySQL's 65,535 placeholders.
pub(crate) const IN_LIST_CHUNK: usize = 5_000;

/// Rows of `prefix (?, …) suffix` for every chunk of `values`.
pub(crate) async fn fetch_in<'v, T, V>(
    conn: &mut MySqlConnection,
    prefix: &str,
    values: &'v [V],
    suffix: &str,
) -> Result<Vec<T>>
where
    T: for<'r> sqlx::FromRow<'r, MySqlRow> + Send + Unpin,
    V: Sync,
    &'v V: Encode<'v, MySql> + Type<MySql> + Send,
{
    let mut rows = Vec::new();
    for chunk in values.chunks(IN_LIST_CHUNK) {
        let mut query = QueryBuilder::<MySql>::new(prefix);
        push_in_list(&mut query, chunk.iter());
        query.push(suffix);
        rows.extend(query.build_query_as::<T>().fetch_all(&mut *conn).await?);
    }
    Ok(rows)
}

/// Runs `prefix (?, …) suffix` for every chunk of `values`; the rows
/// affected.
pub(crate) async fn execute_in<'v, V>(
    conn: &mut MySqlConnection,
    prefix: &str,
    values: &'v [V],
    suffix: &str,
) -> Result<u64>
where
    V: Sync,
    &'v V: Encode<'v, MySql> + Type<MySql> + Send,
{
    let mut affected = 0;
    for chunk in values.chunks(IN_LIST_CHUNK) {
        let mut query = QueryBuilder::<MySql>::new(prefix);
        push_in_list(&mut query, chunk.iter());
        query.push(suffix);
        affected += query.build().execute(&mut *conn).await?.rows_affected();
    }
    Ok(affected)
}

pub(crate) async fn read_parts_pooled(
    pool: &MySqlPool,
    profile_ids: &[Uuid],
    with_blocks: bool,
) -> Result<HashMap<Uuid, Parts>> {
    let mut conn = pool.acquire().await?;
    read_parts(&mut conn, profile_ids, false, with_blocks).await
}

/// The parts of `profile_ids`: their blocks (when `with_blocks`) and the
/// windows not compacted into them; locked with `lock`.
async fn read_parts(
    conn: &mut MySqlConnection,
    profile_ids: &[Uuid],
    lock: bool,
    with_blocks: bool,
) -> Result<HashMap<Uuid, Parts>> {
    let lock_clause = if lock { " for update" } else { "" };
    let blocks: Vec<(Uuid, Vec<u8>)> = if with_blocks {
        fetch_in(
            conn,
            "select profile_id, block from profile_blocks where profile_id in ",
            profile_ids,
            lock_clause,
        )
        .await?
    } else {
        Vec::new()
    };
    let mut windows: Vec<WindowRowWithProfile> = fetch_in(
        conn,
        &format!(
            "select n.profile_id, {WINDOW_COLUMNS} from snapshots n
             where not n.compacted and n.profile_id in "
        ),
        profile_ids,
        &format!(" order by n.id{lock_clause}"),
    )
    .await?;
    // Chunks are each in order; together they must be too.
    windows.sort_by_key(|w| w.window.id);
    let mut parts = Parts::by_profile(blocks, windows);
    for parts in parts.values_mut() {
        let legacy = parts.legacy_ids();
        if !legacy.is_empty() {
            parts.legacy = legacy_rows(conn, &legacy).await?;
        }
    }
    Ok(parts)
}

async fn legacy_rows(conn: &mut MySqlConnection, windows: &[i64]) -> Result<LegacyRows> {
    let samples: Vec<SampleRow> = fetch_in(
        conn,
        "select snapshot_id, stack_id, tid, `count` from samples where snapshot_id in ",
        windows,
        "",
    )
    .await?;
    let threads: Vec<ThreadRow> = fetch_in(
        conn,
        "select snapshot_id, tid, name from snapshot_threads where snapshot_id in ",
        windows,
        "",
    )
    .await?;
    let mut rows = LegacyRows::from_rows(samples, threads);
    rows.stacks = legacy_stacks(conn, &rows.stack_ids()).await?;
    Ok(rows)
}

/// Stored stacks by id, with their whole frames.
async fn legacy_stacks(
    conn: &mut MySqlConnection,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, Vec<Frame>>> {
    let stacks: Vec<(Uuid, Vec<u8>)> = fetch_in(
        conn,
        "select id, frame_ids from stacks where id in ",
        ids,
        "",
    )
    .await?;
    let frame_ids = super::frame_ids_of(&stacks);
    let frames: Vec<FrameRow> = fetch_in(
        conn,
        "select id, `function`, module, file, line from frames where id in ",
        &frame_ids,
        "",
    )
    .await?;
    stacks_with_frames(stacks, frames)
}

pub(crate) async fn compact_profile(pool: &MySqlPool, profile_id: Uuid) -> Result<Compacted> {
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
         where b.profile_id = ? and b.rollup = 'rolled' and p.service is not null",
    )
    .bind(profile_id)
    .fetch_optional(&mut *tx)
    .await?;
    let done = compaction(profile_id, parts).await?;
    if let Some((service,)) = rolled_up {
        crate::rollups::mysql::add_parts(&mut tx, rollup_parts(service, &done.new_windows)).await?;
    }
    sqlx::query(
        "insert into profile_blocks (profile_id, windows, samples, block) values (?, ?, ?, ?)
         on duplicate key update windows = values(windows), samples = values(samples),
             block = values(block), built_at = now(6)",
    )
    .bind(profile_id)
    .bind(done.profile.windows.len() as i32)
    .bind(done.profile.total_samples() as i64)
    .bind(&done.block)
    .execute(&mut *tx)
    .await?;
    execute_in(
        &mut tx,
        "update snapshots set block = null, compacted = true where id in ",
        &ids,
        "",
    )
    .await?;
    if !legacy.is_empty() {
        execute_in(
            &mut tx,
            "delete from samples where snapshot_id in ",
            &legacy,
            "",
        )
        .await?;
        execute_in(
            &mut tx,
            "delete from snapshot_threads where snapshot_id in ",
            &legacy,
            "",
        )
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
    pool: &MySqlPool,
    grace: std::time::Duration,
    limit: i64,
) -> Result<Vec<Uuid>> {
    let grace_us = i64::try_from(grace.as_micros()).unwrap_or(i64::MAX);
    let rows: Vec<(Uuid,)> = sqlx::query_as(
        "select n.profile_id
         from snapshots n left join profiles p on p.id = n.profile_id
         where not n.compacted
         group by n.profile_id, p.id, p.status, p.finished_at, p.updated_at
         having (p.id is null and max(n.window_end) < now(6) - interval ? microsecond)
             or (p.status in ('finished', 'stopped', 'failed', 'expired')
                 and coalesce(p.finished_at, p.updated_at) < now(6) - interval ? microsecond)
         order by min(n.id)
         limit ?",
    )
    .bind(grace_us)
    .bind(grace_us)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// Rewrites the profile block of `profile_id` (locked for the rest of the
/// transaction) as `change` makes it; a result without windows deletes it.
/// Returns whether there was a block.
pub(crate) async fn rewrite_block(
    tx: &mut MySqlConnection,
    profile_id: Uuid,
    change: impl FnOnce(&Profile) -> Profile,
) -> Result<bool> {
    let row: Option<(Vec<u8>,)> =
        sqlx::query_as("select block from profile_blocks where profile_id = ? for update")
            .bind(profile_id)
            .fetch_optional(&mut *tx)
            .await?;
    let Some((bytes,)) = row else {
        return Ok(false);
    };
    let changed = super::changed_block(profile_id, &bytes, change)?;
    if changed.windows.is_empty() {
        sqlx::query("delete from profile_blocks where profile_id = ?")
            .bind(profile_id)
            .execute(&mut *tx)
            .await?;
    } else {
        sqlx::query(
            "update profile_blocks set windows = ?, samples = ?, block = ?, built_at = now(6)
             where profile_id = ?",
        )
        .bind(changed.windows.len() as i32)
        .bind(changed.total_samples() as i64)
        .bind(changed.encode(Level::Small))
        .bind(profile_id)
        .execute(&mut *tx)
        .await?;
    }
    Ok(true)
}
