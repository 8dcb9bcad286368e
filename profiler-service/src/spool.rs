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
//! eviction is returned to the caller, which counts and logs it, and with
//! a [`Replace`] function an evicted snapshot leaves a small one in its
//! place that tells the pipeline what was lost (its samples, as lost in
//! transport).

use std::collections::VecDeque;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

const SUFFIX: &str = ".snap";
/// A record of a loss (see [`Replace`]): evicted only when nothing else is
/// left, since it is all that tells the pipeline a window existed.
const RECORD_SUFFIX: &str = ".loss";
const TMP_SUFFIX: &str = ".tmp";

/// One spooled file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Spooled {
    seq: u64,
    size: u64,
    record: bool,
}

/// Turns an evicted payload into the small one that says what was lost
/// (`Snapshot::lost_in_transport`); `None` for one it cannot read or that
/// says nothing more.
pub type Replace = fn(&[u8]) -> Option<Vec<u8>>;

/// What [`Spool::push`] did to make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pushed {
    /// Older snapshots deleted to make room, counted now.
    pub dropped: u64,
    /// Of those, the ones replaced by the record of their loss.
    pub replaced: u64,
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
    /// The spooled files, oldest first.
    files: VecDeque<Spooled>,
    bytes: u64,
    next: u64,
    /// The file being resent, which eviction must not count yet.
    in_flight: Option<u64>,
    /// Whether the in-flight file was evicted while it was being sent.
    in_flight_evicted: bool,
    replace: Option<Replace>,
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
            } else if let Some((seq, record)) = parse_name(name) {
                let size = entry.metadata()?.len();
                files.push(Spooled { seq, size, record });
            }
        }
        files.sort_unstable();
        let next = files.last().map_or(0, |f| f.seq + 1);
        let bytes = files.iter().map(|f| f.size).sum();
        Ok(Spool {
            dir: dir.to_owned(),
            max_bytes,
            files: files.into(),
            bytes,
            next,
            in_flight: None,
            in_flight_evicted: false,
            replace: None,
        })
    }

    /// Evicted snapshots are replaced by what `replace` makes of them.
    pub fn replacing_with(mut self, replace: Replace) -> Spool {
        self.replace = Some(replace);
        self
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

    fn path(&self, file: Spooled) -> PathBuf {
        // Zero-padded so names sort like numbers.
        let suffix = if file.record { RECORD_SUFFIX } else { SUFFIX };
        self.dir.join(format!("{:020}{suffix}", file.seq))
    }

    /// Appends one encoded snapshot, first deleting the oldest ones if it
    /// would not fit otherwise; those deleted are replaced by the record of
    /// their loss when the spool has a [`Replace`] function.
    pub fn push(&mut self, payload: &[u8]) -> io::Result<Pushed> {
        let (mut pushed, replacements) = self.push_evicting(payload, self.replace, false)?;
        for replacement in replacements {
            // A replacement that evicts is not replaced again: the records
            // of losses cannot chase each other around the spool.
            let (more, _) = self.push_evicting(&replacement, None, true)?;
            pushed.dropped += more.dropped;
        }
        Ok(pushed)
    }

    /// Replaces a snapshot evicted while in flight and then not delivered
    /// ([`Finished::Dropped`]) by the record of its loss.
    pub fn push_replacement_of(&mut self, payload: &[u8]) -> io::Result<Pushed> {
        match self.replace.and_then(|replace| replace(payload)) {
            Some(replacement) => self
                .push_evicting(&replacement, None, true)
                .map(|(pushed, _)| pushed),
            None => Ok(Pushed::default()),
        }
    }

    fn push_evicting(
        &mut self,
        payload: &[u8],
        replace: Option<Replace>,
        record: bool,
    ) -> io::Result<(Pushed, Vec<Vec<u8>>)> {
        let len = payload.len() as u64;
        let mut pushed = Pushed::default();
        let mut replacements = Vec::new();
        if len > self.max_bytes {
            pushed.rejected = true;
            return Ok((pushed, replacements));
        }
        while self.bytes + len > self.max_bytes {
            // The oldest window goes first; records of losses only when
            // nothing else is left.
            let victim = self.files.iter().position(|f| !f.record).unwrap_or(0);
            let Some(file) = self.files.remove(victim) else {
                break;
            };
            let (seq, size) = (file.seq, file.size);
            let path = self.path(file);
            let in_flight = self.in_flight == Some(seq);
            let replacement = replace
                .filter(|_| !in_flight)
                .and_then(|replace| replace(&fs::read(&path).ok()?));
            remove_if_present(&path)?;
            self.bytes -= size;
            if in_flight {
                self.in_flight_evicted = true;
                continue;
            }
            pushed.dropped += 1;
            if let Some(replacement) = replacement {
                pushed.replaced += 1;
                replacements.push(replacement);
            }
        }
        self.write(payload, record)?;
        Ok((pushed, replacements))
    }

    fn write(&mut self, payload: &[u8], record: bool) -> io::Result<()> {
        let len = payload.len() as u64;
        let seq = self.next;
        let tmp = self.dir.join(format!("{seq:020}{TMP_SUFFIX}"));
        let mut file = fs::File::create(&tmp)?;
        file.write_all(payload)?;
        // On disk before it is visible under its final name.
        file.sync_data()?;
        let file = Spooled {
            seq,
            size: len,
            record,
        };
        fs::rename(&tmp, self.path(file))?;
        self.next += 1;
        self.files.push_back(file);
        self.bytes += len;
        Ok(())
    }

    /// Reads the oldest snapshot and marks it in flight, or `None` when the
    /// spool is empty.
    pub fn begin(&mut self) -> io::Result<Option<(u64, Vec<u8>)>> {
        let Some(&file) = self.files.front() else {
            return Ok(None);
        };
        let seq = file.seq;
        let payload = fs::read(self.path(file))?;
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
        if let Some(at) = self.files.iter().position(|f| f.seq == seq) {
            let file = self.files.remove(at).expect("position is in range");
            remove_if_present(&self.path(file))?;
            self.bytes -= file.size;
        }
        Ok(())
    }
}

/// A spool file's sequence number, and whether it is a record of a loss.
fn parse_name(name: &str) -> Option<(u64, bool)> {
    let (stem, record) = match name.strip_suffix(SUFFIX) {
        Some(stem) => (stem, false),
        None => (name.strip_suffix(RECORD_SUFFIX)?, true),
    };
    Some((stem.parse().ok()?, record))
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
                rejected: true,
                ..Pushed::default()
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

    /// A stand-in for `Snapshot::lost_in_transport`: the first byte of
    /// the record of a payload's loss.
    fn record_of_loss(payload: &[u8]) -> Option<Vec<u8>> {
        (payload[0] < 100).then(|| vec![payload[0] + 100; 2])
    }

    #[test]
    fn evicted_snapshots_leave_the_record_of_their_loss() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path(), 25)
            .unwrap()
            .replacing_with(record_of_loss);
        spool.push(&[1; 10]).unwrap();
        spool.push(&[2; 10]).unwrap();
        // 1 makes room for 3 and leaves its record behind.
        let pushed = spool.push(&[3; 10]).unwrap();
        assert_eq!((pushed.dropped, pushed.replaced), (1, 1));
        let firsts: Vec<u8> = drain(&mut spool).iter().map(|p| p[0]).collect();
        assert_eq!(firsts, [2, 3, 101]);

        // Evicted in flight, then not delivered: replaced on request.
        spool.push(&[4; 10]).unwrap();
        spool.push(&[5; 10]).unwrap();
        let (seq, payload) = spool.begin().unwrap().unwrap();
        spool.push(&[6; 10]).unwrap();
        assert_eq!(spool.finish(seq, false).unwrap(), Finished::Dropped);
        spool.push_replacement_of(&payload).unwrap();
        let firsts: Vec<u8> = drain(&mut spool).iter().map(|p| p[0]).collect();
        assert_eq!(firsts, [5, 6, 104]);
    }

    #[test]
    fn records_of_loss_are_not_replaced_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path(), 9)
            .unwrap()
            .replacing_with(record_of_loss);
        spool.push(&[1; 8]).unwrap();
        // 1 leaves its record, which evicts 2 without a record of its own.
        spool.push(&[2; 8]).unwrap();
        let firsts: Vec<u8> = drain(&mut spool).iter().map(|p| p[0]).collect();
        assert_eq!(firsts, [101]);
    }

    #[test]
    fn windows_are_evicted_before_the_records_of_losses_even_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path(), 25)
            .unwrap()
            .replacing_with(record_of_loss);
        for i in 1..=3u8 {
            spool.push(&[i; 10]).unwrap();
        }
        drop(spool);
        let mut spool = Spool::open(dir.path(), 25)
            .unwrap()
            .replacing_with(record_of_loss);
        // 2 goes, not the older record of 1.
        spool.push(&[4; 10]).unwrap();
        let firsts: Vec<u8> = drain(&mut spool).iter().map(|p| p[0]).collect();
        assert_eq!(firsts, [3, 101, 4, 102]);
    }
}
