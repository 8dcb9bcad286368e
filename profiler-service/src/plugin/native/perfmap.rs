//! JIT perf maps: `/tmp/perf-PID.map`, written by JIT compilers (V8 with
//! `--perf-basic-prof`, .NET, LuaJIT, perf-map-agent...) to name code that
//! lives in anonymous memory and so has no ELF symbol table.
//!
//! Each line is `START SIZE symbolname`, START and SIZE in hex. JITs append
//! as they compile, so a file is re-read only when its size, mtime or inode
//! changed, and then only from where the last read stopped when it merely
//! grew.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use tracing::debug;

use crate::targets::ProcFs;

/// The module name given to frames named by a perf map.
pub const JIT_MODULE: &str = "[jit]";

/// One named range of JIT code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitSymbol {
    pub start: u64,
    pub end: u64,
    pub name: String,
}

/// Parses one perf map line; `None` for anything malformed, which a JIT
/// that crashed mid-write or a hand-written map may well contain.
pub fn parse_line(line: &str) -> Option<JitSymbol> {
    let line = line.trim();
    let (start, rest) = line.split_once(|c: char| c.is_ascii_whitespace())?;
    let (size, name) = rest
        .trim_start()
        .split_once(|c: char| c.is_ascii_whitespace())?;
    let hex = |s: &str| u64::from_str_radix(s.strip_prefix("0x").unwrap_or(s), 16).ok();
    let start = hex(start)?;
    let size = hex(size)?;
    let name = name.trim();
    if size == 0 || name.is_empty() {
        return None;
    }
    Some(JitSymbol {
        start,
        end: start.checked_add(size)?,
        name: name.to_owned(),
    })
}

/// Sorts symbols by start address for [`find`]; of several with the same
/// start the last one appended wins, since a JIT that reuses memory writes
/// the new code's line after the old one.
pub fn sort_symbols(symbols: &mut Vec<JitSymbol>) {
    // A stable sort keeps file order among equal starts; reversing first
    // puts the latest first so `dedup_by_key` keeps it.
    symbols.reverse();
    symbols.sort_by_key(|s| s.start);
    symbols.dedup_by_key(|s| s.start);
}

/// The symbol whose range holds `addr` in symbols sorted by [`sort_symbols`].
pub fn find(symbols: &[JitSymbol], addr: u64) -> Option<&JitSymbol> {
    let index = symbols.partition_point(|s| s.start <= addr);
    index
        .checked_sub(1)
        .and_then(|i| symbols.get(i))
        .filter(|s| addr < s.end)
}

/// The pid a process knows itself by: the last `NSpid` field of its
/// status, which differs from ours inside a pid namespace (a container).
pub fn parse_ns_pid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("NSpid:"))
        .and_then(|ids| ids.split_ascii_whitespace().last())
        .and_then(|id| id.parse().ok())
}

/// What identifies one state of the file, to notice changes with a stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    inode: u64,
    len: u64,
    mtime_ns: i128,
}

#[derive(Debug, Default)]
struct MapFile {
    path: Option<PathBuf>,
    stamp: Option<Stamp>,
    /// Bytes parsed so far, always up to a line end.
    consumed: u64,
    symbols: Vec<JitSymbol>,
}

/// The perf maps of a profile's processes.
#[derive(Debug, Default)]
pub struct PerfMaps {
    procfs: ProcFs,
    files: HashMap<u32, MapFile>,
}

impl PerfMaps {
    pub fn new(procfs: ProcFs) -> Self {
        PerfMaps {
            procfs,
            files: HashMap::new(),
        }
    }

    /// Brings a process's perf map up to date; true when its symbols
    /// changed (so names cached from before may be stale).
    pub fn refresh(&mut self, pid: u32) -> bool {
        let file = self.files.entry(pid).or_default();
        if file.path.is_none() {
            file.path = map_path(&self.procfs, pid);
        }
        let Some(path) = file.path.as_deref() else {
            return false;
        };
        let Ok(meta) = fs::metadata(path) else {
            // Not written yet, or removed: keep what was read.
            return false;
        };
        let stamp = Stamp {
            inode: meta.ino(),
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        };
        if file.stamp == Some(stamp) {
            return false;
        }
        let rewritten = file
            .stamp
            .is_some_and(|old| old.inode != stamp.inode || stamp.len < file.consumed);
        if rewritten {
            file.symbols.clear();
            file.consumed = 0;
        }
        file.stamp = Some(stamp);
        let before = file.symbols.len();
        match read_from(path, file.consumed) {
            Ok(text) => {
                // A line still being written is parsed on the next change.
                let complete = text.rfind('\n').map_or(0, |i| i + 1);
                file.symbols
                    .extend(text[..complete].lines().filter_map(parse_line));
                file.consumed += complete as u64;
                sort_symbols(&mut file.symbols);
            }
            Err(e) => debug!(pid, path = %path.display(), error = %e, "cannot read perf map"),
        }
        rewritten || file.symbols.len() != before
    }

    /// The JIT symbol holding `addr` in a process, from the last refresh.
    pub fn lookup(&self, pid: u32, addr: u64) -> Option<&str> {
        let file = self.files.get(&pid)?;
        find(&file.symbols, addr).map(|s| s.name.as_str())
    }

    pub fn forget(&mut self, pid: u32) {
        self.files.remove(&pid);
    }
}

/// Where a process's perf map is seen from here: through its own root (a
/// container's /tmp is not ours) under the pid it knows itself by, or our
/// /tmp when its root cannot be entered.
fn map_path(procfs: &ProcFs, pid: u32) -> Option<PathBuf> {
    let status = fs::read_to_string(procfs.proc_file(pid, "status")).ok()?;
    let ns_pid = parse_ns_pid(&status).unwrap_or(pid);
    let name = format!("/tmp/perf-{ns_pid}.map");
    let root = procfs.proc_file(pid, "root");
    if fs::metadata(&root).is_ok() {
        Some(procfs.in_root(pid, Path::new(&name)))
    } else {
        Some(PathBuf::from(format!("/tmp/perf-{pid}.map")))
    }
}

/// The text of a file from byte `offset` on; invalid UTF-8 is replaced
/// (only the affected lines then fail to parse).
fn read_from(path: &Path, offset: u64) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_and_skips_malformed_ones() {
        let text = "7f0000001000 40 jit_hot_loop\n\
                    garbage\n\
                    7f0000002000 zz bad_size\n\
                    7f0000003000 0 empty\n\
                    7f0000004000 10\n\
                    0x7f0000005000 0x20 LazyCompile:~foo bar.js:12\r\n\
                    ffffffffffffffff 10 overflow\n\
                    \n";
        let symbols: Vec<JitSymbol> = text.lines().filter_map(parse_line).collect();
        assert_eq!(
            symbols,
            vec![
                JitSymbol {
                    start: 0x7f00_0000_1000,
                    end: 0x7f00_0000_1040,
                    name: "jit_hot_loop".into()
                },
                JitSymbol {
                    start: 0x7f00_0000_5000,
                    end: 0x7f00_0000_5020,
                    name: "LazyCompile:~foo bar.js:12".into()
                },
            ]
        );
    }

    #[test]
    fn finds_ranges_and_latest_wins() {
        let mut symbols: Vec<JitSymbol> = "2000 100 b\n1000 10 a\n2000 80 b2\n"
            .lines()
            .filter_map(parse_line)
            .collect();
        sort_symbols(&mut symbols);
        assert_eq!(find(&symbols, 0x0fff), None);
        assert_eq!(find(&symbols, 0x1000).map(|s| s.name.as_str()), Some("a"));
        assert_eq!(find(&symbols, 0x100f).map(|s| s.name.as_str()), Some("a"));
        assert_eq!(find(&symbols, 0x1010), None);
        assert_eq!(find(&symbols, 0x207f).map(|s| s.name.as_str()), Some("b2"));
        assert_eq!(find(&symbols, 0x2080), None);
    }

    #[test]
    fn reads_the_innermost_namespace_pid() {
        let status = "Name:\tnode\nTgid:\t4242\nPid:\t4242\nNSpid:\t4242\t7\n";
        assert_eq!(parse_ns_pid(status), Some(7));
        assert_eq!(parse_ns_pid("NSpid:\t99\n"), Some(99));
        assert_eq!(parse_ns_pid("Name:\tx\n"), None);
    }

    #[test]
    fn rereads_appended_lines_and_rewrites() {
        let dir = tempfile::tempdir().unwrap();
        let pid = std::process::id();
        let path = dir.path().join("perf.map");
        let mut maps = PerfMaps::new(ProcFs::default());
        maps.files.insert(
            pid,
            MapFile {
                path: Some(path.clone()),
                ..MapFile::default()
            },
        );
        assert!(!maps.refresh(pid), "no file yet");
        fs::write(&path, "1000 10 first\n2000 10 part").unwrap();
        assert!(maps.refresh(pid));
        assert_eq!(maps.lookup(pid, 0x1004), Some("first"));
        assert_eq!(maps.lookup(pid, 0x2004), None, "incomplete line");
        assert!(!maps.refresh(pid), "unchanged");
        fs::write(&path, "1000 10 first\n2000 10 partial\n3000 10 third\n").unwrap();
        assert!(maps.refresh(pid));
        assert_eq!(maps.lookup(pid, 0x2004), Some("partial"));
        assert_eq!(maps.lookup(pid, 0x3004), Some("third"));
        fs::write(&path, "4000 10 fresh\n").unwrap();
        assert!(maps.refresh(pid), "shorter file: rewritten");
        assert_eq!(maps.lookup(pid, 0x1004), None);
        assert_eq!(maps.lookup(pid, 0x4004), Some("fresh"));
    }
}
