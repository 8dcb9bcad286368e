//! What the kernel's side-band records say of every process on the machine,
//! for the per-CPU mode ([`super::cpu_wide`]): each pid's name, its threads'
//! names, and its executable mappings with their build ids, kept from its
//! `FORK` to its `EXIT` so that samples of a process that has already
//! exited can still be matched and symbolized, as `perf report` does.
//!
//! A process that was running before the profile opened has no `FORK`
//! here: its mappings are then unknown (`maps` is `None`) and read from
//! `/proc/PID/maps` while it lives, as the per-thread mode does.

use std::collections::HashMap;

use super::modules::ExecMapping;

/// An executable mapping as an `MMAP2` record states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedMapping {
    pub mapping: ExecMapping,
    /// The mapped file's build id, when the kernel put it in the record.
    pub build_id: Option<Vec<u8>>,
}

/// A side-band record of the kernel, as the table needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskEvent {
    /// `PERF_RECORD_COMM`: a thread took a name, at `exec` or by
    /// `prctl(PR_SET_NAME)`.
    Comm {
        pid: u32,
        tid: u32,
        name: String,
        exec: bool,
    },
    /// `PERF_RECORD_FORK`: a new process (`pid != ppid`) or a new thread.
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
        ptid: u32,
    },
    /// `PERF_RECORD_EXIT` of one thread.
    Exit { pid: u32, tid: u32 },
    /// `PERF_RECORD_MMAP2` of executable memory.
    Mmap { pid: u32, mapped: RecordedMapping },
}

/// One process as the records describe it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Process {
    /// Its main thread's name (what `/proc/PID/comm` shows); empty until a
    /// record names it.
    pub comm: String,
    /// Its executable mappings in address order, when every one of them is
    /// known from records (the process was born or ran `exec` during the
    /// profile); `None` otherwise.
    pub maps: Option<Vec<RecordedMapping>>,
    /// Whether the profile's target designates it, once decided.
    pub matched: Option<bool>,
    /// Its main thread exited: it is freed once its samples are
    /// symbolized ([`ProcessTable::free_exited`]).
    pub exited: bool,
    /// The target's samples kept of it.
    pub sampled: u64,
    /// Whether a rescan found it (its CPU time is then read from `/proc`).
    pub rescanned: bool,
}

/// How a record changed a process, for the caller's caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Nothing,
    /// The pid now names another program (`exec`, or a new process reusing
    /// the pid): what was resolved for it no longer holds.
    AddressSpace(u32),
    /// A mapping was added over addresses already mapped.
    Remapped(u32),
    /// The process's name changed: whether it matches may have too.
    Renamed(u32),
}

/// Every process the records named, and their threads' names.
#[derive(Debug, Default)]
pub struct ProcessTable {
    processes: HashMap<u32, Process>,
    /// Thread id → (process id, name).
    threads: HashMap<u32, (u32, String)>,
}

/// The kernel flags a `COMM` record caused by `execve` (`PERF_RECORD_MISC_COMM_EXEC`).
pub const MISC_COMM_EXEC: u16 = 1 << 13;

impl ProcessTable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, pid: u32) -> Option<&Process> {
        self.processes.get(&pid)
    }

    pub fn get_mut(&mut self, pid: u32) -> Option<&mut Process> {
        self.processes.get_mut(&pid)
    }

    /// The process, added unknown (running since before the profile) if no
    /// record named it yet.
    pub fn entry(&mut self, pid: u32) -> &mut Process {
        self.processes.entry(pid).or_default()
    }

    pub fn len(&self) -> usize {
        self.processes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.processes.is_empty()
    }

    /// Every process known, by pid.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Process)> {
        self.processes.iter().map(|(&pid, p)| (pid, p))
    }

    /// A thread's name, as the last record gave it.
    pub fn thread_name(&self, tid: u32) -> Option<&str> {
        self.threads.get(&tid).map(|(_, name)| name.as_str())
    }

    /// Names a thread no record named (it ran before the profile opened);
    /// later `COMM` records rename it.
    pub fn name_thread(&mut self, pid: u32, tid: u32, name: String) {
        self.threads.entry(tid).or_insert((pid, name));
    }

    /// Applies one record, in the order of the records' times.
    pub fn apply(&mut self, event: &TaskEvent) -> Change {
        match event {
            TaskEvent::Comm {
                pid,
                tid,
                name,
                exec,
            } => {
                self.threads.insert(*tid, (*pid, name.clone()));
                let process = self.entry(*pid);
                if *exec {
                    // The new program's mappings follow this record.
                    *process = Process {
                        comm: name.clone(),
                        maps: Some(Vec::new()),
                        matched: None,
                        ..std::mem::take(process)
                    };
                    return Change::AddressSpace(*pid);
                }
                if *pid != *tid || process.comm == *name {
                    return Change::Nothing;
                }
                process.comm = name.clone();
                process.matched = None;
                Change::Renamed(*pid)
            }
            TaskEvent::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => {
                let parent_thread = self.thread_name(*ptid).map(str::to_owned);
                if pid == ppid {
                    let name = parent_thread
                        .or_else(|| self.get(*pid).map(|p| p.comm.clone()))
                        .unwrap_or_default();
                    self.threads.insert(*tid, (*pid, name));
                    return Change::Nothing;
                }
                // A new process: a copy of its parent's address space, name
                // and target membership (a pid reused replaces all).
                let child = match self.get(*ppid) {
                    Some(parent) => Process {
                        comm: parent.comm.clone(),
                        maps: parent.maps.clone(),
                        matched: parent.matched,
                        ..Process::default()
                    },
                    None => Process::default(),
                };
                let name = parent_thread.unwrap_or_else(|| child.comm.clone());
                self.threads.retain(|_, (owner, _)| owner != pid);
                self.threads.insert(*tid, (*pid, name));
                self.processes.insert(*pid, child);
                Change::AddressSpace(*pid)
            }
            TaskEvent::Exit { pid, tid } => {
                if pid == tid {
                    if let Some(process) = self.processes.get_mut(pid) {
                        process.exited = true;
                    }
                } else {
                    self.threads.remove(tid);
                }
                Change::Nothing
            }
            TaskEvent::Mmap { pid, mapped } => {
                let Some(maps) = self.processes.get_mut(pid).and_then(|p| p.maps.as_mut()) else {
                    return Change::Nothing;
                };
                let (start, end) = (mapped.mapping.start, mapped.mapping.end);
                let before = maps.len();
                // A mapping replaces whatever it overlaps (MAP_FIXED).
                maps.retain(|m| m.mapping.end <= start || end <= m.mapping.start);
                let remapped = maps.len() != before;
                let at = maps.partition_point(|m| m.mapping.start < start);
                maps.insert(at, mapped.clone());
                if remapped {
                    Change::Remapped(*pid)
                } else {
                    Change::Nothing
                }
            }
        }
    }

    /// Forgets the processes that exited, with their threads: call once
    /// their samples are symbolized. Returns them.
    pub fn free_exited(&mut self) -> Vec<(u32, Process)> {
        let gone: Vec<u32> = self
            .processes
            .iter()
            .filter(|(_, p)| p.exited)
            .map(|(&pid, _)| pid)
            .collect();
        if !gone.is_empty() {
            self.threads.retain(|_, (pid, _)| !gone.contains(pid));
        }
        gone.into_iter()
            .filter_map(|pid| Some((pid, self.processes.remove(&pid)?)))
            .collect()
    }
}

#[cfg(test)]
mod tests;
