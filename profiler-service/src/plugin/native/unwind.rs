//! User stacks from DWARF CFI, as samply does: each sample carries the
//! user registers (ip, sp, bp) and a copy of the top of the user stack, and
//! framehop walks that copy with the `.eh_frame` rules of the modules the
//! process maps. Code built without frame pointers then keeps its callers.
//!
//! Modules are loaded per process when first needed and again when an
//! address falls outside every known executable mapping (a library loaded
//! by dlopen since), at most once per [`RELOAD_INTERVAL`] so that a stray
//! address cannot make every sample re-read the maps. Code with no unwind
//! information (JIT code in anonymous memory) is walked with frame
//! pointers, framehop's fallback rule.
//!
//! framehop's x86-64 unwinder builds on every host; samples carry stack
//! copies only on x86-64 (`perf.rs`), so elsewhere it is never called.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::sync::Arc;
use std::time::{Duration, Instant};

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::Unwinder;
use tracing::debug;

use super::modules::{
    covers, parse_exec_mappings, read_vdso, ExecMapping, FileKey, ModuleFile, SectionData,
    UnwindSections,
};
use super::perf::UserRegs;
use super::process_table::RecordedMapping;
use crate::targets::ProcFs;

/// The most frames kept per stack, as the kernel's default
/// `perf_event_max_stack`.
pub const MAX_FRAMES: usize = 127;
/// The shortest time between two re-reads of a process's maps.
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(1);

struct Process {
    unwinder: UnwinderX86_64<SectionData>,
    maps: Vec<ExecMapping>,
    /// Start addresses of the mappings added to the unwinder.
    added: HashSet<u64>,
    reloaded: Option<Instant>,
    /// Whether `maps` came from the kernel's records
    /// ([`Unwinders::set_recorded_maps`]), not from `/proc`.
    recorded: bool,
}

impl Process {
    fn new() -> Self {
        Process {
            unwinder: UnwinderX86_64::new(),
            maps: Vec::new(),
            added: HashSet::new(),
            reloaded: None,
            recorded: false,
        }
    }
}

/// The unwinders of one profile's processes.
pub struct Unwinders {
    procfs: ProcFs,
    cache: CacheX86_64,
    /// Files already read, shared by every process mapping them; `None`
    /// for a file without unwind information (not retried).
    files: HashMap<FileKey, Option<Arc<UnwindSections>>>,
    processes: HashMap<u32, Process>,
}

impl Unwinders {
    pub fn new(procfs: ProcFs) -> Self {
        Unwinders {
            procfs,
            cache: CacheX86_64::new(),
            files: HashMap::new(),
            processes: HashMap::new(),
        }
    }

    /// Unwinds one sample's user stack into `out`, leaf first: the
    /// instruction pointer, then return addresses. `stack` holds the
    /// memory from `regs.sp` up.
    pub fn unwind(&mut self, pid: u32, regs: UserRegs, stack: &[u8], out: &mut Vec<u64>) {
        let process = self.processes.entry(pid).or_insert_with(Process::new);
        if process.reloaded.is_none() && !process.recorded {
            reload(&self.procfs, &mut self.files, pid, process);
        }
        walk(process, &mut self.cache, regs, stack, out);
        if process.recorded {
            return;
        }
        let unknown = out.iter().any(|&a| !covers(&process.maps, a));
        let may_reload = process
            .reloaded
            .is_none_or(|at| at.elapsed() >= RELOAD_INTERVAL);
        if unknown && may_reload {
            reload(&self.procfs, &mut self.files, pid, process);
            walk(process, &mut self.cache, regs, stack, out);
        }
    }

    /// Unwinds a process's stacks with the modules its `MMAP2` records
    /// mapped rather than those of `/proc/PID/maps`, which an exited
    /// process no longer has (the per-CPU mode).
    pub fn set_recorded_maps(&mut self, pid: u32, maps: &[RecordedMapping]) {
        let process = self.processes.entry(pid).or_insert_with(Process::new);
        process.recorded = true;
        let mappings: Vec<(ExecMapping, Option<&[u8]>)> = maps
            .iter()
            .map(|m| (m.mapping.clone(), m.build_id.as_deref()))
            .collect();
        add_modules(&self.procfs, &mut self.files, pid, process, &mappings);
    }

    /// Drops a process that exited (its pid may be reused).
    pub fn forget(&mut self, pid: u32) {
        self.processes.remove(&pid);
    }
}

fn walk(
    process: &Process,
    cache: &mut CacheX86_64,
    regs: UserRegs,
    stack: &[u8],
    out: &mut Vec<u64>,
) {
    out.clear();
    let mut read_stack = |addr: u64| -> Result<u64, ()> {
        let offset = usize::try_from(addr.checked_sub(regs.sp).ok_or(())?).map_err(|_| ())?;
        let bytes = stack
            .get(offset..offset.checked_add(8).ok_or(())?)
            .ok_or(())?;
        Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| ())?))
    };
    let mut frames = process.unwinder.iter_frames(
        regs.ip,
        UnwindRegsX86_64::new(regs.ip, regs.sp, regs.bp),
        cache,
        &mut read_stack,
    );
    // An error only ends the walk: the frames found so far stand (the
    // iterator also ends in an error on stacks it cannot prove complete).
    while out.len() < MAX_FRAMES {
        match frames.next() {
            Ok(Some(frame)) => out.push(frame.address()),
            Ok(None) | Err(_) => break,
        }
    }
}

/// Re-reads a process's executable mappings, adding modules for the new
/// ones and removing those unmapped since.
fn reload(
    procfs: &ProcFs,
    files: &mut HashMap<FileKey, Option<Arc<UnwindSections>>>,
    pid: u32,
    process: &mut Process,
) {
    process.reloaded = Some(Instant::now());
    let maps = match fs::read_to_string(procfs.proc_file(pid, "maps")) {
        Ok(text) => parse_exec_mappings(&text),
        Err(e) => {
            debug!(pid, error = %e, "cannot read maps for unwinding");
            return;
        }
    };
    let mappings: Vec<(ExecMapping, Option<&[u8]>)> =
        maps.into_iter().map(|mapping| (mapping, None)).collect();
    add_modules(procfs, files, pid, process, &mappings);
}

/// Makes `maps` (with their recorded build ids, if any) the process's
/// modules: those new are added, those gone removed.
fn add_modules(
    procfs: &ProcFs,
    files: &mut HashMap<FileKey, Option<Arc<UnwindSections>>>,
    pid: u32,
    process: &mut Process,
    maps: &[(ExecMapping, Option<&[u8]>)],
) {
    let live: HashSet<u64> = maps.iter().map(|(m, _)| m.start).collect();
    for gone in process.added.difference(&live) {
        process.unwinder.remove_module(*gone);
    }
    process.added.retain(|start| live.contains(start));
    for (mapping, build_id) in maps {
        if process.added.contains(&mapping.start) {
            continue;
        }
        let sections = if mapping.is_file() {
            file_sections(procfs, files, pid, mapping, *build_id)
        } else if mapping.path == "[vdso]" {
            read_vdso(procfs, pid, mapping).map(Arc::new)
        } else {
            // Anonymous code: frame pointers only, and nothing to retry.
            None
        };
        if let Some(module) = sections.and_then(|s| s.module(mapping)) {
            process.unwinder.add_module(module);
        }
        // Marked as done even without a module: a file with no unwind
        // information does not grow one.
        process.added.insert(mapping.start);
    }
    process.maps = maps.iter().map(|(m, _)| m.clone()).collect();
}

fn file_sections(
    procfs: &ProcFs,
    files: &mut HashMap<FileKey, Option<Arc<UnwindSections>>>,
    pid: u32,
    mapping: &ExecMapping,
    build_id: Option<&[u8]>,
) -> Option<Arc<UnwindSections>> {
    // A process that exited is reached through its records' path and
    // build id only.
    let opened = ModuleFile::open(procfs, pid, mapping)
        .or_else(|_| ModuleFile::open_recorded(&mapping.path, build_id));
    let file = match opened {
        Ok(file) => file,
        Err(e) => {
            debug!(pid, path = %mapping.path, error = %e, "cannot open module for unwinding");
            return None;
        }
    };
    let key = file.key;
    files
        .entry(key)
        .or_insert_with(|| file.sections().map(Arc::new))
        .clone()
}
