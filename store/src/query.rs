//! Read side: a profile's stacks, resolved to frame names.

use std::collections::HashMap;

use odp_core::WeightedStack;
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

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

/// All samples of a profile merged across windows and hosts.
pub async fn profile_stacks(pool: &PgPool, profile_id: Uuid) -> Result<ProfileStacks> {
    let (event, snapshots): (Option<String>, i64) = sqlx::query_as(
        "select (array_agg(event order by id))[1], count(*) from snapshots where profile_id = $1",
    )
    .bind(profile_id)
    .fetch_one(pool)
    .await?;
    let counts: Vec<(Uuid, i64)> = sqlx::query_as(
        "select s.stack_id, sum(s.count)::bigint
         from samples s join snapshots n on n.id = s.snapshot_id
         where n.profile_id = $1 and n.event = $2
         group by s.stack_id",
    )
    .bind(profile_id)
    .bind(&event)
    .fetch_all(pool)
    .await?;
    let stack_ids: Vec<Uuid> = counts.iter().map(|(id, _)| *id).collect();
    let stack_rows: Vec<(Uuid, Vec<u8>)> =
        sqlx::query_as("select id, frame_ids from stacks where id = any($1)")
            .bind(&stack_ids)
            .fetch_all(pool)
            .await?;
    let mut frame_ids: Vec<Uuid> = Vec::new();
    let mut stacks_by_id: HashMap<Uuid, Vec<Uuid>> = HashMap::with_capacity(stack_rows.len());
    for (id, bytes) in stack_rows {
        let ids = split_frame_ids(&bytes)?;
        frame_ids.extend(&ids);
        stacks_by_id.insert(id, ids);
    }
    frame_ids.sort_unstable();
    frame_ids.dedup();
    let frames: HashMap<Uuid, String> = sqlx::query_as::<_, (Uuid, String, String)>(
        "select id, function, module from frames where id = any($1)",
    )
    .bind(&frame_ids)
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|(id, function, module)| (id, odp_core::model::display_name(&function, &module)))
    .collect();

    let mut stacks = Vec::with_capacity(counts.len());
    let mut samples = 0u64;
    for (stack_id, count) in counts {
        let ids = stacks_by_id.get(&stack_id).ok_or_else(|| {
            StoreError::Corrupt(format!("samples reference missing stack {stack_id}"))
        })?;
        let names = ids
            .iter()
            .map(|id| {
                frames.get(id).cloned().ok_or_else(|| {
                    StoreError::Corrupt(format!("stack {stack_id} references missing frame {id}"))
                })
            })
            .collect::<Result<Vec<String>>>()?;
        let count = u64::try_from(count)
            .map_err(|_| StoreError::Corrupt(format!("negative count for stack {stack_id}")))?;
        samples += count;
        stacks.push(WeightedStack {
            frames: names,
            count,
        });
    }
    Ok(ProfileStacks {
        event,
        snapshots,
        samples,
        stacks,
    })
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
