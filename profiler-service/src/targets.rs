//! Target discovery through `/proc`: which processes a profile samples, their
//! threads and names, and the executable mappings used to name modules.
//!
//! Everything goes through [`ProcFs`] so tests can point it at a fake tree.
//! Parsers are tolerant: a process can vanish between two reads, so a file
//! that is gone or malformed means "no such process", never a panic.
//!
//! Broad targets (a command-line regex, a cgroup) never designate the agent
//! itself or its descendants (py-spy, jcmd): a regex like `java` would
//! otherwise match `jcmd`, and a cgroup the agent shares with its target
//! would make it sample itself. The matching rules live in [`matching`].

mod matching;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use odp_core::Target;

pub use matching::{parse_cgroup_paths, CgroupTarget, CmdlineSelector};

/// The kernel truncates `comm` to 15 bytes (TASK_COMM_LEN - 1).
const COMM_MAX: usize = 15;

/// A view of a procfs mount.
#[derive(Debug, Clone)]
pub struct ProcFs {
    root: PathBuf,
    /// The agent's pid: it and its descendants are left out of broad
    /// targets. `None` for a fake tree unless a test sets one.
    agent: Option<u32>,
}

impl Default for ProcFs {
    fn default() -> Self {
        ProcFs::at("/proc").excluding(Some(std::process::id()))
    }
}

/// How far up the parent chain a process is checked for being the agent's
/// descendant; deeper trees (and pid loops in a broken fake tree) stop here.
const MAX_ANCESTRY: usize = 64;

impl ProcFs {
    /// A procfs rooted somewhere else (tests use a temporary tree).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        ProcFs {
            root: root.into(),
            agent: None,
        }
    }

    /// Leaves this process and its descendants out of command-line and
    /// cgroup targets.
    pub fn excluding(mut self, agent: Option<u32>) -> Self {
        self.agent = agent;
        self
    }

    fn pid_dir(&self, pid: u32) -> PathBuf {
        self.root.join(pid.to_string())
    }

    /// The live processes a target designates, sorted. Empty when none
    /// matches (the caller reports "no such process").
    pub fn resolve(&self, target: &Target) -> io::Result<Vec<u32>> {
        match target {
            Target::Pid(pid) => Ok(if self.is_alive(*pid) {
                vec![*pid]
            } else {
                Vec::new()
            }),
            Target::ProcessName(name) => {
                self.scan(|pid| self.comm(pid).is_some_and(|comm| comm_matches(&comm, name)))
            }
            Target::CommandLine(pattern) => {
                // Compiled per scan (once a second at most): validated by
                // the API and the agent's command check, so an error here
                // only comes from a command that skipped both.
                let selector = CmdlineSelector::new(pattern)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                self.scan(|pid| {
                    self.cmdline(pid)
                        .is_some_and(|line| selector.matches(&line))
                        && !self.is_agent_or_descendant(pid)
                })
            }
            Target::Cgroup(wanted) => {
                let selector = CgroupTarget::parse(wanted)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                self.scan(|pid| {
                    self.cgroup_paths(pid)
                        .is_some_and(|paths| paths.iter().any(|p| selector.matches(p)))
                        && !self.is_agent_or_descendant(pid)
                })
            }
            Target::Imported(_) => Ok(Vec::new()),
        }
    }

    /// Every live process the predicate accepts, sorted.
    fn scan(&self, mut wanted: impl FnMut(u32) -> bool) -> io::Result<Vec<u32>> {
        let mut pids: Vec<u32> = numeric_entries(&self.root)?
            .into_iter()
            .filter(|&pid| wanted(pid) && self.is_alive(pid))
            .collect();
        pids.sort_unstable();
        Ok(pids)
    }

    /// The command line (`/proc/PID/cmdline`): its NUL-separated arguments
    /// joined by spaces. `None` when unreadable or empty (kernel threads
    /// have none, so a regex like `.*` never selects them).
    pub fn cmdline(&self, pid: u32) -> Option<String> {
        let raw = fs::read(self.pid_dir(pid).join("cmdline")).ok()?;
        let line = join_cmdline(&raw);
        (!line.is_empty()).then_some(line)
    }

    /// The cgroup paths of a process (`/proc/PID/cgroup`), one per
    /// hierarchy.
    pub fn cgroup_paths(&self, pid: u32) -> Option<Vec<String>> {
        let text = fs::read_to_string(self.pid_dir(pid).join("cgroup")).ok()?;
        Some(parse_cgroup_paths(&text))
    }

    /// The parent pid (`/proc/PID/stat`, the field after the state).
    pub fn ppid(&self, pid: u32) -> Option<u32> {
        let stat = fs::read_to_string(self.pid_dir(pid).join("stat")).ok()?;
        parse_stat_ppid(&stat)
    }

    fn is_agent_or_descendant(&self, pid: u32) -> bool {
        let Some(agent) = self.agent else {
            return false;
        };
        let mut current = pid;
        for _ in 0..MAX_ANCESTRY {
            if current == agent {
                return true;
            }
            match self.ppid(current) {
                Some(parent) if parent != 0 && parent != current => current = parent,
                _ => return false,
            }
        }
        false
    }

    /// Whether the process exists and is not a zombie: a zombie has no
    /// threads left to sample, so for a profile it has exited.
    pub fn is_alive(&self, pid: u32) -> bool {
        fs::read_to_string(self.pid_dir(pid).join("stat"))
            .ok()
            .and_then(|stat| parse_stat_state(&stat))
            .is_some_and(|state| !matches!(state, 'Z' | 'X' | 'x'))
    }

    /// The thread ids of a process (its `task/` entries), sorted.
    pub fn threads(&self, pid: u32) -> io::Result<Vec<u32>> {
        let mut tids = numeric_entries(&self.pid_dir(pid).join("task"))?;
        tids.sort_unstable();
        Ok(tids)
    }

    /// The process name (`/proc/PID/comm`).
    pub fn comm(&self, pid: u32) -> Option<String> {
        read_comm(&self.pid_dir(pid).join("comm"))
    }

    /// A thread's name (`/proc/PID/task/TID/comm`).
    pub fn thread_comm(&self, pid: u32, tid: u32) -> Option<String> {
        read_comm(
            &self
                .pid_dir(pid)
                .join("task")
                .join(tid.to_string())
                .join("comm"),
        )
    }

    /// The executable of a process (`/proc/PID/exe`), as the process sees
    /// it (inside its own mount namespace).
    pub fn exe(&self, pid: u32) -> Option<PathBuf> {
        fs::read_link(self.pid_dir(pid).join("exe")).ok()
    }

    /// A file of the process's own procfs directory (`status`, `cwd`...).
    pub fn proc_file(&self, pid: u32, name: &str) -> PathBuf {
        self.pid_dir(pid).join(name)
    }

    /// A path as the process sees it, reachable from here through
    /// `/proc/PID/root` (so files inside a container resolve too).
    pub fn in_root(&self, pid: u32, path: &Path) -> PathBuf {
        let relative = path.strip_prefix("/").unwrap_or(path);
        self.pid_dir(pid).join("root").join(relative)
    }

    /// The file-backed mappings of a process.
    pub fn maps(&self, pid: u32) -> io::Result<Vec<Mapping>> {
        let text = fs::read_to_string(self.pid_dir(pid).join("maps"))?;
        Ok(parse_maps(&text))
    }
}

/// Whether a `comm` value designates a requested process name. Names longer
/// than the kernel keeps match on their first 15 bytes, so asking for
/// `my-long-service-name` finds the process the kernel calls
/// `my-long-service`.
pub fn comm_matches(comm: &str, wanted: &str) -> bool {
    if wanted.is_empty() {
        return false;
    }
    if wanted.len() > COMM_MAX {
        comm.as_bytes() == &wanted.as_bytes()[..COMM_MAX]
    } else {
        comm == wanted
    }
}

fn read_comm(path: &Path) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    Some(text.trim_end_matches('\n').to_owned())
}

/// The names of a directory's entries that are decimal numbers.
fn numeric_entries(dir: &Path) -> io::Result<Vec<u32>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        // An entry that vanished while listing is simply skipped.
        let Ok(entry) = entry else { continue };
        if let Some(n) = entry.file_name().to_str().and_then(parse_decimal) {
            out.push(n);
        }
    }
    Ok(out)
}

fn parse_decimal(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The state letter of `/proc/PID/stat`. The name field may itself contain
/// spaces and parentheses, so the state is found after the *last* `)`.
pub fn parse_stat_state(stat: &str) -> Option<char> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_ascii_whitespace().next()?.chars().next()
}

/// The parent pid of `/proc/PID/stat`, the field after the state.
pub fn parse_stat_ppid(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// `/proc/PID/cmdline` as one line: arguments are NUL-terminated, so the
/// trailing NUL is dropped and the others become spaces. Invalid UTF-8 is
/// replaced rather than refused (a regex can still match the rest).
pub fn join_cmdline(raw: &[u8]) -> String {
    let raw = raw.strip_suffix(b"\0").unwrap_or(raw);
    String::from_utf8_lossy(raw).replace('\0', " ")
}

/// One file-backed executable mapping of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// The path or pseudo-name (`[vdso]`...).
    pub path: String,
}

impl Mapping {
    /// The short name shown in frames: the file name of the path.
    pub fn module_name(&self) -> &str {
        module_name(&self.path)
    }
}

/// The file name of a module path (`/usr/lib/libc.so.6` → `libc.so.6`);
/// pseudo-names like `[vdso]` stay as they are.
pub fn module_name(path: &str) -> &str {
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    path.rsplit('/').next().unwrap_or(path)
}

/// Parses `/proc/PID/maps`, keeping executable mappings that have a path
/// or pseudo-name. Malformed lines are skipped.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_maps_line).collect()
}

fn parse_maps_line(line: &str) -> Option<Mapping> {
    // address perms offset dev inode pathname; the path may contain spaces.
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let perms = fields.next()?;
    let _offset = fields.next()?;
    let _dev = fields.next()?;
    let _inode = fields.next()?;
    let path = fields.next().unwrap_or("").trim_start();
    let executable = perms.as_bytes().get(2) == Some(&b'x');
    if !executable || path.is_empty() {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        path: path.to_owned(),
    })
}

/// The mapping containing an address, if any (mappings are sorted by
/// address in `/proc/PID/maps`).
pub fn find_mapping(maps: &[Mapping], addr: u64) -> Option<&Mapping> {
    let index = maps.partition_point(|m| m.end <= addr);
    maps.get(index).filter(|m| m.start <= addr && addr < m.end)
}

#[cfg(test)]
mod tests;
