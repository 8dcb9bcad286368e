//! A profile's samples merged across its windows: as stacks by name (what
//! exports and tests compare) and as frames and stacks with ids (what
//! detection rules match).

use std::collections::HashMap;

use odp_core::WeightedStack;
use odp_profile::ProfileFrames;
use serde::Serialize;
use uuid::Uuid;

use crate::blocks::{frame_ids, load_profile};
use crate::database::Database;
use crate::read::{read, Read};
use crate::sql::mysql_lists::fetch_any;
use crate::Result;

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
    let db: Database = db.into();
    let rows: Vec<(Uuid, Vec<u8>)> = fetch_any(
        &db,
        "select id, frame_ids from stacks where id = any($1)",
        stack_ids,
    )
    .await?;
    rows.into_iter()
        .map(|(id, bytes)| Ok((id, frame_ids(id, &bytes)?)))
        .collect()
}

/// Display names of frames stored as rows, by id.
pub(crate) async fn frame_names(
    db: impl Into<Database>,
    frame_ids: &[Uuid],
) -> Result<HashMap<Uuid, String>> {
    let db: Database = db.into();
    // Qualified, so MySQL takes `function` unquoted.
    let rows: Vec<(Uuid, String, String)> = fetch_any(
        &db,
        "select f.id, f.function, f.module from frames f where f.id = any($1)",
        frame_ids,
    )
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, function, module)| (id, odp_core::model::display_name(&function, &module)))
        .collect())
}
