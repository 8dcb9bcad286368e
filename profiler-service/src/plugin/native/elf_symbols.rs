//! ELF function symbols as perf reads them, sorted for a binary search per
//! address.
//!
//! What a symbol covers follows perf (`tools/perf/util/symbol.c`): a symbol
//! with a size covers `[start, start + size)`; a symbol of size zero (asm
//! entry points, hand-written labels) covers up to the next symbol, and no
//! further than its own section. An address between sized symbols belongs
//! to none, so it is shown as its module rather than as whatever function
//! happens to precede it. Of several symbols at one address (aliases,
//! versioned names) the one perf would pick names it: sized before
//! zero-sized, strong before weak, global before local, fewer leading
//! underscores, then the longer name.

use std::borrow::Cow;
use std::cmp::Ordering;

use object::elf;
use object::read::elf::{ElfFile, FileHeader, SectionHeader, Sym};
use object::read::StringTable;
use object::{ReadRef, SectionIndex};

/// A symbol's ELF binding, as far as choosing between aliases cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    Local,
    Global,
    Weak,
}

/// A function symbol as read from a symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSymbol {
    pub start: u64,
    pub size: u64,
    /// Without a version suffix (`__libc_start_main@@GLIBC_2.34`).
    pub name: Box<str>,
    pub binding: Binding,
    /// The end of the symbol's section: a zero-size symbol stops there.
    pub section_end: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Symbol {
    start: u64,
    end: u64,
    name: Box<str>,
}

/// The function symbols of one module, in the module's own (stated)
/// addresses.
#[derive(Debug, Default)]
pub struct SymbolTable {
    /// Sorted by start, one per start address.
    symbols: Vec<Symbol>,
    /// `reach[i]`: the highest end among `symbols[..=i]`, which tells a
    /// lookup when no earlier symbol can still cover an address.
    reach: Vec<u64>,
}

impl SymbolTable {
    /// Builds the table from symbols read from any number of symbol tables
    /// (`.symtab` and `.dynsym` list most functions twice).
    pub fn new(mut raw: Vec<RawSymbol>) -> Self {
        // Stable: among equals the symbol read first wins, as in perf.
        raw.sort_by_key(|s| s.start);
        let mut chosen: Vec<RawSymbol> = Vec::with_capacity(raw.len());
        for symbol in raw {
            match chosen.last_mut() {
                Some(last) if last.start == symbol.start => {
                    if prefer(&symbol, last) == Ordering::Greater {
                        *last = symbol;
                    }
                }
                _ => chosen.push(symbol),
            }
        }
        let next_starts: Vec<Option<u64>> = chosen
            .iter()
            .skip(1)
            .map(|s| Some(s.start))
            .chain(std::iter::once(None))
            .collect();
        let symbols: Vec<Symbol> = chosen
            .into_iter()
            .zip(next_starts)
            .map(|(s, next)| {
                let end = if s.size > 0 {
                    s.start.saturating_add(s.size)
                } else {
                    // perf stretches the last one to the end of the page
                    // after the one it starts in (or at, when aligned).
                    let page_after =
                        (s.start.saturating_add(0xfff) & !0xfff).saturating_add(0x1000);
                    let stretch = next.unwrap_or(page_after);
                    stretch.min(s.section_end.max(s.start))
                };
                Symbol {
                    start: s.start,
                    end,
                    name: s.name,
                }
            })
            .collect();
        let reach = symbols
            .iter()
            .scan(0, |reach, s| {
                *reach = s.end.max(*reach);
                Some(*reach)
            })
            .collect();
        SymbolTable { symbols, reach }
    }

    /// The (mangled) name of the function covering a stated address; the
    /// innermost when symbols nest.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let last = self
            .symbols
            .partition_point(|s| s.start <= addr)
            .checked_sub(1)?;
        if self.reach[last] <= addr {
            return None;
        }
        self.symbols[..=last]
            .iter()
            .rev()
            .find(|s| addr < s.end)
            .map(|s| &*s.name)
    }

    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }
}

/// Which of two symbols at one address names it (`Greater`: `a`), perf's
/// `choose_best_symbol`.
fn prefer(a: &RawSymbol, b: &RawSymbol) -> Ordering {
    let underscores = |s: &RawSymbol| s.name.bytes().take_while(|&c| c == b'_').count();
    (a.size > 0)
        .cmp(&(b.size > 0))
        .then((a.binding != Binding::Weak).cmp(&(b.binding != Binding::Weak)))
        .then((a.binding == Binding::Global).cmp(&(b.binding == Binding::Global)))
        .then(underscores(b).cmp(&underscores(a)))
        .then(a.name.len().cmp(&b.name.len()))
}

/// Which of an object file's symbol tables to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// `.symtab`: every symbol, local ones included; stripped from most
    /// distribution libraries and kept in their debug files.
    Full,
    /// `.dynsym`: the exported symbols, always present in a shared library.
    Dynamic,
}

/// Reads the function symbols of one of a file's symbol tables: functions
/// and unnamed-type labels in executable sections, as perf keeps them.
pub fn read_symbols<'data, R: ReadRef<'data>>(
    file: &object::File<'data, R>,
    table: Table,
) -> Vec<RawSymbol> {
    match file {
        object::File::Elf64(elf) => read_elf_symbols(elf, table),
        object::File::Elf32(elf) => read_elf_symbols(elf, table),
        _ => Vec::new(),
    }
}

/// [`read_symbols`] for one ELF class. The symbol and string tables are
/// each read whole, in one read: through a `ReadCache`, object's symbol
/// iterator would read every name with a system call of its own, which
/// made a large binary's table take 25 times as long to load.
fn read_elf_symbols<'data, Elf: FileHeader, R: ReadRef<'data>>(
    file: &ElfFile<'data, Elf, R>,
    table: Table,
) -> Vec<RawSymbol> {
    let endian = file.endian();
    let data = file.data();
    let sections = file.elf_section_table();
    let code_ends: Vec<Option<u64>> = sections
        .iter()
        .map(|section| {
            let flags: u64 = section.sh_flags(endian).into();
            let start: u64 = section.sh_addr(endian).into();
            let size: u64 = section.sh_size(endian).into();
            (flags & u64::from(elf::SHF_EXECINSTR) != 0).then(|| start.saturating_add(size))
        })
        .collect();
    let wanted = match table {
        Table::Full => elf::SHT_SYMTAB,
        Table::Dynamic => elf::SHT_DYNSYM,
    };
    let Some(section) = sections.iter().find(|s| s.sh_type(endian) == wanted) else {
        return Vec::new();
    };
    let Ok(symbols) = section.data_as_array::<Elf::Sym, R>(endian, data) else {
        return Vec::new();
    };
    let strings = sections
        .section(SectionIndex(section.sh_link(endian) as usize))
        .and_then(|strtab| strtab.data(endian, data));
    let Ok(strings) = strings else {
        return Vec::new();
    };
    let strings = StringTable::new(strings, 0, strings.len() as u64);
    symbols
        .iter()
        .filter_map(|symbol| {
            let kind = symbol.st_type();
            if !matches!(kind, elf::STT_FUNC | elf::STT_GNU_IFUNC | elf::STT_NOTYPE) {
                return None;
            }
            // Undefined, absolute and other special indexes hold no code.
            let section_end = code_ends
                .get(usize::from(symbol.st_shndx(endian)))
                .copied()
                .flatten()?;
            let name = std::str::from_utf8(symbol.name(endian, strings).ok()?).ok()?;
            // `.L` locals, Fedora's `.annobin_*` markers and ARM mapping
            // symbols (`$x`) label places in code, not functions.
            if name.is_empty() || name.starts_with('.') || name.starts_with('$') {
                return None;
            }
            let binding = match symbol.st_bind() {
                elf::STB_WEAK => Binding::Weak,
                elf::STB_GLOBAL | elf::STB_GNU_UNIQUE => Binding::Global,
                _ => Binding::Local,
            };
            Some(RawSymbol {
                start: symbol.st_value(endian).into(),
                size: symbol.st_size(endian).into(),
                name: strip_version(name).into(),
                binding,
                section_end,
            })
        })
        .collect()
}

/// `name` without the symbol version a `.symtab` spells into versioned
/// names (`memcpy@@GLIBC_2.14`, `memcpy@GLIBC_2.2.5`); mangled C++ and
/// Rust names never hold an `@`.
fn strip_version(name: &str) -> &str {
    match name.find('@') {
        Some(at) if at > 0 => &name[..at],
        _ => name,
    }
}

/// A symbol name as people read it: Rust names without their hash, C++
/// names demangled, anything else as it is.
pub fn demangle(name: &str) -> Cow<'_, str> {
    if let Ok(rust) = rustc_demangle::try_demangle(name) {
        return Cow::Owned(format!("{rust:#}"));
    }
    if name.starts_with("_Z") {
        if let Some(cpp) = cpp_demangle::Symbol::new(name)
            .ok()
            .and_then(|s| s.demangle().ok())
        {
            return Cow::Owned(cpp);
        }
    }
    Cow::Borrowed(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(start: u64, size: u64, name: &str, binding: Binding) -> RawSymbol {
        RawSymbol {
            start,
            size,
            name: name.into(),
            binding,
            section_end: 0x9000,
        }
    }

    #[test]
    fn sized_symbols_cover_their_size_only() {
        let table = SymbolTable::new(vec![
            raw(0x2000, 0x100, "second", Binding::Global),
            raw(0x1000, 0x80, "first", Binding::Local),
        ]);
        assert_eq!(table.lookup(0x0fff), None);
        assert_eq!(table.lookup(0x1000), Some("first"));
        assert_eq!(table.lookup(0x107f), Some("first"));
        assert_eq!(table.lookup(0x1080), None, "the gap belongs to no one");
        assert_eq!(table.lookup(0x1fff), None);
        assert_eq!(table.lookup(0x20ff), Some("second"));
        assert_eq!(table.lookup(0x2100), None);
    }

    #[test]
    fn zero_size_symbols_reach_the_next_symbol_within_their_section() {
        let table = SymbolTable::new(vec![
            raw(0x1000, 0, "asm_entry", Binding::Global),
            raw(0x1800, 0x10, "sized", Binding::Global),
            raw(0x8800, 0, "last", Binding::Local),
        ]);
        assert_eq!(table.lookup(0x17ff), Some("asm_entry"));
        assert_eq!(table.lookup(0x1800), Some("sized"));
        assert_eq!(table.lookup(0x1810), None, "sized symbols do not stretch");
        assert_eq!(table.lookup(0x8fff), Some("last"));
        assert_eq!(table.lookup(0x9000), None, "the section ends there");

        let mut page_end = raw(0x4100, 0, "at_page", Binding::Local);
        page_end.section_end = u64::MAX;
        let table = SymbolTable::new(vec![page_end]);
        // perf: roundup(start, 4096) + 4096.
        assert_eq!(table.lookup(0x5fff), Some("at_page"));
        assert_eq!(table.lookup(0x6000), None);
        let mut aligned = raw(0x4000, 0, "aligned", Binding::Local);
        aligned.section_end = u64::MAX;
        let table = SymbolTable::new(vec![aligned]);
        assert_eq!(table.lookup(0x4fff), Some("aligned"));
        assert_eq!(table.lookup(0x5000), None);
    }

    #[test]
    fn aliases_resolve_to_the_name_perf_prefers() {
        // libc's __libc_start_main and its local aliases, as in its
        // debug file's .symtab.
        let table = SymbolTable::new(vec![
            raw(0x27280, 321, "__libc_start_main_alias_2", Binding::Local),
            raw(0x27280, 321, "__libc_start_main_impl", Binding::Local),
            raw(0x27280, 321, "__libc_start_main", Binding::Global),
            raw(0x100, 0, "zero_size", Binding::Global),
            raw(0x100, 8, "sized", Binding::Local),
            raw(0x200, 8, "weak", Binding::Weak),
            raw(0x200, 8, "strong", Binding::Local),
            raw(0x300, 8, "__two", Binding::Global),
            raw(0x300, 8, "_one", Binding::Global),
            raw(0x400, 8, "short", Binding::Global),
            raw(0x400, 8, "longer", Binding::Global),
        ]);
        assert_eq!(table.len(), 5);
        assert_eq!(table.lookup(0x27304), Some("__libc_start_main"));
        assert_eq!(table.lookup(0x104), Some("sized"));
        assert_eq!(table.lookup(0x204), Some("strong"));
        assert_eq!(table.lookup(0x304), Some("_one"));
        assert_eq!(table.lookup(0x404), Some("longer"));
    }

    #[test]
    fn nested_symbols_resolve_to_the_innermost() {
        let table = SymbolTable::new(vec![
            raw(0x1000, 0x1000, "outer", Binding::Global),
            raw(0x1100, 0x20, "inner", Binding::Local),
            raw(0x1200, 0x10, "after", Binding::Local),
        ]);
        assert_eq!(table.lookup(0x1110), Some("inner"));
        assert_eq!(table.lookup(0x1150), Some("outer"));
        assert_eq!(table.lookup(0x1250), Some("outer"));
        assert_eq!(table.lookup(0x2000), None);
        assert!(SymbolTable::new(Vec::new()).lookup(0x1000).is_none());
    }

    #[test]
    fn versions_are_stripped_and_names_demangled() {
        assert_eq!(
            strip_version("__libc_start_main@@GLIBC_2.34"),
            "__libc_start_main"
        );
        assert_eq!(strip_version("memcpy@GLIBC_2.2.5"), "memcpy");
        assert_eq!(strip_version("plain"), "plain");
        assert_eq!(
            demangle("_ZNSt6thread11_State_implD0Ev"),
            "std::thread::_State_impl::~_State_impl()"
        );
        assert_eq!(
            demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"),
            "core::ptr::drop_in_place"
        );
        assert_eq!(demangle("start_thread"), "start_thread");
        assert_eq!(demangle("_Znot_really"), "_Znot_really");
    }
}
