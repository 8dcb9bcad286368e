//! Ingest on Postgres: the ownership claim as one data-modifying CTE, the
//! windows as one `UNNEST` insert that skips stored keys and returns the
//! new ones.

use std::borrow::Cow;
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{ownership, SnapshotKey, SnapshotToStore, Window, Written};
use crate::Result;

pub(super) async fn write_batch(
    pool: &PgPool,
    snapshots: &[SnapshotToStore<'_>],
) -> Result<Written> {
    let mut tx = pool.begin().await?;
    let mut owners = claim(&mut tx, snapshots).await?;
    ownership::take_over(&mut *tx, snapshots, &mut owners).await?;
    let (kept, foreign) = ownership::split(snapshots.to_vec(), &owners);
    let stored = if kept.is_empty() {
        Default::default()
    } else {
        insert_windows(&mut tx, &kept).await?
    };
    tx.commit().await?;
    Ok(Written {
        foreign,
        kept: kept.len(),
        stored,
    })
}

/// Claims each unowned profile of the batch for the agent of its earliest
/// window, and returns the owner of every owned profile of the batch.
async fn claim(
    tx: &mut PgConnection,
    snapshots: &[SnapshotToStore<'_>],
) -> Result<HashMap<Uuid, String>> {
    let (profiles, agents): (Vec<Uuid>, Vec<&str>) =
        ownership::first_offers(snapshots).into_iter().unzip();
    // The outer select sees the rows as they were before the update, so a
    // profile claimed here reads its owner from `claimed`.
    let owners: Vec<(Uuid, String)> = sqlx::query_as(
        "with offered as (
             select * from unnest($1::uuid[], $2::text[]) as o(profile_id, agent_id)
         ), claimed as (
             update profiles p set agent_id = o.agent_id
             from offered o
             where p.id = o.profile_id and p.agent_id is null
             returning p.id, p.agent_id
         )
         select p.id, coalesce(c.agent_id, p.agent_id)
         from profiles p left join claimed c on c.id = p.id
         where p.id = any($1) and coalesce(c.agent_id, p.agent_id) is not null",
    )
    .bind(&profiles)
    .bind(&agents)
    .fetch_all(&mut *tx)
    .await?;
    Ok(owners.into_iter().collect())
}

/// Inserts the windows, each with its block, skipping those already
/// stored; returns the keys of the new ones.
async fn insert_windows(
    tx: &mut PgConnection,
    snapshots: &[SnapshotToStore<'_>],
) -> Result<std::collections::HashSet<SnapshotKey>> {
    let mut columns = WindowColumns::default();
    for &s in snapshots {
        columns.push(Window::of(s)?);
    }
    let blocks: Vec<&[u8]> = columns.blocks.iter().map(|b| &**b).collect();
    let rows: Vec<SnapshotKey> = sqlx::query_as(
        "insert into snapshots (profile_id, agent_id, sequence, host, window_start, window_end,
                                event, period, frequency_hz, samples, block, expected_samples,
                                lost_overflow, lost_throttled, lost_paused, lost_undiscovered,
                                lost_transport)
         select * from unnest($1::uuid[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[],
                              $6::timestamptz[], $7::text[], $8::bigint[], $9::int[], $10::bigint[],
                              $11::bytea[], $12::bigint[], $13::bigint[], $14::bigint[],
                              $15::bigint[], $16::bigint[], $17::bigint[])
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
    .bind(&blocks)
    .bind(&columns.expected)
    .bind(&columns.lost[0])
    .bind(&columns.lost[1])
    .bind(&columns.lost[2])
    .bind(&columns.lost[3])
    .bind(&columns.lost[4])
    .fetch_all(&mut *tx)
    .await?;
    Ok(rows.into_iter().collect())
}

/// One array per column of the windows' `UNNEST` insert.
#[derive(Default)]
struct WindowColumns<'a> {
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
    /// Bound as slices: a block received as it is stored is not copied.
    blocks: Vec<Cow<'a, [u8]>>,
    expected: Vec<Option<i64>>,
    /// One column per loss reason.
    lost: [Vec<i64>; 5],
}

impl<'a> WindowColumns<'a> {
    fn push(&mut self, w: Window<'a>) {
        self.profile_ids.push(w.profile_id);
        self.agent_ids.push(w.agent_id);
        self.sequences.push(w.sequence);
        self.hosts.push(w.host);
        self.starts.push(w.start);
        self.ends.push(w.end);
        self.events.push(w.event);
        self.periods.push(w.period);
        self.frequencies.push(w.frequency_hz);
        self.sample_totals.push(w.samples);
        self.blocks.push(w.block);
        self.expected.push(w.expected);
        for (column, samples) in self.lost.iter_mut().zip(w.lost) {
            column.push(samples);
        }
    }
}
