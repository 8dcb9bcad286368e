//! Bulk ingest of snapshots: frames and stacks by content hash, samples per
//! window, one transaction per batch. Frames, stacks and snapshot headers,
//! which may already be stored, go as `UNNEST` inserts that skip
//! conflicts; the new snapshots' samples and threads as binary `COPY`.
//!
//! The batch's hashing and sorting ([`Hashed`]) runs while Postgres
//! inserts the headers, and a batch whose frames and stacks are all known
//! sends no statement for them: per batch, the transaction is `BEGIN`,
//! the headers, two `COPY`s and `COMMIT`.

mod binary_copy;
mod ownership;
mod stored_ids;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::task::Poll;

use chrono::{DateTime, Utc};
use odp_core::hash::{frame_hash, stack_hash};
use odp_core::Snapshot;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{Result, StoreError};
use binary_copy::BinaryCopy;
pub use stored_ids::StoredIds;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IngestOutcome {
    /// Snapshots stored by this call.
    pub stored: usize,
    /// Snapshots already stored before (same agent, profile and sequence),
    /// ignored.
    pub duplicates: usize,
    pub samples: u64,
    /// Distinct frames and stacks the batch did not send to Postgres
    /// because [`StoredIds`] knew them to be stored.
    pub known_skipped: usize,
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
    store_snapshots_cached(pool, snapshots, &mut StoredIds::new(0)).await
}

/// [`store_snapshots`], skipping frames and stacks `known` holds, and
/// remembering this batch's once it committed. Should a known row have
/// been deleted meanwhile (retention), the reference check refuses the
/// batch; it is then stored again with `known` cleared.
pub async fn store_snapshots_cached(
    pool: &PgPool,
    snapshots: &[&Snapshot],
    known: &mut StoredIds,
) -> Result<IngestOutcome> {
    match store_once(pool, snapshots, known).await {
        Err(StoreError::Database(sqlx::Error::Database(db))) if db.is_foreign_key_violation() => {
            known.clear();
            store_once(pool, snapshots, known).await
        }
        other => other,
    }
}

/// One snapshot's frame and stack hashes and its samples merged by (stack,
/// thread) and sorted, as `COPY` sends them. Pure computation, done while
/// the headers are inserted.
struct Hashed {
    frames: Vec<u128>,
    /// Per stack of the snapshot, its hash.
    stacks: Vec<u128>,
    /// (stack hash, tid, count), sorted by stack then thread.
    samples: Vec<(u128, i32, i64)>,
    /// A count that does not fit a `bigint`, refused if the snapshot is
    /// new.
    bad_count: Option<u64>,
    total: u64,
}

impl Hashed {
    fn new(snapshot: &Snapshot) -> Self {
        let frames: Vec<u128> = snapshot.frames.iter().map(frame_hash).collect();
        let mut ids = Vec::new();
        let mut bad_count = None;
        let mut total = 0u64;
        let mut stacks = Vec::with_capacity(snapshot.stacks.len());
        let mut samples = Vec::with_capacity(snapshot.stacks.len());
        for stack in &snapshot.stacks {
            ids.clear();
            ids.extend(stack.frames.iter().map(|&i| frames[i as usize]));
            let h = stack_hash(&ids);
            stacks.push(h);
            let count = i64::try_from(stack.count).unwrap_or_else(|_| {
                bad_count.get_or_insert(stack.count);
                i64::MAX
            });
            samples.push((h, stack.tid as i32, count));
            total = total.saturating_add(stack.count);
        }
        samples.sort_unstable_by_key(|&(h, tid, _)| (h, tid));
        samples.dedup_by(|later, kept| {
            let same = (later.0, later.1) == (kept.0, kept.1);
            if same {
                kept.2 = kept.2.saturating_add(later.2);
            }
            same
        });
        Hashed {
            frames,
            stacks,
            samples,
            bad_count,
            total,
        }
    }
}

/// Column arrays for one `UNNEST` insert per table.
#[derive(Default)]
struct Rows {
    frame_ids: Vec<Uuid>,
    frame_functions: Vec<String>,
    frame_modules: Vec<String>,
    frame_files: Vec<Option<String>>,
    frame_lines: Vec<Option<i32>>,
    stack_ids: Vec<Uuid>,
    stack_frames: Vec<Vec<u8>>,
}

async fn store_once(
    pool: &PgPool,
    snapshots: &[&Snapshot],
    known: &mut StoredIds,
) -> Result<IngestOutcome> {
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
    let mut hash_ms = 0.0;
    let (new_ids, hashed) = overlap(insert_snapshot_headers(&mut tx, &snapshots), || {
        let hashing = std::time::Instant::now();
        let hashed: Vec<Hashed> = snapshots.iter().map(|s| Hashed::new(s)).collect();
        hash_ms = ms(hashing.elapsed());
        hashed
    })
    .await;
    let new_ids = new_ids?;
    outcome.duplicates += snapshots.len() - new_ids.len();
    outcome.stored = new_ids.len();
    let headers_at = started.elapsed();

    // The new snapshots in the order of their ids, so `COPY` appends to the
    // samples' primary key.
    let mut new: Vec<(i64, &Snapshot, &Hashed)> = snapshots
        .iter()
        .zip(&hashed)
        .filter_map(|(&s, h)| {
            let key = (s.agent_id.clone(), s.profile_id, s.sequence as i64);
            new_ids.get(&key).map(|&id| (id, s, h))
        })
        .collect();
    new.sort_unstable_by_key(|&(id, ..)| id);

    let mut rows = Rows::default();
    let mut seen_frames: HashSet<u128> = HashSet::new();
    let mut seen_stacks: HashSet<u128> = HashSet::new();
    // A sample row is 54 bytes: the field count, then four fields of 8,
    // 16, 4 and 8 bytes, each after its length.
    let sample_rows: usize = new.iter().map(|(_, _, h)| h.samples.len()).sum();
    let mut samples = BinaryCopy::with_capacity(sample_rows * 54);
    let mut threads = BinaryCopy::with_capacity(1 << 12);
    let mut stack_frames = Vec::new();
    for &(snapshot_id, snapshot, hashed) in &new {
        if let Some(count) = hashed.bad_count {
            return Err(StoreError::Corrupt(format!(
                "sample count {count} out of range"
            )));
        }
        for (frame, &h) in snapshot.frames.iter().zip(&hashed.frames) {
            if seen_frames.insert(h) && !known.contains(h) {
                rows.frame_ids.push(Uuid::from_u128(h));
                rows.frame_functions.push(frame.function.clone());
                rows.frame_modules.push(frame.module.clone());
                rows.frame_files.push(frame.file.clone());
                rows.frame_lines
                    .push(frame.line.map(|l| l.min(i32::MAX as u32) as i32));
            }
        }
        for (stack, &h) in snapshot.stacks.iter().zip(&hashed.stacks) {
            if seen_stacks.insert(h) && !known.contains(h) {
                stack_frames.clear();
                for &i in &stack.frames {
                    stack_frames.extend_from_slice(&hashed.frames[i as usize].to_be_bytes());
                }
                rows.stack_ids.push(Uuid::from_u128(h));
                rows.stack_frames.push(stack_frames.clone());
            }
        }
        let id = snapshot_id.to_be_bytes();
        for &(stack, tid, count) in &hashed.samples {
            samples.row(&[
                &id,
                &stack.to_be_bytes(),
                &tid.to_be_bytes(),
                &count.to_be_bytes(),
            ]);
        }
        outcome.samples = outcome.samples.saturating_add(hashed.total);
        // The last name given to a thread wins.
        let names: BTreeMap<i32, &str> = snapshot
            .threads
            .iter()
            .map(|t| (t.tid as i32, t.name.as_str()))
            .collect();
        for (tid, name) in names {
            threads.row(&[&id, &tid.to_be_bytes(), name.as_bytes()]);
        }
    }

    if !rows.frame_ids.is_empty() {
        sqlx::query(
            "insert into frames (id, function, module, file, line)
             select * from unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int[])
             on conflict (id) do nothing",
        )
        .bind(&rows.frame_ids)
        .bind(&rows.frame_functions)
        .bind(&rows.frame_modules)
        .bind(&rows.frame_files)
        .bind(&rows.frame_lines)
        .execute(&mut *tx)
        .await?;
    }
    if !rows.stack_ids.is_empty() {
        sqlx::query(
            "insert into stacks (id, frame_ids)
             select * from unnest($1::uuid[], $2::bytea[])
             on conflict (id) do nothing",
        )
        .bind(&rows.stack_ids)
        .bind(&rows.stack_frames)
        .execute(&mut *tx)
        .await?;
    }

    let samples_from = started.elapsed();
    // Samples and threads belong to snapshots this transaction inserted,
    // so they cannot conflict: they go as `COPY`, the cheapest way in.
    if !samples.is_empty() {
        samples
            .send(
                &mut tx,
                "copy samples (snapshot_id, stack_id, tid, count) from stdin (format binary)",
            )
            .await?;
    }
    let threads_from = started.elapsed();
    if !threads.is_empty() {
        threads
            .send(
                &mut tx,
                "copy snapshot_threads (snapshot_id, tid, name) from stdin (format binary)",
            )
            .await?;
    }

    let commit_from = started.elapsed();
    tx.commit().await?;
    tracing::debug!(
        snapshots = snapshots.len(),
        headers_ms = ms(headers_at),
        hash_ms,
        rows_ms = ms(samples_from - headers_at),
        samples_ms = ms(threads_from - samples_from),
        threads_ms = ms(commit_from - threads_from),
        commit_ms = ms(started.elapsed() - commit_from),
        "batch written"
    );
    outcome.known_skipped =
        seen_frames.len() + seen_stacks.len() - rows.frame_ids.len() - rows.stack_ids.len();
    for id in seen_frames.into_iter().chain(seen_stacks) {
        known.insert(id);
    }
    Ok(outcome)
}

/// Runs `work` while `future` waits for Postgres: `future` is polled once
/// first, which sends its statement (when the connection has it prepared
/// already, as from a worker's second batch on), then `work` runs, then
/// `future` is awaited. Without a statement in flight, this is `work`
/// followed by `future`.
async fn overlap<F: Future, T>(future: F, work: impl FnOnce() -> T) -> (F::Output, T) {
    let mut future = std::pin::pin!(future);
    let early = std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await;
    let value = work();
    let output = match early {
        Poll::Ready(output) => output,
        Poll::Pending => future.await,
    };
    (output, value)
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

type SnapshotKey = (String, Uuid, i64);

/// Inserts the snapshots' header rows, skipping those already stored, and
/// returns the new rows' ids by (agent, profile, sequence).
async fn insert_snapshot_headers(
    tx: &mut sqlx::PgConnection,
    snapshots: &[&Snapshot],
) -> Result<HashMap<SnapshotKey, i64>> {
    let to_time = |ms: i64| {
        DateTime::<Utc>::from_timestamp_millis(ms)
            .ok_or_else(|| StoreError::Corrupt(format!("timestamp {ms} ms out of range")))
    };
    let mut profile_ids = Vec::with_capacity(snapshots.len());
    let mut agent_ids = Vec::with_capacity(snapshots.len());
    let mut sequences = Vec::with_capacity(snapshots.len());
    let mut hosts = Vec::with_capacity(snapshots.len());
    let mut starts = Vec::with_capacity(snapshots.len());
    let mut ends = Vec::with_capacity(snapshots.len());
    let mut events = Vec::with_capacity(snapshots.len());
    let mut periods = Vec::with_capacity(snapshots.len());
    let mut frequencies = Vec::with_capacity(snapshots.len());
    let mut sample_totals = Vec::with_capacity(snapshots.len());
    for s in snapshots {
        profile_ids.push(s.profile_id);
        agent_ids.push(s.agent_id.clone());
        sequences.push(
            i64::try_from(s.sequence).map_err(|_| {
                StoreError::Corrupt(format!("sequence {} out of range", s.sequence))
            })?,
        );
        hosts.push(s.host.clone());
        starts.push(to_time(s.window_start_ms)?);
        ends.push(to_time(s.window_end_ms)?);
        events.push(s.event.as_str());
        periods.push(
            i64::try_from(s.period)
                .map_err(|_| StoreError::Corrupt(format!("period {} out of range", s.period)))?,
        );
        frequencies.push(i32::try_from(s.frequency_hz).map_err(|_| {
            StoreError::Corrupt(format!("frequency {} out of range", s.frequency_hz))
        })?);
        sample_totals.push(i64::try_from(s.total_samples()).unwrap_or(i64::MAX));
    }
    let rows: Vec<(i64, String, Uuid, i64)> = sqlx::query_as(
        "insert into snapshots (profile_id, agent_id, sequence, host, window_start, window_end,
                                event, period, frequency_hz, samples)
         select * from unnest($1::uuid[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[],
                              $6::timestamptz[], $7::text[], $8::bigint[], $9::int[], $10::bigint[])
         on conflict (agent_id, profile_id, sequence) do nothing
         returning id, agent_id, profile_id, sequence",
    )
    .bind(&profile_ids)
    .bind(&agent_ids)
    .bind(&sequences)
    .bind(&hosts)
    .bind(&starts)
    .bind(&ends)
    .bind(&events)
    .bind(&periods)
    .bind(&frequencies)
    .bind(&sample_totals)
    .fetch_all(&mut *tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, agent, profile, sequence)| ((agent, profile, sequence), id))
        .collect())
}
