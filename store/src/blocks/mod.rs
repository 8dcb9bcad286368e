//! Profiles read from and compacted into blocks (see migration 0015).
//!
//! A profile is its profile block (all windows compacted so far) plus the
//! windows stored since, each its own block (the agent's snapshot as
//! sent), plus, for data stored before blocks existed, windows whose
//! samples are still rows. [`load_profile`] merges the three into one
//! [`Profile`] in window order; [`compact_profile`] writes that merge back
//! as the profile block and drops what it replaced, so the next read is
//! one row.
//!
//! This module holds the decoding and merging, and the statements both
//! backends share; `legacy.rs` reads the windows stored as rows;
//! `postgres.rs` and `mysql.rs` hold the upsert of a profile block.

mod legacy;
mod mysql;
mod postgres;
mod rolled;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use odp_core::{EventKind, Snapshot};
use odp_profile::{Level, Profile, ProfileBuilder, Window};
use uuid::Uuid;

pub(crate) use legacy::frame_ids;
use legacy::LegacyRows;

use crate::cpu::{blocking, in_halves};
use crate::database::{Backend, Database};
use crate::sql::mysql_lists::{execute_any, fetch_any};
use crate::sql::{On, Sql, Tx};
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

/// [`WindowRow`] with the profile it belongs to.
#[derive(sqlx::FromRow)]
struct WindowRowWithProfile {
    profile_id: Uuid,
    #[sqlx(flatten)]
    window: WindowRow,
}

/// The columns of [`WindowRow`] of `snapshots n` (qualified, so MySQL
/// takes `sequence` unquoted).
const WINDOW_COLUMNS: &str = "n.id, n.agent_id, n.sequence, n.host, n.window_start, \
                              n.window_end, n.event, n.period, n.frequency_hz, n.block";

/// The profile block and the windows not compacted into it, in order.
#[derive(Default)]
struct Parts {
    /// The profile block, still encoded.
    block: Option<Vec<u8>>,
    /// The profile is rolled up: its compacted windows are in its
    /// service's rollups, not in a block of its own.
    rolled_up: bool,
    /// Those windows, read from the rollups ([`rolled`]).
    from_rollups: Option<Profile>,
    windows: Vec<WindowRow>,
    /// The rows of the legacy windows among `windows`.
    legacy: LegacyRows,
}

impl Parts {
    /// Groups profile blocks and uncompacted windows (in storage order)
    /// by profile.
    fn by_profile(
        blocks: Vec<(Uuid, Option<Vec<u8>>)>,
        windows: Vec<WindowRowWithProfile>,
    ) -> HashMap<Uuid, Parts> {
        let mut parts: HashMap<Uuid, Parts> = HashMap::new();
        for (id, bytes) in blocks {
            let entry = parts.entry(id).or_default();
            entry.rolled_up = bytes.is_none();
            entry.block = bytes;
        }
        for row in windows {
            parts
                .entry(row.profile_id)
                .or_default()
                .windows
                .push(row.window);
        }
        parts
    }

    /// The ids of all windows.
    fn window_ids(&self) -> Vec<i64> {
        self.windows.iter().map(|w| w.id).collect()
    }

    /// The ids of the windows whose samples are rows.
    fn legacy_ids(&self) -> Vec<i64> {
        self.windows
            .iter()
            .filter(|w| w.block.is_none())
            .map(|w| w.id)
            .collect()
    }
}

/// Every window of `profile_id` in one profile: the compacted ones first,
/// then the others in the order they were stored.
pub async fn load_profile(db: impl Into<Database>, profile_id: Uuid) -> Result<Profile> {
    let loaded = load(&db.into(), &[profile_id], true).await?;
    Ok(loaded
        .into_iter()
        .next()
        .map(|(_, profile)| profile)
        .unwrap_or_default())
}

/// [`load_profile`] of each of `profile_ids`, in a few queries whatever
/// their number (profiles without data are absent). The blocks are
/// decoded on blocking threads, two at a time.
pub async fn load_profiles(
    db: impl Into<Database>,
    profile_ids: &[Uuid],
) -> Result<Vec<(Uuid, Profile)>> {
    load(&db.into(), profile_ids, true).await
}

/// The windows of a running profile stored after window `after` (0: all
/// of them), merged into one profile, with the last one's id.
#[derive(Debug, Default)]
pub struct WindowsAfter {
    pub profile: Profile,
    /// The id to read after next time: `after` when there was nothing new.
    pub last_window: i64,
}

/// The windows of `profile_id` stored after window `after`: what a running
/// profile's detection adds to what it read before. A profile's windows
/// arrive on one partition, stored by the one worker consuming it, batch
/// after batch, so their ids grow in the order they become visible. Only
/// uncompacted windows are read: a profile is compacted once it ended,
/// and then it is read whole.
pub async fn load_windows_after(
    db: impl Into<Database>,
    profile_id: Uuid,
    after: i64,
) -> Result<WindowsAfter> {
    let db: Database = db.into();
    let windows: Vec<WindowRow> = Sql::new(format!(
        "select {WINDOW_COLUMNS} from snapshots n
         where n.profile_id = $1 and n.id > $2 and not n.compacted order by n.id"
    ))
    .bind(profile_id)
    .bind(after)
    .fetch_all(&db)
    .await?;
    let last_window = windows.last().map_or(after, |w| w.id);
    let mut parts = Parts {
        windows,
        ..Parts::default()
    };
    let legacy = parts.legacy_ids();
    if !legacy.is_empty() {
        parts.legacy = match &db {
            Database::Postgres(pool) => {
                LegacyRows::read(&mut *pool.acquire().await?, &legacy).await?
            }
            Database::MySql(pool) => LegacyRows::read(&mut *pool.acquire().await?, &legacy).await?,
        };
    }
    let profile = blocking(move || build(profile_id, parts)).await?;
    Ok(WindowsAfter {
        profile,
        last_window,
    })
}

/// The windows of `profile_ids` not compacted yet (of profiles whose
/// compacted windows are read from their service's rollups).
pub(crate) async fn load_uncompacted(
    db: impl Into<Database>,
    profile_ids: &[Uuid],
) -> Result<Vec<(Uuid, Profile)>> {
    load(&db.into(), profile_ids, false).await
}

async fn load(
    db: &Database,
    profile_ids: &[Uuid],
    with_blocks: bool,
) -> Result<Vec<(Uuid, Profile)>> {
    if profile_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut parts = read_parts_pooled(db, profile_ids, with_blocks).await?;
    let rolled_up: Vec<Uuid> = parts
        .iter()
        .filter(|(_, p)| p.rolled_up)
        .map(|(&id, _)| id)
        .collect();
    for (id, profile) in rolled::load(db, &rolled_up).await? {
        if let Some(parts) = parts.get_mut(&id) {
            parts.from_rollups = Some(profile);
        }
    }
    let mut parts: Vec<(Uuid, Parts)> = parts.into_iter().collect();
    parts.sort_by_key(|(id, _)| *id);
    in_halves(parts, |_| 1, |(id, parts)| Ok((id, build(id, parts)?))).await
}

/// [`read_parts`] on one connection of the pool, unlocked.
async fn read_parts_pooled(
    db: &Database,
    profile_ids: &[Uuid],
    with_blocks: bool,
) -> Result<HashMap<Uuid, Parts>> {
    match db {
        Database::Postgres(pool) => {
            read_parts(&mut *pool.acquire().await?, profile_ids, false, with_blocks).await
        }
        Database::MySql(pool) => {
            read_parts(&mut *pool.acquire().await?, profile_ids, false, with_blocks).await
        }
    }
}

/// The parts of `profile_ids`: their blocks (when `with_blocks`) and the
/// windows not compacted into them; locked with `lock`.
async fn read_parts<C>(
    conn: &mut C,
    profile_ids: &[Uuid],
    lock: bool,
    with_blocks: bool,
) -> Result<HashMap<Uuid, Parts>>
where
    for<'c> &'c mut C: Into<On<'c>>,
{
    let lock_clause = if lock { " for update" } else { "" };
    let blocks: Vec<(Uuid, Option<Vec<u8>>)> = if with_blocks {
        fetch_any(
            &mut *conn,
            &format!(
                "select profile_id, block from profile_blocks where profile_id = any($1)\
                 {lock_clause}"
            ),
            profile_ids,
        )
        .await?
    } else {
        Vec::new()
    };
    let mut windows: Vec<WindowRowWithProfile> = fetch_any(
        &mut *conn,
        &format!(
            "select n.profile_id, {WINDOW_COLUMNS} from snapshots n
             where n.profile_id = any($1) and not n.compacted order by n.id{lock_clause}"
        ),
        profile_ids,
    )
    .await?;
    // MySQL reads a long list in chunks, each in order: together they
    // must be too.
    windows.sort_by_key(|w| w.window.id);
    let mut parts = Parts::by_profile(blocks, windows);
    for parts in parts.values_mut() {
        let legacy = parts.legacy_ids();
        if !legacy.is_empty() {
            parts.legacy = LegacyRows::read(&mut *conn, &legacy).await?;
        }
    }
    Ok(parts)
}

/// One profile from its parts: pure CPU work.
fn build(profile_id: Uuid, mut parts: Parts) -> Result<Profile> {
    let block = match parts.from_rollups.take() {
        Some(rolled) => Some(rolled),
        None => parts
            .block
            .as_deref()
            .map(Profile::decode)
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("profile {profile_id}: {e}")))?,
    };
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
                let mut snapshot = Snapshot::decode(bytes)
                    .map_err(|e| StoreError::Corrupt(format!("window {}: {e}", window.id)))?;
                place_by_row(&mut snapshot, window);
                builder.add_snapshot(&snapshot);
            }
            None => parts.legacy.add_window(&mut builder, profile_id, window)?,
        }
    }
    Ok(builder.build())
}

/// The block is as its agent sent it, with its host's clock; the row has
/// the times the pipeline placed it at when it moved the window by the
/// host's clock offset (both ends by the same amount, of at least
/// [`crate::CLOCK_CORRECTED_FROM_MS`]). Anything else keeps the block's
/// own times.
fn place_by_row(snapshot: &mut Snapshot, row: &WindowRow) {
    let start = row.window_start.timestamp_millis();
    let shift = start - snapshot.window_start_ms;
    let pure = row.window_end.timestamp_millis() - snapshot.window_end_ms == shift;
    if pure && shift.abs() >= crate::CLOCK_CORRECTED_FROM_MS {
        snapshot.window_start_ms = start;
        snapshot.window_end_ms += shift;
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
pub async fn compact_profile(db: impl Into<Database>, profile_id: Uuid) -> Result<Compacted> {
    let db: Database = db.into();
    let mut tx = db.begin().await?;
    let mut parts = read_parts(&mut tx, &[profile_id], true, true).await?;
    let parts = parts.remove(&profile_id).unwrap_or_default();
    if parts.windows.is_empty() {
        return Ok(Compacted::default());
    }
    let ids = parts.window_ids();
    let legacy = parts.legacy_ids();
    // A profile already rolled up (its row has no block) gets its new
    // windows added to its service's rollups instead.
    let rolled_up: Option<String> = if parts.rolled_up {
        Sql::new("select service from profiles where id = $1 and service is not null")
            .bind(profile_id)
            .fetch_value(&mut tx)
            .await?
    } else {
        None
    };
    let block_bytes = match rolled_up {
        Some(service) => {
            let new_windows = blocking(move || build(profile_id, parts)).await?;
            crate::rollups::add_parts(&mut tx, rollup_parts(service, &new_windows)).await?;
            0
        }
        None => {
            let (profile, block) = compaction(profile_id, parts).await?;
            save_block(&mut tx, profile_id, &profile, &block).await?;
            block.len()
        }
    };
    execute_any(
        &mut tx,
        "update snapshots set block = null, compacted = true where id = any($1)",
        &ids,
    )
    .await?;
    // The legacy windows' rows from before blocks, now in the block.
    for table in ["samples", "snapshot_threads"] {
        if !legacy.is_empty() {
            let delete = format!("delete from {table} where snapshot_id = any($1)");
            execute_any(&mut tx, &delete, &legacy).await?;
        }
    }
    tx.commit().await?;
    Ok(Compacted {
        windows: ids.len() as u64,
        legacy_windows: legacy.len() as u64,
        block_bytes: block_bytes as u64,
    })
}

/// Writes `block` (`profile`, encoded) as the profile block of
/// `profile_id`, replacing the one stored.
pub(crate) async fn save_block(
    tx: &mut Tx,
    profile_id: Uuid,
    profile: &Profile,
    block: &[u8],
) -> Result<()> {
    let upsert = match tx {
        Tx::Postgres(_) => postgres::SAVE_BLOCK,
        Tx::MySql(_) => mysql::SAVE_BLOCK,
    };
    Sql::new(upsert)
        .bind(profile_id)
        .bind(profile.windows.len() as i32)
        .bind(profile.total_samples() as i64)
        .bind(block)
        .execute(tx)
        .await?;
    Ok(())
}

/// The profile block of a profile that is its one window `snapshot`, as
/// [`compact_profile`] would write it, and the profile it encodes: a
/// profile built from one window is the same profile merged into an
/// empty builder again, so the bytes are those compaction writes (pure
/// CPU work).
pub(crate) fn window_block(snapshot: &Snapshot) -> (Profile, Vec<u8>) {
    let profile = Profile::from_snapshot(snapshot);
    let block = encode_block(&profile);
    (profile, block)
}

/// A profile block's bytes.
fn encode_block(profile: &Profile) -> Vec<u8> {
    profile.encode(Level::Small)
}

/// The new profile block from the old one and the windows not in it yet:
/// the profile and its bytes.
async fn compaction(profile_id: Uuid, parts: Parts) -> Result<(Profile, Vec<u8>)> {
    blocking(move || {
        let profile = build(profile_id, parts)?;
        let block = encode_block(&profile);
        Ok((profile, block))
    })
    .await
}

/// The rollup parts a compaction adds to `service`'s rollups.
fn rollup_parts(service: String, new_windows: &Profile) -> crate::rollups::Parts {
    crate::rollups::by_hour(new_windows)
        .into_iter()
        .map(|(hour, part)| ((service.clone(), hour), vec![part]))
        .collect()
}

/// Profiles with windows not compacted yet that have ended at least
/// `grace` ago (by status, or for windows no profile row owns, by their
/// last window), at most `limit`, longest ended first.
///
/// A running profile keeps its windows uncompacted until it ends: a
/// continuous segment for its hour, so at 2,000 hosts up to 720,000 rows
/// belong to profiles that are not due. Grouping every uncompacted row
/// each pass made the pass cost grow with them; instead the profiles
/// holding uncompacted windows are found first, one index probe each
/// where the backend allows it (`postgres::UNCOMPACTED`,
/// `mysql::UNCOMPACTED`), and only the windows of those that ended (or
/// that no profile row owns) are read.
pub async fn profiles_to_compact(
    db: impl Into<Database>,
    grace: std::time::Duration,
    limit: i64,
) -> Result<Vec<Uuid>> {
    let db: Database = db.into();
    let uncompacted = match db.backend() {
        Backend::Postgres => postgres::UNCOMPACTED,
        Backend::MySql => mysql::UNCOMPACTED,
    };
    Sql::new(format!(
        "with {uncompacted}
         select n.profile_id
         from uncompacted u
           left join profiles p on p.id = u.profile_id
           join snapshots n on n.profile_id = u.profile_id and not n.compacted
         where u.profile_id is not null
           and (p.id is null
                or (p.status in ('finished', 'stopped', 'failed', 'expired')
                    and coalesce(p.finished_at, p.updated_at) < {{now}} - $1))
         group by n.profile_id, p.id
         having p.id is not null or max(n.window_end) < {{now}} - $1
         order by min(n.id)
         limit $2"
    ))
    .bind(grace)
    .bind(limit)
    .fetch_column(&db)
    .await
}

/// Rewrites the profile block of `profile_id` (locked for the rest of the
/// transaction) as `change` makes it; a result without windows deletes it.
/// Returns whether there was a block: a rolled-up profile has none (its
/// windows change with its service's rollups, which the caller rewrites).
pub(crate) async fn rewrite_block(
    tx: &mut Tx,
    profile_id: Uuid,
    change: impl FnOnce(&Profile) -> Profile,
) -> Result<bool> {
    let bytes: Option<Option<Vec<u8>>> =
        Sql::new("select block from profile_blocks where profile_id = $1 for update")
            .bind(profile_id)
            .fetch_value(&mut *tx)
            .await?;
    let Some(Some(bytes)) = bytes else {
        return Ok(false);
    };
    let changed = Profile::decode(&bytes)
        .map(|profile| change(&profile))
        .map_err(|e| StoreError::Corrupt(format!("profile {profile_id}: {e}")))?;
    if changed.windows.is_empty() {
        Sql::new("delete from profile_blocks where profile_id = $1")
            .bind(profile_id)
            .execute(&mut *tx)
            .await?;
    } else {
        Sql::new(
            "update profile_blocks set windows = $2, samples = $3, block = $4, built_at = {now}
             where profile_id = $1",
        )
        .bind(profile_id)
        .bind(changed.windows.len() as i32)
        .bind(changed.total_samples() as i64)
        .bind(encode_block(&changed))
        .execute(&mut *tx)
        .await?;
    }
    Ok(true)
}
