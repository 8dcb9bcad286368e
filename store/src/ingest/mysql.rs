//! Ingest on MySQL and MariaDB, which have neither `unnest` nor
//! `returning` (docs/mysql-schema.md): in one transaction, the ownership
//! claim as an update of the unowned profiles and a read of the owners,
//! then the keys of the batch already stored, read `for update`, then
//! multi-row inserts of the rest, so the new keys are known exactly. A
//! concurrent writer inserting one of those keys in between makes the
//! insert fail with a duplicate (1062), or the two deadlock (1213): the
//! whole batch is then rolled back and written again.

use std::collections::{BTreeMap, HashMap, HashSet};

use sqlx::{MySql, MySqlConnection, MySqlPool, QueryBuilder};
use uuid::Uuid;

use super::{key, ownership, SnapshotKey, SnapshotToStore, Window, Written};
use crate::database::push_in_list;
use crate::{Result, StoreError};

/// How many times a batch is written again after losing a race.
const RETRIES: usize = 3;

/// Bytes of blocks per insert statement, well under `max_allowed_packet`
/// (MariaDB's default is 16 MiB). A larger block goes alone.
const STATEMENT_BYTES: usize = 8 << 20;

/// Rows per insert statement: 11 placeholders each, under MySQL's 65,535.
const STATEMENT_ROWS: usize = 4_000;

/// Sequences per key lookup.
const LOOKUP_ROWS: usize = 10_000;

pub(super) async fn write_batch(
    pool: &MySqlPool,
    snapshots: &[SnapshotToStore<'_>],
) -> Result<Written> {
    let mut attempt = 0;
    loop {
        match write_once(pool, snapshots).await {
            Err(StoreError::Database(sqlx::Error::Database(e)))
                if attempt < RETRIES
                    && (e.is_unique_violation() || e.code().as_deref() == Some("40001")) =>
            {
                attempt += 1;
                tracing::debug!(attempt, error = %e, "batch lost a race; writing it again");
            }
            written => return written,
        }
    }
}

async fn write_once(pool: &MySqlPool, snapshots: &[SnapshotToStore<'_>]) -> Result<Written> {
    let mut tx = pool.begin().await?;
    let mut owners = claim(&mut tx, snapshots).await?;
    ownership::take_over(&mut *tx, snapshots, &mut owners).await?;
    let (kept, foreign) = ownership::split(snapshots.to_vec(), &owners);
    let stored_before = stored_keys(&mut tx, &kept).await?;
    let new: Vec<SnapshotToStore<'_>> = kept
        .iter()
        .copied()
        .filter(|s| !stored_before.contains(&key(s)))
        .collect();
    insert_windows(&mut tx, &new).await?;
    tx.commit().await?;
    Ok(Written {
        foreign,
        kept: kept.len(),
        stored: new.iter().map(|s| key(s)).collect(),
    })
}

/// Claims each unowned profile of the batch for the agent of its earliest
/// window, and returns the owner of every owned profile of the batch.
async fn claim(
    tx: &mut MySqlConnection,
    snapshots: &[SnapshotToStore<'_>],
) -> Result<HashMap<Uuid, String>> {
    let offers = ownership::first_offers(snapshots);
    let mut update = QueryBuilder::<MySql>::new("update profiles set agent_id = case id");
    for (profile, agent) in &offers {
        update
            .push(" when ")
            .push_bind(*profile)
            .push(" then ")
            .push_bind(*agent);
    }
    update.push(" end where agent_id is null and id in ");
    push_in_list(&mut update, offers.iter().map(|(profile, _)| *profile));
    update.build().execute(&mut *tx).await?;
    // The update locked the rows it claimed; these are read as committed
    // or as this transaction wrote them.
    let mut owners = QueryBuilder::<MySql>::new(
        "select id, agent_id from profiles where agent_id is not null and id in ",
    );
    push_in_list(&mut owners, offers.iter().map(|(profile, _)| *profile));
    let owners: Vec<(Uuid, String)> = owners.build_query_as().fetch_all(&mut *tx).await?;
    Ok(owners.into_iter().collect())
}

/// The keys of `snapshots` stored already, locked until the transaction
/// ends (with the gaps where the others go, under REPEATABLE READ).
async fn stored_keys(
    tx: &mut MySqlConnection,
    snapshots: &[SnapshotToStore<'_>],
) -> Result<HashSet<SnapshotKey>> {
    // One lookup per agent and profile, on the unique key's prefix.
    let mut sequences: BTreeMap<(&str, Uuid), Vec<i64>> = BTreeMap::new();
    for s in snapshots {
        let (_, _, sequence) = key(s);
        sequences
            .entry((s.agent_id.as_str(), s.profile_id))
            .or_default()
            .push(sequence);
    }
    let mut stored = HashSet::new();
    for ((agent, profile), sequences) in sequences {
        for chunk in sequences.chunks(LOOKUP_ROWS) {
            let mut q = QueryBuilder::<MySql>::new(
                "select agent_id, profile_id, `sequence` from snapshots where agent_id = ",
            );
            q.push_bind(agent)
                .push(" and profile_id = ")
                .push_bind(profile)
                .push(" and `sequence` in ");
            push_in_list(&mut q, chunk.iter().copied());
            q.push(" for update");
            let rows: Vec<SnapshotKey> = q.build_query_as().fetch_all(&mut *tx).await?;
            stored.extend(rows);
        }
    }
    Ok(stored)
}

/// Inserts the windows, each with its block, in statements of at most
/// [`STATEMENT_BYTES`] of blocks and [`STATEMENT_ROWS`] rows.
async fn insert_windows(tx: &mut MySqlConnection, snapshots: &[SnapshotToStore<'_>]) -> Result<()> {
    let mut pending: Vec<Window<'_>> = Vec::new();
    let mut pending_bytes = 0;
    for &s in snapshots {
        let window = Window::of(s)?;
        if !pending.is_empty()
            && (pending_bytes + window.block.len() > STATEMENT_BYTES
                || pending.len() == STATEMENT_ROWS)
        {
            insert_statement(tx, std::mem::take(&mut pending)).await?;
            pending_bytes = 0;
        }
        pending_bytes += window.block.len();
        pending.push(window);
    }
    if !pending.is_empty() {
        insert_statement(tx, pending).await?;
    }
    Ok(())
}

async fn insert_statement(tx: &mut MySqlConnection, windows: Vec<Window<'_>>) -> Result<()> {
    let mut q = QueryBuilder::<MySql>::new(
        "insert into snapshots (profile_id, agent_id, `sequence`, host, window_start, window_end,
                                event, period, frequency_hz, samples, block, expected_samples,
                                lost_overflow, lost_throttled, lost_paused, lost_undiscovered,
                                lost_transport) ",
    );
    q.push_values(windows, |mut row, w| {
        row.push_bind(w.profile_id)
            .push_bind(w.agent_id)
            .push_bind(w.sequence)
            .push_bind(w.host)
            .push_bind(w.start)
            .push_bind(w.end)
            .push_bind(w.event)
            .push_bind(w.period)
            .push_bind(w.frequency_hz)
            .push_bind(w.samples)
            .push_bind(w.block.into_owned())
            .push_bind(w.expected);
        for samples in w.lost {
            row.push_bind(samples);
        }
    });
    q.build().execute(&mut *tx).await?;
    Ok(())
}
