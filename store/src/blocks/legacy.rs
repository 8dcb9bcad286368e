//! Windows stored as rows before blocks existed: their samples, thread
//! names, and the stacks and frames those reference, read to be merged
//! with the blocks (and compacted into them).

use std::collections::HashMap;

use odp_core::Frame;
use odp_profile::ProfileBuilder;
use uuid::Uuid;

use super::{window_of, WindowRow};
use crate::sql::mysql_lists::fetch_any;
use crate::sql::On;
use crate::{Result, StoreError};

/// Samples, thread names and frames of windows stored as rows.
#[derive(Default)]
pub(super) struct LegacyRows {
    /// Per window id: (stack, tid, count).
    samples: HashMap<i64, Vec<(Uuid, i32, i64)>>,
    threads: HashMap<i64, Vec<(i32, String)>>,
    stacks: HashMap<Uuid, Vec<Frame>>,
}

/// A legacy `samples` row: window, stack, tid, count.
type SampleRow = (i64, Uuid, i32, i64);
/// A legacy `snapshot_threads` row: window, tid, name.
type ThreadRow = (i64, i32, String);
/// A `frames` row: id, function, module, file, line.
type FrameRow = (Uuid, String, String, Option<String>, Option<i32>);

/// The frame ids of stack `stack`, root first, from its `frame_ids`
/// column: 16 bytes a frame.
///
/// A stack has at least one frame: both schemas refuse any other
/// `frame_ids` (`length % 16 = 0 and length > 0`), so an empty or ragged
/// list is corruption, reported rather than read as a shorter stack (or
/// in retention, as a stack that keeps no frame alive).
pub(crate) fn frame_ids(stack: Uuid, bytes: &[u8]) -> Result<Vec<Uuid>> {
    if bytes.is_empty() || !bytes.len().is_multiple_of(16) {
        return Err(StoreError::Corrupt(format!(
            "stack {stack}: a frame list of {} bytes",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(16)
        .map(|c| Uuid::from_slice(c).expect("chunks are 16 bytes"))
        .collect())
}

impl LegacyRows {
    /// The rows of `windows`, read on `conn` (locked if the caller's
    /// transaction locked the windows).
    pub(super) async fn read<C>(conn: &mut C, windows: &[i64]) -> Result<LegacyRows>
    where
        for<'c> &'c mut C: Into<On<'c>>,
    {
        let samples: Vec<SampleRow> = fetch_any(
            &mut *conn,
            "select s.snapshot_id, s.stack_id, s.tid, s.count from samples s
             where s.snapshot_id = any($1)",
            windows,
        )
        .await?;
        let threads: Vec<ThreadRow> = fetch_any(
            &mut *conn,
            "select snapshot_id, tid, name from snapshot_threads where snapshot_id = any($1)",
            windows,
        )
        .await?;
        let mut rows = LegacyRows::from_rows(samples, threads);
        rows.stacks = stacks(conn, &rows.stack_ids()).await?;
        Ok(rows)
    }

    /// The rows' samples and thread names by window (stacks come later,
    /// from [`LegacyRows::stack_ids`]).
    fn from_rows(samples: Vec<SampleRow>, threads: Vec<ThreadRow>) -> LegacyRows {
        let mut out = LegacyRows::default();
        for (window, stack, tid, count) in samples {
            out.samples
                .entry(window)
                .or_default()
                .push((stack, tid, count));
        }
        for (window, tid, name) in threads {
            out.threads.entry(window).or_default().push((tid, name));
        }
        out
    }

    /// The distinct stacks the samples reference.
    fn stack_ids(&self) -> Vec<Uuid> {
        let mut ids: Vec<Uuid> = self.samples.values().flatten().map(|s| s.0).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    pub(super) fn add_window(
        &mut self,
        builder: &mut ProfileBuilder,
        profile_id: Uuid,
        row: &WindowRow,
    ) -> Result<()> {
        let window = builder.window(window_of(profile_id, row)?);
        for (tid, name) in self.threads.remove(&row.id).unwrap_or_default() {
            builder.thread(window, tid as u32, name);
        }
        for (stack, tid, count) in self.samples.remove(&row.id).unwrap_or_default() {
            let frames = self.stacks.get(&stack).ok_or_else(|| {
                StoreError::Corrupt(format!("samples reference missing stack {stack}"))
            })?;
            let ids: Vec<u32> = frames.iter().map(|f| builder.frame(f)).collect();
            builder.samples(window, tid as u32, &ids, count as u64);
        }
        Ok(())
    }
}

/// Stored stacks by id, with their whole frames.
async fn stacks<C>(conn: &mut C, ids: &[Uuid]) -> Result<HashMap<Uuid, Vec<Frame>>>
where
    for<'c> &'c mut C: Into<On<'c>>,
{
    let rows: Vec<(Uuid, Vec<u8>)> = fetch_any(
        &mut *conn,
        "select id, frame_ids from stacks where id = any($1)",
        ids,
    )
    .await?;
    let stacks = rows
        .into_iter()
        .map(|(id, bytes)| Ok((id, frame_ids(id, &bytes)?)))
        .collect::<Result<Vec<_>>>()?;
    let mut wanted: Vec<Uuid> = stacks.iter().flat_map(|(_, path)| path).copied().collect();
    wanted.sort_unstable();
    wanted.dedup();
    // Qualified, so MySQL takes `function` unquoted.
    let frames: Vec<FrameRow> = fetch_any(
        &mut *conn,
        "select f.id, f.function, f.module, f.file, f.line from frames f where f.id = any($1)",
        &wanted,
    )
    .await?;
    let frames: HashMap<Uuid, Frame> = frames
        .into_iter()
        .map(|(id, function, module, file, line)| {
            let line = line.map(|l| l as u32);
            let frame = Frame {
                function,
                module,
                file,
                line,
            };
            (id, frame)
        })
        .collect();
    stacks
        .into_iter()
        .map(|(id, path)| {
            let path = path
                .into_iter()
                .map(|frame| {
                    frames.get(&frame).cloned().ok_or_else(|| {
                        StoreError::Corrupt(format!("stack {id} references missing frame {frame}"))
                    })
                })
                .collect::<Result<Vec<Frame>>>()?;
            Ok((id, path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_list_is_one_or_more_ids_of_16_bytes() {
        let stack = Uuid::new_v4();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let bytes = [a.as_bytes().as_slice(), b.as_bytes()].concat();
        assert_eq!(frame_ids(stack, &bytes).unwrap(), [a, b]);
        for length in [0, 15, 17, 33] {
            let error = frame_ids(stack, &vec![0; length]).unwrap_err();
            assert!(
                matches!(error, StoreError::Corrupt(ref m) if m.contains(&format!("{length} bytes"))),
                "{length}: {error}"
            );
        }
    }
}
