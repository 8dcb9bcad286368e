//! A profile's samples merged across its windows: as stacks by name (what
//! exports and tests compare) and as frames and stacks with ids (what
//! detection rules match).

mod mysql;
mod postgres;

use std::collections::HashMap;

use odp_core::WeightedStack;
use odp_profile::ProfileFrames;
use serde::Serialize;
use uuid::Uuid;

use crate::blocks::load_profile;
use crate::database::{on_backend, Database};
use crate::read::{read, Read};
use crate::{Result, StoreError};

#[derive(Debug, Clone, Serialize)]
pub struct ProfileStacks {
    /// The event the samples measure (the first one stored when, unusually,
    /// a profile reported several).
    pub event: Option<odp_core::EventKind>,
    pub snapshots: i64,
    pub samples: u64,
    pub stacks: Vec<WeightedStack>,
}

/// All samples of a profile merged across windows and hosts.
pub async fn profile_stacks(db: impl Into<Database>, profile_id: Uuid) -> Result<ProfileStacks> {
    let result = read(db, &Read::profile(profile_id)).await?;
    Ok(ProfileStacks {
        event: result.event,
        snapshots: result.snapshots,
        samples: result.samples(),
        stacks: result.stacks(),
    })
}

/// All samples of a profile (of its first event), weighted by period,
/// per distinct stack of whole frames.
pub async fn profile_frames(db: impl Into<Database>, profile_id: Uuid) -> Result<ProfileFrames> {
    Ok(ProfileFrames::of(load_profile(db, profile_id).await?))
}

/// The frame ids of each stack stored as rows (before blocks), root first.
pub(crate) async fn stack_frame_ids(
    db: impl Into<Database>,
    stack_ids: &[Uuid],
) -> Result<HashMap<Uuid, Vec<Uuid>>> {
    let db = db.into();
    let rows = on_backend!(db, stacks(stack_ids))?;
    rows.into_iter()
        .map(|(id, bytes)| Ok((id, split_frame_ids(&bytes)?)))
        .collect()
}

/// Display names of frames stored as rows, by id.
pub(crate) async fn frame_names(
    db: impl Into<Database>,
    frame_ids: &[Uuid],
) -> Result<HashMap<Uuid, String>> {
    let db = db.into();
    let rows = on_backend!(db, frames(frame_ids))?;
    Ok(rows
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
