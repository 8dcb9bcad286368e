//! The function symbols of a mapped module, from the best source there is,
//! read once per file and shared by every profile of the agent.
//!
//! Sources, as perf uses them: the module's own `.symtab` when it was not
//! stripped; otherwise the `.symtab` of its separate debug file
//! ([`DebugLink`]), of the one a debuginfod server sent ([`Debuginfod`]),
//! or of its MiniDebugInfo; always its `.dynsym`, which the others may not
//! repeat (MiniDebugInfo holds only what `.dynsym` lacks).
//!
//! A module none of them names is asked of debuginfod in the background;
//! its table says so ([`ModuleSymbols::awaiting`]) until the file arrives
//! and the module is read again.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use object::ReadCache;
use tracing::debug;

use super::debug_files::{mini_debug_info, DebugLink};
use super::debuginfod::{Debuginfod, FetchStatus};
use super::elf_symbols::{read_symbols, RawSymbol, SymbolTable, Table};
use super::modules::{load_bias, load_segments, ExecMapping, FileKey, LoadSegment};

/// Where a module's local functions were named from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolSource {
    /// The module's own `.symtab`.
    Own,
    /// A separate debug file (`/usr/lib/debug/.build-id/…`).
    DebugFile,
    /// A debug file from a debuginfod server, in its cache.
    Debuginfod,
    /// The module's `.gnu_debugdata`.
    MiniDebugInfo,
    /// Nothing beyond `.dynsym`: local functions stay unnamed.
    DynamicOnly,
}

/// The symbols of one module file and how to place them in a process.
#[derive(Debug)]
pub struct ModuleSymbols {
    pub table: SymbolTable,
    pub source: SymbolSource,
    /// The build id asked of debuginfod for this module, whose file was
    /// not there yet when it was read.
    pub awaiting: Option<Vec<u8>>,
    segments: Vec<LoadSegment>,
}

impl ModuleSymbols {
    /// Reads an ELF module; `roots` are where its debug file is searched
    /// (see [`DebugLink::open`]). Anything unreadable gives an empty table:
    /// its addresses are then shown as the module.
    pub fn read(file: File, module_path: &Path, roots: &[PathBuf]) -> Self {
        ModuleSymbols::read_with_debuginfod(file, module_path, roots, None)
    }

    /// [`Self::read`], also looking in `debuginfod`'s cache and, when
    /// nothing names the module, asking its servers for next time.
    pub fn read_with_debuginfod(
        file: File,
        module_path: &Path,
        roots: &[PathBuf],
        debuginfod: Option<&Debuginfod>,
    ) -> Self {
        let cache = ReadCache::new(file);
        let Ok(elf) = object::File::parse(&cache) else {
            return ModuleSymbols::empty();
        };
        let mut symbols = read_symbols(&elf, Table::Full);
        let mut source = SymbolSource::Own;
        let mut awaiting = None;
        if symbols.is_empty() {
            (symbols, source) = stripped_symbols(&elf, module_path, roots, debuginfod);
            if source == SymbolSource::DynamicOnly {
                awaiting = request_debug_file(&elf, debuginfod);
            }
        }
        // After the full table: of equal aliases the first read wins.
        symbols.extend(read_symbols(&elf, Table::Dynamic));
        ModuleSymbols {
            table: SymbolTable::new(symbols),
            source,
            awaiting,
            segments: load_segments(&elf),
        }
    }

    /// Whether the debug file this module was waiting for has arrived, so
    /// that reading it again names its functions.
    pub fn debug_file_arrived(&self, debuginfod: &Debuginfod) -> bool {
        self.awaiting
            .as_deref()
            .is_some_and(|id| debuginfod.status(id) == FetchStatus::Fetched)
    }

    /// Reads an ELF image held in memory (the `[vdso]`), which has no
    /// debug file.
    pub fn from_image(image: &[u8]) -> Self {
        let Ok(elf) = object::File::parse(image) else {
            return ModuleSymbols::empty();
        };
        let mut symbols = read_symbols(&elf, Table::Full);
        let source = if symbols.is_empty() {
            SymbolSource::DynamicOnly
        } else {
            SymbolSource::Own
        };
        symbols.extend(read_symbols(&elf, Table::Dynamic));
        ModuleSymbols {
            table: SymbolTable::new(symbols),
            source,
            awaiting: None,
            segments: load_segments(&elf),
        }
    }

    fn empty() -> Self {
        ModuleSymbols {
            table: SymbolTable::default(),
            source: SymbolSource::DynamicOnly,
            awaiting: None,
            segments: Vec::new(),
        }
    }

    /// What is added to this module's stated addresses in `mapping`.
    pub fn bias(&self, mapping: &ExecMapping) -> Option<u64> {
        load_bias(&self.segments, mapping)
    }
}

/// The full symbol table of a stripped module: its debug file's, else the
/// one debuginfod cached, else its MiniDebugInfo's, else none.
fn stripped_symbols<'data, R: object::ReadRef<'data>>(
    elf: &object::File<'data, R>,
    module_path: &Path,
    roots: &[PathBuf],
    debuginfod: Option<&Debuginfod>,
) -> (Vec<RawSymbol>, SymbolSource) {
    let link = DebugLink::of(elf);
    let fetched = || {
        let client = debuginfod?;
        link.open_file(&client.cached(link.build_id.as_deref()?)?)
    };
    if let Some(symbols) = full_symbols(link.open(module_path, roots)) {
        return (symbols, SymbolSource::DebugFile);
    }
    if let Some(symbols) = full_symbols(fetched()) {
        return (symbols, SymbolSource::Debuginfod);
    }
    if let Some(image) = mini_debug_info(elf) {
        if let Ok(mini) = object::File::parse(image.as_slice()) {
            let symbols = read_symbols(&mini, Table::Full);
            if !symbols.is_empty() {
                return (symbols, SymbolSource::MiniDebugInfo);
            }
        }
    }
    (Vec::new(), SymbolSource::DynamicOnly)
}

/// The `.symtab` of a debug file, unless it has none.
fn full_symbols(debug_file: Option<ReadCache<File>>) -> Option<Vec<RawSymbol>> {
    let debug_file = debug_file?;
    let elf = object::File::parse(&debug_file).ok()?;
    let symbols = read_symbols(&elf, Table::Full);
    (!symbols.is_empty()).then_some(symbols)
}

/// Asks debuginfod for the debug file of a module nothing names, unless
/// its cache holds one already (one that named nothing: asking again
/// would not help). The build id asked for, if any.
fn request_debug_file<'data, R: object::ReadRef<'data>>(
    elf: &object::File<'data, R>,
    debuginfod: Option<&Debuginfod>,
) -> Option<Vec<u8>> {
    let client = debuginfod?;
    let build_id = DebugLink::of(elf).build_id?;
    if client.cached(&build_id).is_some() {
        return None;
    }
    client.request(&build_id);
    Some(build_id)
}

/// The agent's module symbols, by file: a table lives while some profile
/// holds it, so concurrent profiles of the same programs read each
/// library once, and an idle agent holds none.
static SHARED: Mutex<Option<HashMap<FileKey, Weak<ModuleSymbols>>>> = Mutex::new(None);

/// The symbols of the file `key` identifies, loaded by `load` unless some
/// profile holds them already and they are not `stale` (waiting for a
/// debug file that has arrived since).
pub fn shared(
    key: FileKey,
    stale: impl Fn(&ModuleSymbols) -> bool,
    load: impl FnOnce() -> ModuleSymbols,
) -> Arc<ModuleSymbols> {
    let held = |shared: &Option<HashMap<FileKey, Weak<ModuleSymbols>>>| {
        shared
            .as_ref()?
            .get(&key)?
            .upgrade()
            .filter(|symbols| !stale(symbols))
    };
    if let Some(symbols) = held(&lock()) {
        return symbols;
    }
    // Loaded without the lock: a large debug file must not stall other
    // profiles' lookups. Two profiles may then load one file at once; the
    // first stored wins.
    let loaded = Arc::new(load());
    debug!(
        symbols = loaded.table.len(),
        source = ?loaded.source,
        "module symbols loaded"
    );
    let mut guard = lock();
    if let Some(symbols) = held(&guard) {
        return symbols;
    }
    let map = guard.get_or_insert_with(HashMap::new);
    map.retain(|_, weak| weak.strong_count() > 0);
    map.insert(key, Arc::downgrade(&loaded));
    loaded
}

fn lock() -> std::sync::MutexGuard<'static, Option<HashMap<FileKey, Weak<ModuleSymbols>>>> {
    // A panic elsewhere while holding it leaves a usable map.
    SHARED.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";

    fn libc() -> ModuleSymbols {
        ModuleSymbols::read(File::open(LIBC).unwrap(), Path::new(LIBC), &["/".into()])
    }

    #[test]
    fn libc_names_its_local_thread_entry_points_from_its_debug_file() {
        // Debian strips libc's .symtab; libc6-dbg (installed by
        // scripts/bootstrap.sh) holds the debug file perf reads the same
        // names from.
        let symbols = libc();
        assert_eq!(
            symbols.source,
            SymbolSource::DebugFile,
            "no debug file for {LIBC}: install libc6-dbg"
        );
        let stripped = ModuleSymbols::read(File::open(LIBC).unwrap(), Path::new(LIBC), &[]);
        assert_eq!(stripped.source, SymbolSource::DynamicOnly);
        assert!(
            stripped.table.len() < symbols.table.len(),
            "{} dynamic vs {} in all",
            stripped.table.len(),
            symbols.table.len()
        );
        for name in ["start_thread", "clone3", "__libc_start_call_main"] {
            let addr = address_of(name);
            assert_eq!(symbols.table.lookup(addr + 1), Some(name), "{name}");
            assert_eq!(stripped.table.lookup(addr + 1), None, "{name} is local");
        }
        // The exported entry point is named without its version.
        let start_main = address_of("__libc_start_main_impl");
        assert_eq!(
            symbols.table.lookup(start_main + 4),
            Some("__libc_start_main")
        );
    }

    /// A function's address in libc, from its debug file's `.symtab` as
    /// readelf shows it.
    fn address_of(name: &str) -> u64 {
        let link = {
            let data = std::fs::read(LIBC).unwrap();
            let elf = object::File::parse(data.as_slice()).unwrap();
            DebugLink::of(&elf)
        };
        let debug = link.open(Path::new(LIBC), &["/".into()]).unwrap();
        let elf = object::File::parse(&debug).unwrap();
        use object::{Object, ObjectSymbol};
        elf.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| s.address())
            .unwrap_or_else(|| panic!("{name} in libc's debug file"))
    }

    #[test]
    fn the_shared_cache_loads_a_file_once_while_held() {
        // A file no other test symbolizes, so none holds its entry.
        let key = FileKey::of(&std::fs::metadata("/usr/bin/true").unwrap());
        let fresh = |_: &ModuleSymbols| false;
        let first = shared(key, fresh, ModuleSymbols::empty);
        let second = shared(key, fresh, || panic!("already held"));
        assert!(Arc::ptr_eq(&first, &second));
        drop((first, second));
        let mut reloaded = false;
        let third = shared(key, fresh, || {
            reloaded = true;
            ModuleSymbols::empty()
        });
        assert!(reloaded, "nobody held it, so it was dropped");
        let fourth = shared(key, |_| true, ModuleSymbols::empty);
        assert!(!Arc::ptr_eq(&third, &fourth), "stale ones are loaded again");
    }
}
