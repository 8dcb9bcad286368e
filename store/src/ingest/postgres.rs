//! Ingest on Postgres: the ownership claim as one data-modifying CTE, the
//! windows as one `UNNEST` insert that skips stored keys and returns the
//! new ones.

use std::collections::HashMap;

use odp_core::coverage::LossReason;
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
    let windows = snapshots
        .iter()
        .map(|&s| Window::of(s))
        .collect::<Result<Vec<_>>>()?;
    let mut insert = sqlx::query_as(
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
    .bind(column(&windows, |w| w.profile_id))
    .bind(column(&windows, |w| w.agent_id.as_str()))
    .bind(column(&windows, |w| w.sequence))
    .bind(column(&windows, |w| w.host.as_str()))
    .bind(column(&windows, |w| w.start))
    .bind(column(&windows, |w| w.end))
    .bind(column(&windows, |w| w.event))
    .bind(column(&windows, |w| w.period))
    .bind(column(&windows, |w| w.frequency_hz))
    .bind(column(&windows, |w| w.samples))
    // Bound as slices: a block received as it is stored is not copied.
    .bind(column(&windows, |w| &*w.block))
    .bind(column(&windows, |w| w.expected));
    for reason in 0..LossReason::ALL.len() {
        insert = insert.bind(column(&windows, |w| w.lost[reason]));
    }
    let rows: Vec<SnapshotKey> = insert.fetch_all(&mut *tx).await?;
    Ok(rows.into_iter().collect())
}

/// One array of the windows' `UNNEST` insert: `field` of each window.
fn column<'w, 'a, T>(windows: &'w [Window<'a>], field: impl Fn(&'w Window<'a>) -> T) -> Vec<T> {
    windows.iter().map(field).collect()
}
