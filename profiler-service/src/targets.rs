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
//! would make it sample itself. The matching rules live in `targets/matching.rs`.

mod matching;

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
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
        // Compiled per scan (once a second at most): validated by the API
        // and the agent's command check, so an error here only comes from
        // a command that skipped both.
        self.resolve_selector(&Selector::new(target)?)
    }

    /// The live processes a compiled target designates, sorted
    /// ([`resolve`](Self::resolve)).
    pub fn resolve_selector(&self, selector: &Selector) -> io::Result<Vec<u32>> {
        match selector {
            Selector::Pid(pid) => Ok(if self.is_alive(*pid) {
                vec![*pid]
            } else {
                Vec::new()
            }),
            Selector::Nothing => Ok(Vec::new()),
            Selector::Descendants(root) => self.tree(*root),
            selector => self.scan(|pid| self.selects(selector, &ProcessFacts::new(pid))),
        }
    }

    /// For each selector, whether it designates at least one live process
    /// now: one pass over the process list whatever the number of
    /// selectors, reading each process's files at most once, and ending
    /// early once every selector has matched. The rules are those of
    /// [`resolve`](Self::resolve).
    pub fn any_live(&self, selectors: &[Selector]) -> io::Result<Vec<bool>> {
        let mut found = vec![false; selectors.len()];
        let mut left = selectors.len();
        if left == 0 {
            return Ok(found);
        }
        for pid in numeric_entries(&self.root)? {
            let facts = ProcessFacts::new(pid);
            let mut alive = None;
            for (selector, found) in selectors.iter().zip(found.iter_mut()) {
                if *found || !self.selects(selector, &facts) {
                    continue;
                }
                if *alive.get_or_insert_with(|| self.is_alive(pid)) {
                    *found = true;
                    left -= 1;
                }
            }
            if left == 0 {
                break;
            }
        }
        Ok(found)
    }

    /// Whether a live process is one a selector designates, reading its
    /// `/proc` files now.
    pub fn designates(&self, selector: &Selector, pid: u32) -> bool {
        self.selects(selector, &ProcessFacts::new(pid))
    }

    /// Whether a process is one a selector designates (liveness aside).
    fn selects(&self, selector: &Selector, facts: &ProcessFacts) -> bool {
        match selector {
            Selector::Pid(pid) => facts.pid == *pid,
            Selector::Descendants(root) => self.descends_from(facts.pid, *root),
            Selector::Name(name) => facts
                .comm(self)
                .is_some_and(|comm| comm_matches(comm, name)),
            Selector::Cmdline(cmdline) => {
                facts
                    .cmdline(self)
                    .is_some_and(|line| cmdline.matches(line))
                    && !facts.agent_side(self)
            }
            Selector::Cgroup(cgroup) => {
                facts
                    .cgroups(self)
                    .is_some_and(|paths| paths.iter().any(|p| cgroup.matches(p)))
                    && !facts.agent_side(self)
            }
            Selector::Nothing => false,
        }
    }

    /// A live process and its live descendants, sorted: one read of every
    /// process's parent, then the tree from `root` down. A descendant
    /// whose parent exited was re-parented (to init or a subreaper) and
    /// is no longer found here.
    fn tree(&self, root: u32) -> io::Result<Vec<u32>> {
        if !self.is_alive(root) {
            return Ok(Vec::new());
        }
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for pid in numeric_entries(&self.root)? {
            if let Some(parent) = self.ppid(pid).filter(|&parent| parent != pid) {
                children.entry(parent).or_default().push(pid);
            }
        }
        let mut tree = vec![root];
        let mut seen = HashSet::from([root]);
        let mut next = 0;
        while let Some(&pid) = tree.get(next) {
            next += 1;
            for &child in children.get(&pid).into_iter().flatten() {
                // A pid loop only exists in a broken fake tree.
                if seen.insert(child) {
                    tree.push(child);
                }
            }
        }
        tree.retain(|&pid| pid == root || self.is_alive(pid));
        tree.sort_unstable();
        Ok(tree)
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

    /// The CPU a process has used (all its threads, utime + stime) and
    /// when it started, in clock ticks (`/proc/PID/stat`).
    pub fn cpu_ticks(&self, pid: u32) -> Option<CpuTicks> {
        let stat = fs::read_to_string(self.pid_dir(pid).join("stat")).ok()?;
        parse_stat_cpu(&stat)
    }

    /// The resident memory of a process, in bytes: `/proc/PID/statm`'s
    /// resident pages times the page size.
    pub fn rss_bytes(&self, pid: u32) -> Option<u64> {
        let statm = fs::read_to_string(self.pid_dir(pid).join("statm")).ok()?;
        let pages = parse_statm_resident(&statm)?;
        pages.checked_mul(rustix::param::page_size() as u64)
    }

    /// Clock ticks since boot (`/proc/uptime`), the clock of
    /// [`CpuTicks::started`].
    pub fn uptime_ticks(&self) -> Option<u64> {
        let uptime = fs::read_to_string(self.root.join("uptime")).ok()?;
        let seconds: f64 = uptime.split_ascii_whitespace().next()?.parse().ok()?;
        Some((seconds * TICKS_PER_SECOND as f64) as u64)
    }

    /// The parent pid (`/proc/PID/stat`, the field after the state).
    pub fn ppid(&self, pid: u32) -> Option<u32> {
        let stat = fs::read_to_string(self.pid_dir(pid).join("stat")).ok()?;
        parse_stat_ppid(&stat)
    }

    fn is_agent_or_descendant(&self, pid: u32) -> bool {
        self.agent
            .is_some_and(|agent| self.descends_from(pid, agent))
    }

    /// Whether the process is `ancestor` or descends from it, by the
    /// parent pids of `/proc`.
    fn descends_from(&self, pid: u32, ancestor: u32) -> bool {
        let mut current = pid;
        for _ in 0..MAX_ANCESTRY {
            if current == ancestor {
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

/// A [`Target`] compiled once to match many processes: the selection
/// rules of [`ProcFs::resolve`], shared by profiles and by the service scan
/// of heartbeats ([`ProcFs::any_live`]).
#[derive(Debug, Clone)]
pub enum Selector {
    /// One process by id.
    Pid(u32),
    /// A process and its descendants (`include_children`), by the parent
    /// pids of `/proc`.
    Descendants(u32),
    /// Processes by `comm` ([`comm_matches`]).
    Name(String),
    /// Processes whose command line matches, not the agent's own.
    Cmdline(CmdlineSelector),
    /// Processes in a cgroup or container, not the agent's own.
    Cgroup(CgroupTarget),
    /// No process (an imported profile's target).
    Nothing,
}

impl Selector {
    /// Compiles a target; a command-line regex or cgroup that does not
    /// parse is an `InvalidInput` error.
    pub fn new(target: &Target) -> io::Result<Selector> {
        Ok(match target {
            Target::Pid(pid) => Selector::Pid(*pid),
            Target::ProcessName(name) => Selector::Name(name.clone()),
            Target::CommandLine(pattern) => Selector::Cmdline(
                CmdlineSelector::new(pattern)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
            ),
            Target::Cgroup(wanted) => Selector::Cgroup(
                CgroupTarget::parse(wanted)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
            ),
            Target::Imported(_) => Selector::Nothing,
        })
    }

    /// The selector of a profile: with `include_children`, a pid's
    /// descendants too (the option is refused for other targets before a
    /// profile starts, and changes nothing of them here).
    pub fn of_profile(target: &Target, include_children: bool) -> io::Result<Selector> {
        Ok(match Selector::new(target)? {
            Selector::Pid(pid) if include_children => Selector::Descendants(pid),
            selector => selector,
        })
    }
}

/// What a scan learned of one process, each file read at most once
/// however many selectors ask.
struct ProcessFacts {
    pid: u32,
    comm: OnceCell<Option<String>>,
    cmdline: OnceCell<Option<String>>,
    cgroups: OnceCell<Option<Vec<String>>>,
    agent_side: OnceCell<bool>,
}

impl ProcessFacts {
    fn new(pid: u32) -> Self {
        ProcessFacts {
            pid,
            comm: OnceCell::new(),
            cmdline: OnceCell::new(),
            cgroups: OnceCell::new(),
            agent_side: OnceCell::new(),
        }
    }

    fn comm(&self, procfs: &ProcFs) -> Option<&str> {
        self.comm.get_or_init(|| procfs.comm(self.pid)).as_deref()
    }

    fn cmdline(&self, procfs: &ProcFs) -> Option<&str> {
        self.cmdline
            .get_or_init(|| procfs.cmdline(self.pid))
            .as_deref()
    }

    fn cgroups(&self, procfs: &ProcFs) -> Option<&[String]> {
        self.cgroups
            .get_or_init(|| procfs.cgroup_paths(self.pid))
            .as_deref()
    }

    /// The agent itself or one of its descendants.
    fn agent_side(&self, procfs: &ProcFs) -> bool {
        *self
            .agent_side
            .get_or_init(|| procfs.is_agent_or_descendant(self.pid))
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

/// Clock ticks per second of `/proc`'s times (`USER_HZ`), 100 on every
/// Linux architecture this agent runs on.
pub const TICKS_PER_SECOND: u64 = 100;

/// A process's CPU use and start time, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTicks {
    /// utime + stime, of all its threads.
    pub used: u64,
    /// When it started, in ticks since boot.
    pub started: u64,
}

/// utime + stime (fields 14 and 15) and starttime (field 22) of a
/// `/proc/*/stat` line, whose second field (the command, in parentheses)
/// may itself hold spaces.
pub fn parse_stat_cpu(stat: &str) -> Option<CpuTicks> {
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_ascii_whitespace().take(20).collect();
    let field = |n: usize| -> Option<u64> { fields.get(n)?.parse().ok() };
    Some(CpuTicks {
        used: field(11)?.checked_add(field(12)?)?,
        started: field(19)?,
    })
}

/// The parent pid of `/proc/PID/stat`, the field after the state.
pub fn parse_stat_ppid(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// The resident pages of `/proc/PID/statm` (its second field).
pub fn parse_statm_resident(statm: &str) -> Option<u64> {
    statm.split_ascii_whitespace().nth(1)?.parse().ok()
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
