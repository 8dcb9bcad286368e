//! Ingest on Postgres: the ownership claim as one data-modifying CTE, the
//! windows as one `UNNEST` insert that skips stored keys and returns the
//! new ones.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use odp_core::Snapshot;
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;
use sqlx::{PgConnection, PgPool, Postgres};
use uuid::Uuid;

use super::{ownership, SnapshotKey, Window, Written};
use crate::Result;

pub(super) async fn write_batch(pool: &PgPool, snapshots: &[&Snapshot]) -> Result<Written> {
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
async fn claim(tx: &mut PgConnection, snapshots: &[&Snapshot]) -> Result<HashMap<Uuid, String>> {
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
    snapshots: &[&Snapshot],
) -> Result<std::collections::HashSet<SnapshotKey>> {
    let mut columns = WindowColumns::default();
    for s in snapshots {
        columns.push(Window::of(s)?);
    }
    let rows: Vec<SnapshotKey> = columns
        .bind(sqlx::query_as(
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
        ))
        .fetch_all(&mut *tx)
        .await?;
    Ok(rows.into_iter().collect())
}

/// Declares [`WindowColumns`], one array per column of the windows'
/// `UNNEST` insert, from one list of its columns in the statement's order
/// (each with its element type and the [`Window`] field it takes), so the
/// arrays, what fills them and what binds them cannot disagree.
macro_rules! window_columns {
    ($($column:ident: $type:ty = $field:ident,)*) => {
        #[derive(Default)]
        struct WindowColumns {
            $($column: Vec<$type>,)*
            /// One column per loss reason.
            lost: [Vec<i64>; 5],
        }

        impl WindowColumns {
            fn push(&mut self, w: Window) {
                $(self.$column.push(w.$field);)*
                for (column, samples) in self.lost.iter_mut().zip(w.lost) {
                    column.push(samples);
                }
            }

            /// Binds the arrays to `query`'s parameters, in column order.
            fn bind<'q, O>(
                &'q self,
                query: QueryAs<'q, Postgres, O, PgArguments>,
            ) -> QueryAs<'q, Postgres, O, PgArguments> {
                let query = query$(.bind(&self.$column))*;
                self.lost.iter().fold(query, |query, column| query.bind(column))
            }
        }
    };
}

window_columns! {
    profile_ids: Uuid = profile_id,
    agent_ids: String = agent_id,
    sequences: i64 = sequence,
    hosts: String = host,
    starts: DateTime<Utc> = start,
    ends: DateTime<Utc> = end,
    events: &'static str = event,
    periods: i64 = period,
    frequencies: i32 = frequency_hz,
    sample_totals: i64 = samples,
    blocks: Vec<u8> = block,
    expected: Option<i64> = expected,
}
