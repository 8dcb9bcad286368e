//! Bulk ingest of snapshots: one row per agent window, holding the
//! window's block (the snapshot as the agent sent it: frames deduplicated,
//! LZ4), one `UNNEST` insert and one transaction per batch. Windows
//! already stored are skipped, so a redelivery changes nothing; a profile's
//! windows from any agent but its owner are refused ([`ownership`]). Once
//! the profile ends, its windows are compacted into one profile block
//! (`crate::blocks`).

mod ownership;

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use odp_core::Snapshot;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{Result, StoreError};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IngestOutcome {
    /// Snapshots stored by this call.
    pub stored: usize,
    /// Snapshots already stored before (same agent, profile and sequence),
    /// ignored.
    pub duplicates: usize,
    pub samples: u64,
    /// Snapshots of profiles that belong to another agent, not stored.
    pub foreign: Vec<ForeignSnapshot>,
}

/// A snapshot refused because its profile belongs to another agent: the
/// one that first acknowledged it ([`ownership`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignSnapshot {
    pub agent_id: String,
    pub profile_id: Uuid,
    pub sequence: u64,
    pub owner: String,
}

impl ForeignSnapshot {
    /// Why it was refused, for the dead-letter topic.
    pub fn reason(&self) -> String {
        format!(
            "profile {} belongs to agent {}, which acknowledged it first; \
             snapshot {} from agent {} refused",
            self.profile_id, self.owner, self.sequence, self.agent_id
        )
    }
}

/// Stores a batch of snapshots in one transaction. Snapshots already stored
/// are skipped, so redelivered messages change nothing.
pub async fn store_snapshots(pool: &PgPool, snapshots: &[&Snapshot]) -> Result<IngestOutcome> {
    let mut outcome = IngestOutcome::default();
    // Duplicates inside one batch (a redelivery racing the original).
    let mut unique: BTreeMap<(&str, Uuid, u64), &Snapshot> = BTreeMap::new();
    for &s in snapshots {
        if unique
            .insert((s.agent_id.as_str(), s.profile_id, s.sequence), s)
            .is_some()
        {
            outcome.duplicates += 1;
        }
    }
    let snapshots: Vec<&Snapshot> = unique.into_values().collect();
    if snapshots.is_empty() {
        return Ok(outcome);
    }

    let started = std::time::Instant::now();
    let mut tx = pool.begin().await?;
    let owners = ownership::claim(&mut tx, &snapshots).await?;
    let (snapshots, foreign) = ownership::split(snapshots, &owners);
    outcome.foreign = foreign;
    if snapshots.is_empty() {
        tx.commit().await?;
        return Ok(outcome);
    }
    let stored = insert_windows(&mut tx, &snapshots).await?;
    outcome.duplicates += snapshots.len() - stored.len();
    outcome.stored = stored.len();
    outcome.samples = snapshots
        .iter()
        .filter(|s| stored.contains(&(s.agent_id.clone(), s.profile_id, s.sequence as i64)))
        .map(|s| s.total_samples())
        .fold(0u64, u64::saturating_add);
    let inserted_at = started.elapsed();
    tx.commit().await?;
    tracing::debug!(
        snapshots = snapshots.len(),
        insert_ms = ms(inserted_at),
        commit_ms = ms(started.elapsed() - inserted_at),
        "batch written"
    );
    Ok(outcome)
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

type SnapshotKey = (String, Uuid, i64);

/// Inserts the windows, each with its block (the snapshot as the agent
/// sent it), skipping those already stored; returns the keys of the new
/// ones.
async fn insert_windows(
    tx: &mut sqlx::PgConnection,
    snapshots: &[&Snapshot],
) -> Result<HashSet<SnapshotKey>> {
    let to_time = |ms: i64| {
        DateTime::<Utc>::from_timestamp_millis(ms)
            .ok_or_else(|| StoreError::Corrupt(format!("timestamp {ms} ms out of range")))
    };
    let mut columns = WindowColumns::default();
    for s in snapshots {
        columns.profile_ids.push(s.profile_id);
        columns.agent_ids.push(s.agent_id.clone());
        columns.sequences.push(
            i64::try_from(s.sequence).map_err(|_| {
                StoreError::Corrupt(format!("sequence {} out of range", s.sequence))
            })?,
        );
        columns.hosts.push(s.host.clone());
        columns.starts.push(to_time(s.window_start_ms)?);
        columns.ends.push(to_time(s.window_end_ms)?);
        columns.events.push(s.event.as_str());
        columns.periods.push(
            i64::try_from(s.period)
                .map_err(|_| StoreError::Corrupt(format!("period {} out of range", s.period)))?,
        );
        columns
            .frequencies
            .push(i32::try_from(s.frequency_hz).map_err(|_| {
                StoreError::Corrupt(format!("frequency {} out of range", s.frequency_hz))
            })?);
        columns
            .sample_totals
            .push(i64::try_from(s.total_samples()).unwrap_or(i64::MAX));
        columns.blocks.push(s.encode());
    }
    let rows: Vec<(String, Uuid, i64)> = sqlx::query_as(
        "insert into snapshots (profile_id, agent_id, sequence, host, window_start, window_end,
                                event, period, frequency_hz, samples, block)
         select * from unnest($1::uuid[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[],
                              $6::timestamptz[], $7::text[], $8::bigint[], $9::int[], $10::bigint[],
                              $11::bytea[])
         on conflict (agent_id, profile_id, sequence) do nothing
         returning agent_id, profile_id, sequence",
    )
    .bind(&columns.profile_ids)
    .bind(&columns.agent_ids)
    .bind(&columns.sequences)
    .bind(&columns.hosts)
    .bind(&columns.starts)
    .bind(&columns.ends)
    .bind(&columns.events)
    .bind(&columns.periods)
    .bind(&columns.frequencies)
    .bind(&columns.sample_totals)
    .bind(&columns.blocks)
    .fetch_all(&mut *tx)
    .await?;
    Ok(rows.into_iter().collect())
}

/// One array per column of the windows' `UNNEST` insert.
#[derive(Default)]
struct WindowColumns {
    profile_ids: Vec<Uuid>,
    agent_ids: Vec<String>,
    sequences: Vec<i64>,
    hosts: Vec<String>,
    starts: Vec<DateTime<Utc>>,
    ends: Vec<DateTime<Utc>>,
    events: Vec<&'static str>,
    periods: Vec<i64>,
    frequencies: Vec<i32>,
    sample_totals: Vec<i64>,
    blocks: Vec<Vec<u8>>,
}
