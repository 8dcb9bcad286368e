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
//! This module holds the decoding and merging; `postgres.rs` and
//! `mysql.rs` hold each backend's SQL.

pub(crate) mod mysql;
pub(crate) mod postgres;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use odp_core::{EventKind, Frame, Snapshot};
use odp_profile::{Level, Profile, ProfileBuilder, Window};
use uuid::Uuid;

use crate::database::{on_backend, Database};
use crate::{Result, StoreError};

/// A window's header row and, unless it is a legacy row, its block.
#[derive(sqlx::FromRow)]
pub(crate) struct WindowRow {
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
pub(crate) struct WindowRowWithProfile {
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
pub(crate) struct Parts {
    /// The profile block, still encoded.
    block: Option<Vec<u8>>,
    windows: Vec<WindowRow>,
    /// The rows of the legacy windows among `windows`.
    legacy: LegacyRows,
}

impl Parts {
    /// Groups profile blocks and uncompacted windows (in storage order)
    /// by profile.
    fn by_profile(
        blocks: Vec<(Uuid, Vec<u8>)>,
        windows: Vec<WindowRowWithProfile>,
    ) -> HashMap<Uuid, Parts> {
        let mut parts: HashMap<Uuid, Parts> = HashMap::new();
        for (id, bytes) in blocks {
            parts.entry(id).or_default().block = Some(bytes);
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
    let db = db.into();
    let mut parts = on_backend!(db, read_parts_pooled(&[profile_id], true))?;
    let parts = parts.remove(&profile_id).unwrap_or_default();
    blocking(move || build(profile_id, parts)).await
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
    let parts = on_backend!(db, read_parts_pooled(profile_ids, with_blocks))?;
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
pub(crate) struct LegacyRows {
    /// Per window id: (stack, tid, count).
    samples: HashMap<i64, Vec<(Uuid, i32, i64)>>,
    threads: HashMap<i64, Vec<(i32, String)>>,
    stacks: HashMap<Uuid, Vec<Frame>>,
}

/// A legacy `samples` row: window, stack, tid, count.
pub(crate) type SampleRow = (i64, Uuid, i32, i64);
/// A legacy `snapshot_threads` row: window, tid, name.
pub(crate) type ThreadRow = (i64, i32, String);
/// A `frames` row: id, function, module, file, line.
pub(crate) type FrameRow = (Uuid, String, String, Option<String>, Option<i32>);

impl LegacyRows {
    /// The rows' samples and thread names by window (stacks come later,
    /// from [`LegacyRows::stack_ids`]).
    fn from_rows(samples: Vec<SampleRow>, threads: Vec<ThreadRow>) -> LegacyRows {
        let mut out = LegacyRows::default();
        for (window, stack, tid, count) in samples {
            out.samples
                .entry(window)
                .or_default()
                .push((stack, tid, count));
        }
        for (window, tid, name) in threads {
            out.threads.entry(window).or_default().push((tid, name));
        }
        out
    }

    /// The distinct stacks the samples reference.
    fn stack_ids(&self) -> Vec<Uuid> {
        let mut ids: Vec<Uuid> = self.samples.values().flatten().map(|s| s.0).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
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

/// The distinct frame ids of stored stacks (`frame_ids` bytes).
fn frame_ids_of(stacks: &[(Uuid, Vec<u8>)]) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = stacks
        .iter()
        .flat_map(|(_, bytes)| bytes.chunks_exact(16))
        .map(|c| Uuid::from_slice(c).expect("16 bytes"))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Stored stacks with their whole frames.
fn stacks_with_frames(
    stacks: Vec<(Uuid, Vec<u8>)>,
    frames: Vec<FrameRow>,
) -> Result<HashMap<Uuid, Vec<Frame>>> {
    let frames: HashMap<Uuid, Frame> = frames
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
pub async fn compact_profile(db: impl Into<Database>, profile_id: Uuid) -> Result<Compacted> {
    let db = db.into();
    on_backend!(db, compact_profile(profile_id))
}

/// A compaction computed from a profile's locked parts.
struct Compaction {
    /// The profile block to write: old block plus new windows.
    profile: Profile,
    /// `profile`, encoded.
    block: Vec<u8>,
    /// Only the windows compacted now (for the service's rollups).
    new_windows: Profile,
}

/// The new profile block from the old one and the windows not in it yet.
async fn compaction(profile_id: Uuid, mut parts: Parts) -> Result<Compaction> {
    blocking(move || {
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
        Ok(Compaction {
            profile,
            block,
            new_windows,
        })
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
pub async fn profiles_to_compact(
    db: impl Into<Database>,
    grace: std::time::Duration,
    limit: i64,
) -> Result<Vec<Uuid>> {
    let db = db.into();
    on_backend!(db, profiles_to_compact(grace, limit))
}

/// `bytes` decoded as a profile block and changed by `change`.
fn changed_block(
    profile_id: Uuid,
    bytes: &[u8],
    change: impl FnOnce(&Profile) -> Profile,
) -> Result<Profile> {
    let profile = Profile::decode(bytes)
        .map_err(|e| StoreError::Corrupt(format!("profile {profile_id}: {e}")))?;
    Ok(change(&profile))
}
