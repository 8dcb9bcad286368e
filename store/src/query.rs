//! Read side: a profile's stacks, resolved to frames.

use std::collections::HashMap;

use odp_core::WeightedStack;
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use crate::weighting::{weighted_counts, MergedCount, MERGED_COUNT_COLUMNS};
use crate::{Result, StoreError};

#[derive(Debug, Clone, Serialize)]
pub struct ProfileStacks {
    /// The event the samples measure (the first one stored when, unusually,
    /// a profile reported several).
    pub event: Option<String>,
    pub snapshots: i64,
    pub samples: u64,
    pub stacks: Vec<WeightedStack>,
}

/// One distinct frame of a profile, as detection rules match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRef {
    pub function: String,
    pub module: String,
}

/// One distinct stack of a profile with its merged count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackSamples {
    pub stack_id: Uuid,
    /// Indexes into [`ProfileFrames::frames`], root first.
    pub frames: Vec<u32>,
    pub count: u64,
}

/// A profile's samples merged per stack across windows and hosts, frames
/// deduplicated: the input of issue detection.
#[derive(Debug, Clone, Default)]
pub struct ProfileFrames {
    pub event: Option<String>,
    pub snapshots: i64,
    pub samples: u64,
    pub frames: Vec<FrameRef>,
    pub stacks: Vec<StackSamples>,
}

/// All samples of a profile merged across windows and hosts.
pub async fn profile_stacks(pool: &PgPool, profile_id: Uuid) -> Result<ProfileStacks> {
    let data = profile_frames(pool, profile_id).await?;
    let names: Vec<String> = data
        .frames
        .iter()
        .map(|f| odp_core::model::display_name(&f.function, &f.module))
        .collect();
    let stacks = data
        .stacks
        .iter()
        .map(|s| WeightedStack {
            frames: s
                .frames
                .iter()
                .map(|&i| names[i as usize].clone())
                .collect(),
            count: s.count,
        })
        .collect();
    Ok(ProfileStacks {
        event: data.event,
        snapshots: data.snapshots,
        samples: data.samples,
        stacks,
    })
}

/// All samples of a profile aggregated per stack in one query, with the
/// stacks' frames resolved once each.
pub async fn profile_frames(pool: &PgPool, profile_id: Uuid) -> Result<ProfileFrames> {
    let (event, snapshots): (Option<String>, i64) = sqlx::query_as(
        "select (array_agg(event order by id))[1], count(*) from snapshots where profile_id = $1",
    )
    .bind(profile_id)
    .fetch_one(pool)
    .await?;
    let rows: Vec<(Uuid, i64, f64, i64, i64)> = sqlx::query_as(&format!(
        "select s.stack_id, {MERGED_COUNT_COLUMNS}
         from samples s join snapshots n on n.id = s.snapshot_id
         where n.profile_id = $1 and n.event = $2
         group by s.stack_id"
    ))
    .bind(profile_id)
    .bind(&event)
    .fetch_all(pool)
    .await?;
    let stack_ids: Vec<Uuid> = rows.iter().map(|r| r.0).collect();
    let merged: Vec<MergedCount> = rows.iter().map(|r| (r.1, r.2, r.3, r.4).into()).collect();
    let counts = weighted_counts(&merged)?;
    let resolved = resolve_stacks(pool, &stack_ids).await?;
    let mut stacks = Vec::with_capacity(counts.len());
    let mut samples = 0u64;
    for (stack_id, count) in stack_ids.into_iter().zip(counts) {
        let frames = resolved.frames_of(stack_id)?.to_vec();
        samples += count;
        stacks.push(StackSamples {
            stack_id,
            frames,
            count,
        });
    }
    let frames = resolved.frames;
    Ok(ProfileFrames {
        event,
        snapshots,
        samples,
        frames,
        stacks,
    })
}

/// Stacks resolved to deduplicated frames: what every read query shares.
pub(crate) struct ResolvedStacks {
    pub(crate) frames: Vec<FrameRef>,
    /// Per stack, indexes into `frames`, root first.
    by_stack: HashMap<Uuid, Vec<u32>>,
}

impl ResolvedStacks {
    pub(crate) fn frames_of(&self, stack_id: Uuid) -> Result<&[u32]> {
        self.by_stack
            .get(&stack_id)
            .map(Vec::as_slice)
            .ok_or_else(|| {
                StoreError::Corrupt(format!("samples reference missing stack {stack_id}"))
            })
    }

    /// Display names of the frames, by index.
    pub(crate) fn display_names(&self) -> Vec<String> {
        self.frames
            .iter()
            .map(|f| odp_core::model::display_name(&f.function, &f.module))
            .collect()
    }
}

/// Resolves stacks to frames in two queries (stacks, then their distinct
/// frames), each frame loaded once however many stacks share it.
pub(crate) async fn resolve_stacks(pool: &PgPool, stack_ids: &[Uuid]) -> Result<ResolvedStacks> {
    let stacks_by_id = stack_frame_ids(pool, stack_ids).await?;
    let mut frame_ids: Vec<Uuid> = stacks_by_id.values().flatten().copied().collect();
    frame_ids.sort_unstable();
    frame_ids.dedup();
    let rows: Vec<(Uuid, String, String)> =
        sqlx::query_as("select id, function, module from frames where id = any($1)")
            .bind(&frame_ids)
            .fetch_all(pool)
            .await?;
    let mut index: HashMap<Uuid, u32> = HashMap::with_capacity(rows.len());
    let mut frames = Vec::with_capacity(rows.len());
    for (id, function, module) in rows {
        index.insert(id, frames.len() as u32);
        frames.push(FrameRef { function, module });
    }
    let by_stack = stacks_by_id
        .into_iter()
        .map(|(stack_id, ids)| {
            let indexes = ids
                .iter()
                .map(|id| {
                    index.get(id).copied().ok_or_else(|| {
                        StoreError::Corrupt(format!(
                            "stack {stack_id} references missing frame {id}"
                        ))
                    })
                })
                .collect::<Result<Vec<u32>>>()?;
            Ok((stack_id, indexes))
        })
        .collect::<Result<HashMap<Uuid, Vec<u32>>>>()?;
    Ok(ResolvedStacks { frames, by_stack })
}

/// The frame ids of each stack, root first.
pub(crate) async fn stack_frame_ids(
    pool: &PgPool,
    stack_ids: &[Uuid],
) -> Result<HashMap<Uuid, Vec<Uuid>>> {
    let rows: Vec<(Uuid, Vec<u8>)> =
        sqlx::query_as("select id, frame_ids from stacks where id = any($1)")
            .bind(stack_ids)
            .fetch_all(pool)
            .await?;
    rows.into_iter()
        .map(|(id, bytes)| Ok((id, split_frame_ids(&bytes)?)))
        .collect()
}

/// Display names of frames by id.
pub(crate) async fn frame_names(
    pool: &PgPool,
    frame_ids: &[Uuid],
) -> Result<HashMap<Uuid, String>> {
    Ok(sqlx::query_as::<_, (Uuid, String, String)>(
        "select id, function, module from frames where id = any($1)",
    )
    .bind(frame_ids)
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|(id, function, module)| (id, odp_core::model::display_name(&function, &module)))
    .collect())
}

fn split_frame_ids(bytes: &[u8]) -> Result<Vec<Uuid>> {
    if bytes.is_empty() || !bytes.len().is_multiple_of(16) {
        return Err(StoreError::Corrupt(format!(
            "stack frame list of {} bytes",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(16)
        .map(|c| Uuid::from_slice(c).expect("chunks are 16 bytes"))
        .collect())
}
