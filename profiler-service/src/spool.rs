//! A bounded on-disk FIFO of encoded snapshots the broker did not take.
//!
//! One file per snapshot (`Snapshot::encode()` bytes), named by a
//! monotonically increasing sequence number so that a directory listing
//! sorted by name is the send order, across agent restarts too. A file is
//! written to a `.tmp` name and renamed into place: a crash leaves either
//! the whole snapshot or a stray `.tmp` (removed on open), never a torn
//! file that would be resent.
//!
//! The spool is plain synchronous file I/O; the publisher calls it from
//! `spawn_blocking`. It never loses a snapshot without saying so: every
//! eviction is returned to the caller, which counts and logs it.

use std::collections::VecDeque;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

const SUFFIX: &str = ".snap";
const TMP_SUFFIX: &str = ".tmp";

/// What [`Spool::push`] did to make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pushed {
    /// Older snapshots deleted to make room, counted now.
    pub dropped: u64,
    /// The new snapshot was larger than the whole spool and was not kept.
    pub rejected: bool,
}

/// How a resend attempt ended, for the caller's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    /// Acknowledged and its file deleted.
    Delivered,
    /// Not acknowledged; still first in line.
    Kept,
    /// Not acknowledged, and evicted for room while it was in flight: it is
    /// lost and must be counted as dropped now (not at eviction time, since
    /// it might still have been delivered).
    Dropped,
}

#[derive(Debug)]
pub struct Spool {
    dir: PathBuf,
    max_bytes: u64,
    /// Sequence number and size of each spooled file, oldest first.
    files: VecDeque<(u64, u64)>,
    bytes: u64,
    next: u64,
    /// The file being resent, which eviction must not count yet.
    in_flight: Option<u64>,
    /// Whether the in-flight file was evicted while it was being sent.
    in_flight_evicted: bool,
}

impl Spool {
    /// Opens (creating) the spool directory and indexes what an earlier run
    /// left there; leftover temporary files are half-written and removed.
    pub fn open(dir: &Path, max_bytes: u64) -> io::Result<Spool> {
        fs::create_dir_all(dir)?;
        let mut files = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.ends_with(TMP_SUFFIX) {
                fs::remove_file(entry.path())?;
            } else if let Some(seq) = name.strip_suffix(SUFFIX).and_then(|s| s.parse().ok()) {
                files.push((seq, entry.metadata()?.len()));
            }
        }
        files.sort_unstable();
        let next = files.last().map_or(0, |&(seq, _)| seq + 1);
        let bytes = files.iter().map(|&(_, len)| len).sum();
        Ok(Spool {
            dir: dir.to_owned(),
            max_bytes,
            files: files.into(),
            bytes,
            next,
            in_flight: None,
            in_flight_evicted: false,
        })
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Bytes of the spooled files.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn path(&self, seq: u64) -> PathBuf {
        // Zero-padded so names sort like numbers.
        self.dir.join(format!("{seq:020}{SUFFIX}"))
    }

    /// Appends one encoded snapshot, first deleting the oldest ones if it
    /// would not fit otherwise.
    pub fn push(&mut self, payload: &[u8]) -> io::Result<Pushed> {
        let len = payload.len() as u64;
        let mut pushed = Pushed::default();
        if len > self.max_bytes {
            pushed.rejected = true;
            return Ok(pushed);
        }
        while self.bytes + len > self.max_bytes {
            let Some((seq, size)) = self.files.pop_front() else {
                break;
            };
            remove_if_present(&self.path(seq))?;
            self.bytes -= size;
            if self.in_flight == Some(seq) {
                self.in_flight_evicted = true;
            } else {
                pushed.dropped += 1;
            }
        }
        let seq = self.next;
        let tmp = self.dir.join(format!("{seq:020}{TMP_SUFFIX}"));
        let mut file = fs::File::create(&tmp)?;
        file.write_all(payload)?;
        // On disk before it is visible under its final name.
        file.sync_data()?;
        fs::rename(&tmp, self.path(seq))?;
        self.next += 1;
        self.files.push_back((seq, len));
        self.bytes += len;
        Ok(pushed)
    }

    /// Reads the oldest snapshot and marks it in flight, or `None` when the
    /// spool is empty.
    pub fn begin(&mut self) -> io::Result<Option<(u64, Vec<u8>)>> {
        let Some(&(seq, _)) = self.files.front() else {
            return Ok(None);
        };
        let payload = fs::read(self.path(seq))?;
        self.in_flight = Some(seq);
        self.in_flight_evicted = false;
        Ok(Some((seq, payload)))
    }

    /// Ends the attempt started by [`Self::begin`]; the file is deleted only
    /// once the broker acknowledged it.
    pub fn finish(&mut self, seq: u64, delivered: bool) -> io::Result<Finished> {
        let evicted = self.in_flight == Some(seq) && self.in_flight_evicted;
        self.in_flight = None;
        self.in_flight_evicted = false;
        if evicted {
            // Its file is already gone; delivered or not, it is no longer
            // in the index.
            return Ok(if delivered {
                Finished::Delivered
            } else {
                Finished::Dropped
            });
        }
        if !delivered {
            return Ok(Finished::Kept);
        }
        self.discard(seq)?;
        Ok(Finished::Delivered)
    }

    /// Deletes a file that can never be sent (it does not decode).
    pub fn discard(&mut self, seq: u64) -> io::Result<()> {
        if self.in_flight == Some(seq) {
            self.in_flight = None;
            self.in_flight_evicted = false;
        }
        if let Some(at) = self.files.iter().position(|&(s, _)| s == seq) {
            let (_, size) = self.files.remove(at).expect("position is in range");
            remove_if_present(&self.path(seq))?;
            self.bytes -= size;
        }
        Ok(())
    }
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(spool: &mut Spool) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Some((seq, payload)) = spool.begin().unwrap() {
            assert_eq!(spool.finish(seq, true).unwrap(), Finished::Delivered);
            out.push(payload);
        }
        out
    }

    #[test]
    fn fifo_across_reopen_and_size_accounting() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path(), 1000).unwrap();
        for i in 0..12u8 {
            assert_eq!(spool.push(&[i; 10]).unwrap(), Pushed::default());
        }
        assert_eq!((spool.len(), spool.bytes()), (12, 120));
        // A failed attempt keeps the file first in line.
        let (seq, first) = spool.begin().unwrap().unwrap();
        assert_eq!(first, vec![0; 10]);
        assert_eq!(spool.finish(seq, false).unwrap(), Finished::Kept);
        drop(spool);

        // A crash mid-write leaves a temporary file: ignored and removed.
        fs::write(dir.path().join("00000000000000000099.tmp"), b"torn").unwrap();
        let mut spool = Spool::open(dir.path(), 1000).unwrap();
        assert_eq!((spool.len(), spool.bytes()), (12, 120));
        // New files go after the old ones, even past 9 → 10 digits.
        spool.push(&[99; 5]).unwrap();
        let all = drain(&mut spool);
        let firsts: Vec<u8> = all.iter().map(|p| p[0]).collect();
        assert_eq!(firsts, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 99]);
        assert_eq!((spool.len(), spool.bytes()), (0, 0));
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn full_spool_drops_the_oldest_and_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path(), 35).unwrap();
        let mut dropped = 0;
        for i in 0..10u8 {
            dropped += spool.push(&[i; 10]).unwrap().dropped;
        }
        // Three of ten bytes each fit in 35.
        assert_eq!((dropped, spool.len(), spool.bytes()), (7, 3, 30));
        let firsts: Vec<u8> = drain(&mut spool).iter().map(|p| p[0]).collect();
        assert_eq!(firsts, [7, 8, 9]);

        // Larger than the whole spool: not kept, nothing else evicted.
        spool.push(&[1; 10]).unwrap();
        let pushed = spool.push(&[2; 36]).unwrap();
        assert_eq!(
            pushed,
            Pushed {
                dropped: 0,
                rejected: true
            }
        );
        assert_eq!(spool.len(), 1);
    }

    #[test]
    fn eviction_in_flight_is_counted_only_if_not_delivered() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path(), 20).unwrap();
        spool.push(&[0; 10]).unwrap();
        spool.push(&[1; 10]).unwrap();
        let (seq, _) = spool.begin().unwrap().unwrap();
        // Evicts the in-flight file (not counted yet).
        assert_eq!(spool.push(&[2; 10]).unwrap().dropped, 0);
        assert_eq!(spool.finish(seq, false).unwrap(), Finished::Dropped);
        let (seq, payload) = spool.begin().unwrap().unwrap();
        assert_eq!(payload, vec![1; 10]);
        assert_eq!(spool.push(&[3; 10]).unwrap().dropped, 0);
        // Delivered after all: not a drop.
        assert_eq!(spool.finish(seq, true).unwrap(), Finished::Delivered);
        let firsts: Vec<u8> = drain(&mut spool).iter().map(|p| p[0]).collect();
        assert_eq!(firsts, [2, 3]);
    }
}
