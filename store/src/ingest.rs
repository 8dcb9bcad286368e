//! Bulk ingest of snapshots: frames and stacks by content hash, samples per
//! window, one transaction per batch. Frames, stacks and snapshot headers,
//! which may already be stored, go as `UNNEST` inserts that skip
//! conflicts; the new snapshots' samples and threads as binary `COPY`.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use odp_core::hash::{frame_hash, stack_hash};
use odp_core::Snapshot;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{Result, StoreError};

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
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
}

/// The frame and stack hashes recently stored, so a worker does not send
/// the same rows again and again: stacks repeat across windows, hosts and
/// profiles. Bounded: two generations of `capacity / 2` ids each; when
/// the young one fills, the old one is dropped, which keeps the ids in use
/// and forgets the rest.
///
/// Also bounded in time: the young generation turns old after
/// [`GENERATION_MAX_AGE`] however full it is, so an id unused for two
/// generations is forgotten. Retention deletes only frames and stacks that
/// no window of the retention period (a day or more) uses, so no id it
/// deletes can still be trusted here.
#[derive(Debug)]
pub struct StoredIds {
    young: HashSet<u128>,
    old: HashSet<u128>,
    generation: usize,
    young_since: std::time::Instant,
}

/// How long a generation stays young at most.
const GENERATION_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30 * 60);

impl StoredIds {
    pub fn new(capacity: usize) -> Self {
        let generation = (capacity / 2).max(1);
        StoredIds {
            young: HashSet::with_capacity(generation),
            old: HashSet::new(),
            generation,
            young_since: std::time::Instant::now(),
        }
    }

    pub fn contains(&mut self, id: u128) -> bool {
        if self.young_since.elapsed() >= GENERATION_MAX_AGE {
            self.age();
        }
        if self.young.contains(&id) {
            return true;
        }
        if self.old.remove(&id) {
            self.insert(id);
            return true;
        }
        false
    }

    pub fn insert(&mut self, id: u128) {
        if self.young.len() >= self.generation {
            self.age();
        }
        self.young.insert(id);
    }

    /// The young generation becomes the old one; the old one is forgotten.
    fn age(&mut self) {
        self.old = std::mem::take(&mut self.young);
        self.young_since = std::time::Instant::now();
    }

    pub fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn clear(&mut self) {
        self.young.clear();
        self.old.clear();
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

/// Stores a batch of snapshots in one transaction. Snapshots already stored
/// are skipped, so redelivered messages change nothing.
pub async fn store_snapshots(pool: &PgPool, snapshots: &[&Snapshot]) -> Result<IngestOutcome> {
    store_snapshots_cached(pool, snapshots, &mut StoredIds::new(0)).await
}

/// [`store_snapshots`], skipping frames and stacks `known` holds, and
/// remembering this batch's once it committed. Should a known row have
/// been deleted meanwhile (retention), the foreign key refuses the batch;
/// it is then stored again with `known` cleared.
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

    let mut tx = pool.begin().await?;
    let new_ids = insert_snapshot_headers(&mut tx, &snapshots).await?;
    outcome.duplicates += snapshots.len() - new_ids.len();
    outcome.stored = new_ids.len();

    let mut rows = Rows::default();
    let mut seen_frames: HashMap<u128, ()> = HashMap::new();
    let mut seen_stacks: HashMap<u128, ()> = HashMap::new();
    let mut samples: BTreeMap<(i64, Uuid, i32), i64> = BTreeMap::new();
    let mut thread_rows: BTreeMap<(i64, i32), String> = BTreeMap::new();
    for snapshot in &snapshots {
        let Some(&snapshot_id) = new_ids.get(&(
            snapshot.agent_id.clone(),
            snapshot.profile_id,
            snapshot.sequence as i64,
        )) else {
            continue;
        };
        let frame_hashes: Vec<u128> = snapshot.frames.iter().map(frame_hash).collect();
        for (frame, &h) in snapshot.frames.iter().zip(&frame_hashes) {
            if seen_frames.insert(h, ()).is_none() && !known.contains(h) {
                rows.frame_ids.push(Uuid::from_u128(h));
                rows.frame_functions.push(frame.function.clone());
                rows.frame_modules.push(frame.module.clone());
                rows.frame_files.push(frame.file.clone());
                rows.frame_lines
                    .push(frame.line.map(|l| l.min(i32::MAX as u32) as i32));
            }
        }
        for stack in &snapshot.stacks {
            let ids: Vec<u128> = stack
                .frames
                .iter()
                .map(|&i| frame_hashes[i as usize])
                .collect();
            let h = stack_hash(&ids);
            if seen_stacks.insert(h, ()).is_none() && !known.contains(h) {
                rows.stack_ids.push(Uuid::from_u128(h));
                rows.stack_frames.push(
                    ids.iter()
                        .flat_map(|id| Uuid::from_u128(*id).into_bytes())
                        .collect(),
                );
            }
            let count = i64::try_from(stack.count).map_err(|_| {
                StoreError::Corrupt(format!("sample count {} out of range", stack.count))
            })?;
            let entry = samples
                .entry((snapshot_id, Uuid::from_u128(h), stack.tid as i32))
                .or_insert(0);
            *entry = entry.saturating_add(count);
            outcome.samples += stack.count;
        }
        for thread in &snapshot.threads {
            thread_rows.insert((snapshot_id, thread.tid as i32), thread.name.clone());
        }
    }

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
    sqlx::query(
        "insert into stacks (id, frame_ids)
         select * from unnest($1::uuid[], $2::bytea[])
         on conflict (id) do nothing",
    )
    .bind(&rows.stack_ids)
    .bind(&rows.stack_frames)
    .execute(&mut *tx)
    .await?;

    // Samples and threads belong to snapshots this transaction inserted,
    // so they cannot conflict: they go as `COPY`, the cheapest way in.
    if !samples.is_empty() {
        let mut copy = BinaryCopy::default();
        for ((snapshot_id, stack_id, tid), count) in samples {
            copy.row(&[
                &snapshot_id.to_be_bytes(),
                stack_id.as_bytes(),
                &tid.to_be_bytes(),
                &count.to_be_bytes(),
            ]);
        }
        copy.send(
            &mut tx,
            "copy samples (snapshot_id, stack_id, tid, count) from stdin (format binary)",
        )
        .await?;
    }
    if !thread_rows.is_empty() {
        let mut copy = BinaryCopy::default();
        for ((snapshot_id, tid), name) in thread_rows {
            copy.row(&[
                &snapshot_id.to_be_bytes(),
                &tid.to_be_bytes(),
                name.as_bytes(),
            ]);
        }
        copy.send(
            &mut tx,
            "copy snapshot_threads (snapshot_id, tid, name) from stdin (format binary)",
        )
        .await?;
    }

    tx.commit().await?;
    outcome.known_skipped =
        seen_frames.len() + seen_stacks.len() - rows.frame_ids.len() - rows.stack_ids.len();
    for id in seen_frames.keys().chain(seen_stacks.keys()) {
        known.insert(*id);
    }
    Ok(outcome)
}

/// Rows in `COPY … (format binary)` form: a header, then per row its
/// field count and each field's length and bytes (big-endian numbers),
/// then a trailer.
struct BinaryCopy {
    data: Vec<u8>,
}

impl Default for BinaryCopy {
    fn default() -> Self {
        let mut data = Vec::with_capacity(1 << 16);
        data.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
        // Flags, then the length of the header extension: none of either.
        data.extend_from_slice(&0i32.to_be_bytes());
        data.extend_from_slice(&0i32.to_be_bytes());
        BinaryCopy { data }
    }
}

impl BinaryCopy {
    fn row(&mut self, fields: &[&[u8]]) {
        self.data
            .extend_from_slice(&(fields.len() as i16).to_be_bytes());
        for field in fields {
            self.data
                .extend_from_slice(&(field.len() as i32).to_be_bytes());
            self.data.extend_from_slice(field);
        }
    }

    async fn send(mut self, conn: &mut sqlx::PgConnection, statement: &str) -> Result<()> {
        self.data.extend_from_slice(&(-1i16).to_be_bytes());
        let mut copy = conn.copy_in_raw(statement).await?;
        if let Err(e) = copy.send(self.data).await {
            // Ends the COPY so the connection can be used again.
            let _ = copy.abort(e.to_string()).await;
            return Err(e.into());
        }
        copy.finish().await?;
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::StoredIds;

    #[test]
    fn stored_ids_stay_bounded_and_keep_what_is_used() {
        let mut ids = StoredIds::new(4);
        for id in 0..100 {
            ids.insert(id);
            assert!(ids.len() <= 4, "bounded at {}", ids.len());
        }
        assert!(ids.contains(99) && ids.contains(98));
        assert!(!ids.contains(0), "old ids are forgotten");
        // An id looked up is promoted, so it survives the next turnover.
        ids.insert(200);
        ids.insert(201);
        assert!(ids.contains(200));
        ids.insert(202);
        ids.insert(203);
        assert!(ids.contains(200));
        ids.clear();
        assert!(ids.is_empty() && !ids.contains(200));
    }

    #[test]
    fn ids_unused_for_two_generations_are_forgotten_however_few() {
        let mut ids = StoredIds::new(1000);
        ids.insert(1);
        ids.insert(2);
        let expire = |ids: &mut StoredIds| {
            ids.young_since = std::time::Instant::now() - super::GENERATION_MAX_AGE;
        };
        expire(&mut ids);
        // 1 is used in the next generation, 2 is not.
        assert!(ids.contains(1));
        expire(&mut ids);
        assert!(!ids.contains(2), "unused for two generations");
        assert!(ids.contains(1));
    }

    #[test]
    fn a_zero_capacity_set_remembers_only_the_latest() {
        let mut ids = StoredIds::new(0);
        ids.insert(1);
        ids.insert(2);
        assert!(ids.len() <= 2);
    }
}
