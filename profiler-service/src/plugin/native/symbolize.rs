//! Addresses to function names with blazesym, cached per address for the
//! life of a profile.
//!
//! User addresses are resolved from the ELF symbol tables of the files the
//! process maps (`Source::Process` reads `/proc/PID/maps`), kernel ones from
//! `/proc/kallsyms` read once per agent ([`super::kallsyms`]), JIT code's from the process's perf map
//! (`/tmp/perf-PID.map`, see [`super::perfmap`]). An address nothing
//! resolves becomes `[unknown]` with the module it falls in, so a flame
//! graph still says *where* it was.

use std::collections::HashMap;

use blazesym::symbolize::source::{Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::Pid;
use odp_core::Frame;
use tracing::debug;

use super::kallsyms;
use super::perfmap::{PerfMaps, JIT_MODULE};
use crate::targets::{self, find_mapping, Mapping, ProcFs};

pub const UNKNOWN: &str = "[unknown]";
pub const KERNEL: &str = "[kernel]";

/// The symbol cache of one profile.
pub struct Symbols {
    symbolizer: Symbolizer,
    procfs: ProcFs,
    user: HashMap<(u32, u64), Frame>,
    kernel: HashMap<u64, Frame>,
    maps: HashMap<u32, Vec<Mapping>>,
    perf_maps: PerfMaps,
}

fn symbolizer() -> Symbolizer {
    Symbolizer::builder()
        .enable_code_info(false)
        .enable_inlined_fns(false)
        .enable_demangling(true)
        .build()
}

impl Symbols {
    pub fn new(procfs: ProcFs) -> Self {
        Symbols {
            symbolizer: symbolizer(),
            procfs: procfs.clone(),
            user: HashMap::new(),
            kernel: HashMap::new(),
            maps: HashMap::new(),
            perf_maps: PerfMaps::new(procfs.clone()),
        }
    }

    /// Resolves the addresses of one process not yet cached, in one batch.
    pub fn resolve_user(&mut self, pid: u32, addrs: &[u64]) {
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
        let mut process = Process::new(Pid::from(pid));
        // Perf maps are read by `PerfMaps`, which follows their growth.
        process.perf_map = false;
        let source = Source::Process(process);
        let results = match self.symbolizer.symbolize(&source, Input::AbsAddr(&missing)) {
            Ok(results) => results,
            Err(e) => {
                // Typically the process exited between sampling and now.
                debug!(pid, error = %e, "user symbolization failed");
                Vec::new()
            }
        };
        for (i, &addr) in missing.iter().enumerate() {
            let frame = match results.get(i) {
                Some(Symbolized::Sym(sym)) => {
                    let module = sym
                        .module
                        .as_deref()
                        .map(|m| targets::module_name(&m.to_string_lossy()).to_owned())
                        .unwrap_or_else(|| module_of(&mut self.maps, &self.procfs, pid, addr));
                    Frame::function(sym.name.as_ref()).with_module(module)
                }
                _ => Frame::function(UNKNOWN).with_module(module_of(
                    &mut self.maps,
                    &self.procfs,
                    pid,
                    addr,
                )),
            };
            self.user.insert((pid, addr), frame);
        }
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
        self.maps.remove(&pid);
        self.perf_maps.forget(pid);
    }
}

/// The module name of an address blazesym could not resolve; the maps are
/// re-read on a miss because libraries get loaded late.
fn module_of(
    cache: &mut HashMap<u32, Vec<Mapping>>,
    procfs: &ProcFs,
    pid: u32,
    addr: u64,
) -> String {
    let cached = cache
        .get(&pid)
        .and_then(|maps| find_mapping(maps, addr))
        .map(|m| m.module_name().to_owned());
    if let Some(name) = cached {
        return name;
    }
    let maps = procfs.maps(pid).unwrap_or_default();
    let name = find_mapping(&maps, addr)
        .map(|m| m.module_name().to_owned())
        .unwrap_or_default();
    cache.insert(pid, maps);
    name
}
