//! Addresses to function names, cached per address for the life of a
//! profile.
//!
//! User addresses are resolved from the ELF symbol tables of the files the
//! process maps ([`super::module_symbols`]: the module's own `.symtab`, its
//! debug file's or its MiniDebugInfo's, and `.dynsym`, as perf reads them),
//! kernel ones from `/proc/kallsyms` read once per agent
//! ([`super::kallsyms`]), JIT code's from the process's perf map
//! (`/tmp/perf-PID.map`, see [`super::perfmap`]). An address nothing
//! resolves becomes `[unknown]` with the module it falls in, so a flame
//! graph still says *where* it was (`[libc.so.6]`). A module whose debug
//! file a debuginfod server is still sending ([`super::debuginfod`]) stays
//! grouped so until the file arrives; then its addresses are resolved
//! again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use odp_core::Frame;
use tracing::debug;

use super::debuginfod::Debuginfod;
use super::elf_symbols::demangle;
use super::kallsyms;
use super::module_symbols::{self, ModuleSymbols};
use super::modules::{
    find_exec_mapping, parse_exec_mappings, read_vdso_image, ExecMapping, ModuleFile,
};
use super::perfmap::{PerfMaps, JIT_MODULE};
use super::process_table::RecordedMapping;
use crate::targets::{self, ProcFs};

pub const UNKNOWN: &str = "[unknown]";
pub const KERNEL: &str = "[kernel]";
/// How often modules still waiting for a debug file ask for it again (the
/// client itself waits [`super::debuginfod::RETRY_AFTER`] after a
/// failure).
const REQUEST_AGAIN_EVERY: Duration = Duration::from_secs(30);

/// The symbol cache of one profile.
pub struct Symbols {
    procfs: ProcFs,
    user: HashMap<(u32, u64), Frame>,
    kernel: HashMap<u64, Frame>,
    processes: HashMap<u32, ProcessModules>,
    perf_maps: PerfMaps,
    debuginfod: Option<DebuginfodWatch>,
}

/// What the symbolizer knows of its debuginfod client's progress.
struct DebuginfodWatch {
    client: Arc<Debuginfod>,
    /// The client's generation last looked at.
    generation: u64,
    /// When modules still waiting last asked again.
    asked_again_at: Instant,
}

impl Symbols {
    pub fn new(procfs: ProcFs) -> Self {
        Symbols {
            procfs: procfs.clone(),
            user: HashMap::new(),
            kernel: HashMap::new(),
            processes: HashMap::new(),
            perf_maps: PerfMaps::new(procfs.clone()),
            debuginfod: None,
        }
    }

    /// Stripped modules nothing else names get their debug files from
    /// `client` (when there is one), in the background.
    pub fn with_debuginfod(mut self, client: Option<Arc<Debuginfod>>) -> Self {
        self.debuginfod = client.map(|client| DebuginfodWatch {
            generation: client.generation(),
            client,
            asked_again_at: Instant::now(),
        });
        self
    }

    /// Forgets what was resolved in modules whose debug file has arrived
    /// since, so they are read again with it; now and then asks again for
    /// the files still missing (after a failure).
    fn catch_up_with_debuginfod(&mut self) {
        let Some(watch) = &mut self.debuginfod else {
            return;
        };
        let generation = watch.client.generation();
        let ask_again = watch.asked_again_at.elapsed() >= REQUEST_AGAIN_EVERY;
        if generation == watch.generation && !ask_again {
            return;
        }
        watch.generation = generation;
        if ask_again {
            watch.asked_again_at = Instant::now();
        }
        let mut arrived: Vec<(u32, u64, u64)> = Vec::new();
        for (&pid, process) in &mut self.processes {
            process.modules.retain(|mapping, placed| {
                let Some((symbols, _)) = placed else {
                    return true;
                };
                if symbols.debug_file_arrived(&watch.client) {
                    arrived.push((pid, mapping.start, mapping.end));
                    return false;
                }
                if let (true, Some(id)) = (ask_again, &symbols.awaiting) {
                    watch.client.request(id);
                }
                true
            });
        }
        if !arrived.is_empty() {
            debug!(
                mappings = arrived.len(),
                "debug files arrived: symbolizing again"
            );
            self.user.retain(|&(pid, addr), _| {
                !arrived
                    .iter()
                    .any(|&(p, start, end)| p == pid && (start..end).contains(&addr))
            });
        }
    }

    /// Resolves the addresses of one process not yet cached, in one batch.
    pub fn resolve_user(&mut self, pid: u32, addrs: &[u64]) {
        self.catch_up_with_debuginfod();
        if self.perf_maps.refresh(pid) {
            // A JIT named more code: what was unknown may have a name now,
            // and reused JIT memory may hold other code than before.
            self.user.retain(|&(p, _), frame| {
                p != pid || (frame.function != UNKNOWN && frame.module != JIT_MODULE)
            });
        }
        let mut missing: Vec<u64> = addrs
            .iter()
            .copied()
            .filter(|a| !self.user.contains_key(&(pid, *a)))
            .collect();
        if missing.is_empty() {
            return;
        }
        missing.sort_unstable();
        missing.dedup();
        let perf_maps = &self.perf_maps;
        let user = &mut self.user;
        missing.retain(|&addr| match perf_maps.lookup(pid, addr) {
            Some(name) => {
                let frame = Frame::function(name).with_module(JIT_MODULE);
                user.insert((pid, addr), frame);
                false
            }
            None => true,
        });
        if missing.is_empty() {
            return;
        }
        let procfs = &self.procfs;
        let debuginfod = self.debuginfod.as_ref().map(|w| &*w.client);
        let mut reloaded = false;
        let process = self.processes.entry(pid).or_insert_with(|| {
            reloaded = true;
            ProcessModules::read(procfs, pid)
        });
        for addr in missing {
            // Libraries get loaded late (dlopen): an address outside every
            // known mapping re-reads the maps, once per batch.
            if !reloaded && !process.recorded && find_exec_mapping(&process.maps, addr).is_none() {
                process.reload(procfs, pid);
                reloaded = true;
            }
            let frame = process.frame(procfs, pid, addr, debuginfod);
            self.user.insert((pid, addr), frame);
        }
    }

    /// Places a process's modules by the mappings its `MMAP2` records gave
    /// rather than by `/proc/PID/maps`, which an exited process no longer
    /// has: the per-CPU mode calls this before [`Self::resolve_user`].
    pub fn set_recorded_maps(&mut self, pid: u32, maps: &[RecordedMapping]) {
        let process = self
            .processes
            .entry(pid)
            .or_insert_with(ProcessModules::empty);
        process.recorded = true;
        process.maps = maps.iter().map(|m| m.mapping.clone()).collect();
        process.build_ids = maps
            .iter()
            .filter_map(|m| Some((m.mapping.clone(), m.build_id.clone()?)))
            .collect();
        let kept = &process.maps;
        process.modules.retain(|mapping, _| kept.contains(mapping));
    }

    /// Resolves kernel addresses not yet cached, in one batch.
    pub fn resolve_kernel(&mut self, addrs: &[u64]) {
        let mut missing: Vec<u64> = addrs
            .iter()
            .copied()
            .filter(|a| !self.kernel.contains_key(a))
            .collect();
        if missing.is_empty() {
            return;
        }
        missing.sort_unstable();
        missing.dedup();
        let table = kallsyms::shared();
        for addr in missing {
            let function = table.and_then(|t| t.lookup(addr)).unwrap_or(KERNEL);
            self.kernel
                .insert(addr, Frame::function(function).with_module(KERNEL));
        }
    }

    /// The frame of a resolved user address ([`Self::resolve_user`] first).
    pub fn user_frame(&self, pid: u32, addr: u64) -> Frame {
        self.user
            .get(&(pid, addr))
            .cloned()
            .unwrap_or_else(|| Frame::function(UNKNOWN))
    }

    /// The frame of a resolved kernel address.
    pub fn kernel_frame(&self, addr: u64) -> Frame {
        self.kernel
            .get(&addr)
            .cloned()
            .unwrap_or_else(|| Frame::function(KERNEL).with_module(KERNEL))
    }

    /// Drops what is cached for a process that exited (its pid may be
    /// reused by another program).
    pub fn forget(&mut self, pid: u32) {
        self.user.retain(|&(p, _), _| p != pid);
        self.processes.remove(&pid);
        self.perf_maps.forget(pid);
    }
}

/// A module's symbols placed in one process: the table and its load bias.
type Placed = Option<(Arc<ModuleSymbols>, u64)>;

/// The executable mappings of one process and the symbols of those looked
/// up so far.
struct ProcessModules {
    maps: Vec<ExecMapping>,
    /// Whether `maps` came from the kernel's records
    /// ([`Symbols::set_recorded_maps`]), not from `/proc`.
    recorded: bool,
    /// The build ids the records gave, by mapping.
    build_ids: HashMap<ExecMapping, Vec<u8>>,
    /// `None` for a mapping whose file cannot be read or placed.
    modules: HashMap<ExecMapping, Placed>,
}

impl ProcessModules {
    fn empty() -> Self {
        ProcessModules {
            maps: Vec::new(),
            recorded: false,
            build_ids: HashMap::new(),
            modules: HashMap::new(),
        }
    }

    fn read(procfs: &ProcFs, pid: u32) -> Self {
        let mut process = ProcessModules::empty();
        process.reload(procfs, pid);
        process
    }

    /// Re-reads the maps, keeping the symbols of mappings still there.
    fn reload(&mut self, procfs: &ProcFs, pid: u32) {
        match std::fs::read_to_string(procfs.proc_file(pid, "maps")) {
            Ok(text) => self.maps = parse_exec_mappings(&text),
            Err(e) => {
                // Typically the process exited between sampling and now.
                debug!(pid, error = %e, "cannot read maps for symbolizing");
                return;
            }
        }
        let maps = &self.maps;
        self.modules.retain(|mapping, _| maps.contains(mapping));
    }

    /// The frame of one address: its function when a symbol covers it,
    /// else the module it is in.
    fn frame(
        &mut self,
        procfs: &ProcFs,
        pid: u32,
        addr: u64,
        debuginfod: Option<&Debuginfod>,
    ) -> Frame {
        let Some(mapping) = find_exec_mapping(&self.maps, addr) else {
            return Frame::function(UNKNOWN);
        };
        let build_id = self.build_ids.get(mapping).map(Vec::as_slice);
        let placed = self
            .modules
            .entry(mapping.clone())
            .or_insert_with(|| place_module(procfs, pid, mapping, build_id, debuginfod));
        let name = placed
            .as_ref()
            .and_then(|(symbols, bias)| symbols.table.lookup(addr.checked_sub(*bias)?));
        let function = name.map_or(std::borrow::Cow::Borrowed(UNKNOWN), demangle);
        Frame::function(function).with_module(targets::module_name(&mapping.path))
    }
}

/// The symbols of a mapping's module, shared with every process mapping
/// the same file, and where the mapping puts them.
fn place_module(
    procfs: &ProcFs,
    pid: u32,
    mapping: &ExecMapping,
    build_id: Option<&[u8]>,
    debuginfod: Option<&Debuginfod>,
) -> Placed {
    let symbols = if mapping.is_file() {
        // A process that exited is reached through its records' path and
        // build id only.
        let file = ModuleFile::open(procfs, pid, mapping)
            .or_else(|_| ModuleFile::open_recorded(&mapping.path, build_id))
            .map_err(|e| {
                debug!(pid, path = %mapping.path, error = %e, "cannot open module for symbols");
            })
            .ok()?;
        // Debug files are searched in the process's root first (a
        // container's own packages), then in ours.
        let roots = [procfs.in_root(pid, Path::new("/")), PathBuf::from("/")];
        let path = mapping
            .path
            .strip_suffix(" (deleted)")
            .unwrap_or(&mapping.path);
        // Another profile may hold this module's symbols from before its
        // debug file arrived: those are read again.
        let stale = |held: &ModuleSymbols| debuginfod.is_some_and(|c| held.debug_file_arrived(c));
        module_symbols::shared(file.key, stale, || {
            ModuleSymbols::read_with_debuginfod(
                file.into_file(),
                Path::new(path),
                &roots,
                debuginfod,
            )
        })
    } else if mapping.path == "[vdso]" {
        Arc::new(ModuleSymbols::from_image(&read_vdso_image(
            procfs, pid, mapping,
        )?))
    } else {
        // Anonymous code: named by perf maps or not at all.
        return None;
    };
    let bias = symbols.bias(mapping)?;
    Some((symbols, bias))
}

#[cfg(test)]
mod tests {
    use object::{Object, ObjectSymbol};

    use super::super::modules::load_bias;
    use super::*;

    /// Where this process maps `name` of its `[vdso]`.
    fn vdso_function(name: &str) -> u64 {
        let procfs = ProcFs::default();
        let pid = std::process::id();
        let maps = parse_exec_mappings(&std::fs::read_to_string("/proc/self/maps").unwrap());
        let vdso = maps.iter().find(|m| m.path == "[vdso]").expect("a vdso");
        let image = read_vdso_image(&procfs, pid, vdso).unwrap();
        let elf = object::File::parse(image.as_slice()).unwrap();
        let stated = elf
            .dynamic_symbols()
            .find(|s| s.name() == Ok(name))
            .unwrap_or_else(|| panic!("{name} in the vdso"))
            .address();
        stated + load_bias(&super::super::modules::load_segments(&elf), vdso).unwrap()
    }

    #[test]
    fn names_functions_of_this_program_its_libc_and_its_vdso() {
        let pid = std::process::id();
        let mut symbols = Symbols::new(ProcFs::default());
        let own = names_functions_of_this_program_its_libc_and_its_vdso as *const () as u64;
        let exported = libc::pthread_create as *const () as u64;
        let vdso = vdso_function("__vdso_clock_gettime");
        // Inside each function, as a return address is.
        let addrs = [own + 1, exported + 1, vdso + 1, 8];
        symbols.resolve_user(pid, &addrs);
        let frame = |addr| symbols.user_frame(pid, addr);

        let exe = std::env::current_exe().unwrap();
        let program = targets::module_name(exe.to_str().unwrap());
        assert!(
            frame(own + 1)
                .function
                .ends_with("names_functions_of_this_program_its_libc_and_its_vdso"),
            "{:?}",
            frame(own + 1)
        );
        assert_eq!(frame(own + 1).module, program);
        // libc's debug file also has the local alias __pthread_create_2_1
        // there; perf prefers the global name.
        assert_eq!(
            frame(exported + 1),
            Frame::function("pthread_create").with_module("libc.so.6")
        );
        // clock_gettime is a weak alias there.
        assert_eq!(
            frame(vdso + 1),
            Frame::function("__vdso_clock_gettime").with_module("[vdso]")
        );
        assert_eq!(frame(8), Frame::function(UNKNOWN), "mapped nowhere");
    }
}
