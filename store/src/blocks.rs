//! Profiles read from and compacted into blocks (see migration 0015).
//!
//! A profile is its profile block (all windows compacted so far) plus the
//! windows stored since, each its own block (the agent's snapshot as
//! sent), plus, for data stored before blocks existed, windows whose
//! samples are still rows. [`load_profile`] merges the three into one
//! [`Profile`] in window order; [`compact_profile`] writes that merge back
//! as the profile block and drops what it replaced, so the next read is
//! one row.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use odp_core::{EventKind, Frame, Snapshot};
use odp_profile::{Level, Profile, ProfileBuilder, Window};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::{Result, StoreError};

/// A window's header row and, unless it is a legacy row, its block.
#[derive(sqlx::FromRow)]
struct WindowRow {
    id: i64,
    agent_id: String,
    sequence: i64,
    host: String,
    window_start: DateTime<Utc>,
    window_end: DateTime<Utc>,
    event: String,
    period: i64,
    frequency_hz: i32,
    block: Option<Vec<u8>>,
}

const WINDOW_COLUMNS: &str =
    "id, agent_id, sequence, host, window_start, window_end, event, period, frequency_hz, block";

/// The profile block and the windows not compacted into it, in order.
#[derive(Default)]
struct Parts {
    /// The profile block, still encoded.
    block: Option<Vec<u8>>,
    windows: Vec<WindowRow>,
    /// The rows of the legacy windows among `windows`.
    legacy: LegacyRows,
}

/// Every window of `profile_id` in one profile: the compacted ones first,
/// then the others in the order they were stored.
pub async fn load_profile(pool: &PgPool, profile_id: Uuid) -> Result<Profile> {
    let mut conn = pool.acquire().await?;
    let mut parts = read_parts(&mut conn, &[profile_id], false, true).await?;
    let parts = parts.remove(&profile_id).unwrap_or_default();
    blocking(move || build(profile_id, parts)).await
}

/// [`load_profile`] of each of `profile_ids`, in a few queries whatever
/// their number (profiles without data are absent). The blocks are
/// decoded on blocking threads, two at a time.
pub async fn load_profiles(pool: &PgPool, profile_ids: &[Uuid]) -> Result<Vec<(Uuid, Profile)>> {
    load(pool, profile_ids, true).await
}

/// The windows of `profile_ids` not compacted yet (of profiles whose
/// compacted windows are read from their service's rollups).
pub(crate) async fn load_uncompacted(
    pool: &PgPool,
    profile_ids: &[Uuid],
) -> Result<Vec<(Uuid, Profile)>> {
    load(pool, profile_ids, false).await
}

async fn load(
    pool: &PgPool,
    profile_ids: &[Uuid],
    with_blocks: bool,
) -> Result<Vec<(Uuid, Profile)>> {
    if profile_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut conn = pool.acquire().await?;
    let parts = read_parts(&mut conn, profile_ids, false, with_blocks).await?;
    drop(conn);
    let mut parts: Vec<(Uuid, Parts)> = parts.into_iter().collect();
    parts.sort_by_key(|(id, _)| *id);
    let half = parts.split_off(parts.len() / 2);
    let build_all = |parts: Vec<(Uuid, Parts)>| {
        blocking(move || {
            parts
                .into_iter()
                .map(|(id, parts)| Ok((id, build(id, parts)?)))
                .collect::<Result<Vec<_>>>()
        })
    };
    let (first, second) = tokio::join!(build_all(parts), build_all(half));
    let mut out = first?;
    out.extend(second?);
    Ok(out)
}

/// Runs CPU-bound work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::Corrupt(format!("decoding blocks failed: {e}")))?
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
    let mut parts: HashMap<Uuid, Parts> = HashMap::new();
    for (id, bytes) in blocks {
        parts.entry(id).or_default().block = Some(bytes);
    }
    let windows: Vec<(Uuid, WindowRow)> = sqlx::query_as::<_, WindowRowWithProfile>(&format!(
        "select profile_id, {WINDOW_COLUMNS} from snapshots
         where profile_id = any($1) and not compacted order by id{lock_clause}"
    ))
    .bind(profile_ids)
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|w| (w.profile_id, w.window))
    .collect();
    for (id, window) in windows {
        parts.entry(id).or_default().windows.push(window);
    }
    for parts in parts.values_mut() {
        let legacy: Vec<i64> = parts
            .windows
            .iter()
            .filter(|w| w.block.is_none())
            .map(|w| w.id)
            .collect();
        if !legacy.is_empty() {
            parts.legacy = LegacyRows::load(conn, &legacy).await?;
        }
    }
    Ok(parts)
}

#[derive(sqlx::FromRow)]
struct WindowRowWithProfile {
    profile_id: Uuid,
    #[sqlx(flatten)]
    window: WindowRow,
}

/// One profile from its parts: pure CPU work.
fn build(profile_id: Uuid, mut parts: Parts) -> Result<Profile> {
    let block = parts
        .block
        .as_deref()
        .map(Profile::decode)
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("profile {profile_id}: {e}")))?;
    if parts.windows.is_empty() {
        // Compacted whole: the block is the profile as it is.
        return Ok(block.unwrap_or_default());
    }
    let mut builder = ProfileBuilder::default();
    if let Some(block) = &block {
        builder.add_profile(block);
    }
    for window in &parts.windows {
        match &window.block {
            Some(bytes) => {
                let snapshot = Snapshot::decode(bytes)
                    .map_err(|e| StoreError::Corrupt(format!("window {}: {e}", window.id)))?;
                builder.add_snapshot(&snapshot);
            }
            None => parts.legacy.add_window(&mut builder, profile_id, window)?,
        }
    }
    Ok(builder.build())
}

/// Samples, thread names and frames of windows stored as rows.
#[derive(Default)]
struct LegacyRows {
    /// Per window id: (stack, tid, count).
    samples: HashMap<i64, Vec<(Uuid, i32, i64)>>,
    threads: HashMap<i64, Vec<(i32, String)>>,
    stacks: HashMap<Uuid, Vec<Frame>>,
}

impl LegacyRows {
    async fn load(conn: &mut PgConnection, windows: &[i64]) -> Result<LegacyRows> {
        let rows: Vec<(i64, Uuid, i32, i64)> = sqlx::query_as(
            "select snapshot_id, stack_id, tid, count from samples where snapshot_id = any($1)",
        )
        .bind(windows)
        .fetch_all(&mut *conn)
        .await?;
        let mut out = LegacyRows::default();
        for (window, stack, tid, count) in rows {
            out.samples
                .entry(window)
                .or_default()
                .push((stack, tid, count));
        }
        let threads: Vec<(i64, i32, String)> = sqlx::query_as(
            "select snapshot_id, tid, name from snapshot_threads where snapshot_id = any($1)",
        )
        .bind(windows)
        .fetch_all(&mut *conn)
        .await?;
        for (window, tid, name) in threads {
            out.threads.entry(window).or_default().push((tid, name));
        }
        let mut stack_ids: Vec<Uuid> = out.samples.values().flatten().map(|s| s.0).collect();
        stack_ids.sort_unstable();
        stack_ids.dedup();
        out.stacks = legacy_stacks(conn, &stack_ids).await?;
        Ok(out)
    }

    fn add_window(
        &mut self,
        builder: &mut ProfileBuilder,
        profile_id: Uuid,
        row: &WindowRow,
    ) -> Result<()> {
        let window = builder.window(window_of(profile_id, row)?);
        for (tid, name) in self.threads.remove(&row.id).unwrap_or_default() {
            builder.thread(window, tid as u32, name);
        }
        for (stack, tid, count) in self.samples.remove(&row.id).unwrap_or_default() {
            let frames = self.stacks.get(&stack).ok_or_else(|| {
                StoreError::Corrupt(format!("samples reference missing stack {stack}"))
            })?;
            let ids: Vec<u32> = frames.iter().map(|f| builder.frame(f)).collect();
            builder.samples(window, tid as u32, &ids, count as u64);
        }
        Ok(())
    }
}

fn window_of(profile_id: Uuid, row: &WindowRow) -> Result<Window> {
    let event: EventKind = row
        .event
        .parse()
        .map_err(|_| StoreError::Corrupt(format!("window {}: event {:?}", row.id, row.event)))?;
    Ok(Window {
        profile_id,
        host: row.host.clone(),
        agent_id: row.agent_id.clone(),
        sequence: row.sequence as u64,
        start_ms: row.window_start.timestamp_millis(),
        end_ms: row.window_end.timestamp_millis(),
        event,
        period: row.period as u64,
        frequency_hz: row.frequency_hz as u32,
    })
}

/// Stored stacks by id, with their whole frames.
async fn legacy_stacks(conn: &mut PgConnection, ids: &[Uuid]) -> Result<HashMap<Uuid, Vec<Frame>>> {
    let stacks: Vec<(Uuid, Vec<u8>)> =
        sqlx::query_as("select id, frame_ids from stacks where id = any($1)")
            .bind(ids)
            .fetch_all(&mut *conn)
            .await?;
    let mut frame_ids: Vec<Uuid> = stacks
        .iter()
        .flat_map(|(_, bytes)| bytes.chunks_exact(16))
        .map(|c| Uuid::from_slice(c).expect("16 bytes"))
        .collect();
    frame_ids.sort_unstable();
    frame_ids.dedup();
    let frames: HashMap<Uuid, Frame> =
        sqlx::query_as::<_, (Uuid, String, String, Option<String>, Option<i32>)>(
            "select id, function, module, file, line from frames where id = any($1)",
        )
        .bind(&frame_ids)
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(|(id, function, module, file, line)| {
            let line = line.map(|l| l as u32);
            (
                id,
                Frame {
                    function,
                    module,
                    file,
                    line,
                },
            )
        })
        .collect();
    stacks
        .into_iter()
        .map(|(id, bytes)| {
            if bytes.is_empty() || !bytes.len().is_multiple_of(16) {
                return Err(StoreError::Corrupt(format!(
                    "stack {id} of {} bytes",
                    bytes.len()
                )));
            }
            let path = bytes
                .chunks_exact(16)
                .map(|c| {
                    let frame = Uuid::from_slice(c).expect("16 bytes");
                    frames.get(&frame).cloned().ok_or_else(|| {
                        StoreError::Corrupt(format!("stack {id} references missing frame {frame}"))
                    })
                })
                .collect::<Result<Vec<Frame>>>()?;
            Ok((id, path))
        })
        .collect()
}

/// What [`compact_profile`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Compacted {
    /// Windows moved into the profile block.
    pub windows: u64,
    /// Of which stored as rows before blocks existed.
    pub legacy_windows: u64,
    /// The profile block's size.
    pub block_bytes: u64,
}

/// Merges the windows of `profile_id` not compacted yet into its profile
/// block, in one transaction, and drops their own blocks (and legacy
/// rows). Windows arriving meanwhile wait for the next compaction.
pub async fn compact_profile(pool: &PgPool, profile_id: Uuid) -> Result<Compacted> {
    let mut tx = pool.begin().await?;
    let mut parts = read_parts(&mut tx, &[profile_id], true, true).await?;
    let mut parts = parts.remove(&profile_id).unwrap_or_default();
    if parts.windows.is_empty() {
        return Ok(Compacted::default());
    }
    let ids: Vec<i64> = parts.windows.iter().map(|w| w.id).collect();
    let legacy: Vec<i64> = parts
        .windows
        .iter()
        .filter(|w| w.block.is_none())
        .map(|w| w.id)
        .collect();
    // A profile already rolled up gets its new windows added to its
    // service's rollups too.
    let rolled_up: Option<(String,)> = sqlx::query_as(
        "select p.service from profile_blocks b join profiles p on p.id = b.profile_id
         where b.profile_id = $1 and b.rollup = 'rolled' and p.service is not null",
    )
    .bind(profile_id)
    .fetch_optional(&mut *tx)
    .await?;
    let (profile, block, new_windows) = blocking(move || {
        let old = parts.block.take();
        let new_windows = build(profile_id, parts)?;
        let mut builder = ProfileBuilder::default();
        if let Some(old) = old {
            let old = Profile::decode(&old)
                .map_err(|e| StoreError::Corrupt(format!("profile {profile_id}: {e}")))?;
            builder.add_profile(&old);
        }
        builder.add_profile(&new_windows);
        let profile = builder.build();
        let block = profile.encode(Level::Small);
        Ok((profile, block, new_windows))
    })
    .await?;
    if let Some((service,)) = rolled_up {
        let parts = crate::rollups::by_hour(&new_windows)
            .into_iter()
            .map(|(hour, part)| ((service.clone(), hour), vec![part]))
            .collect();
        crate::rollups::add_parts(&mut tx, parts).await?;
    }
    sqlx::query(
        "insert into profile_blocks (profile_id, windows, samples, block) values ($1, $2, $3, $4)
         on conflict (profile_id) do update set windows = excluded.windows,
             samples = excluded.samples, block = excluded.block, built_at = now()",
    )
    .bind(profile_id)
    .bind(profile.windows.len() as i32)
    .bind(profile.total_samples() as i64)
    .bind(&block)
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
        block_bytes: block.len() as u64,
    })
}

/// Profiles with windows not compacted yet that have ended at least
/// `grace` ago (by status, or for windows no profile row owns, by their
/// last window), at most `limit`, longest ended first.
pub async fn profiles_to_compact(
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
    let profile = Profile::decode(&bytes)
        .map_err(|e| StoreError::Corrupt(format!("profile {profile_id}: {e}")))?;
    let changed = change(&profile);
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
