//! The kernel's symbol table, read from `/proc/kallsyms` once per agent and
//! shared by every profile.
//!
//! Why not blazesym's kernel source: its symbolizer is per profile (it is
//! not `Send`), so each profile made the kernel generate and parse
//! kallsyms' megabytes of text again. Measured by the overhead bench, that
//! was most of a short profile's CPU. A sorted table behind an `Arc` costs
//! one read per agent and a binary search per new address.

use std::fs;
use std::sync::OnceLock;

/// Symbols sorted by address.
#[derive(Debug, Default)]
pub struct KernelTable {
    symbols: Vec<(u64, Box<str>)>,
}

impl KernelTable {
    /// Parses kallsyms text (`ffffffff81000000 T _stext`, with a trailing
    /// `[module]` for module symbols). Only code symbols are kept; `None`
    /// when every address reads as zero (hidden by `kernel.kptr_restrict`).
    pub fn parse(text: &str) -> Option<Self> {
        let mut symbols: Vec<(u64, Box<str>)> = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split_ascii_whitespace();
                let addr = u64::from_str_radix(fields.next()?, 16).ok()?;
                let kind = fields.next()?;
                let name = fields.next()?;
                let code = matches!(kind, "t" | "T" | "w" | "W");
                (code && addr != 0).then(|| (addr, name.into()))
            })
            .collect();
        if symbols.is_empty() {
            return None;
        }
        symbols.sort_unstable_by_key(|(addr, _)| *addr);
        Some(KernelTable { symbols })
    }

    /// The function `addr` falls in: the closest symbol at or below it.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let at = self.symbols.partition_point(|(start, _)| *start <= addr);
        at.checked_sub(1).map(|i| &*self.symbols[i].1)
    }

    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }
}

/// The agent's table, read on first use; `None` when kallsyms cannot be
/// read or hides addresses (every kernel frame is then `[kernel]`).
pub fn shared() -> Option<&'static KernelTable> {
    static TABLE: OnceLock<Option<KernelTable>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let text = fs::read_to_string("/proc/kallsyms").ok()?;
            KernelTable::parse(&text)
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _stext
ffffffff81000100 t do_one
ffffffff81000180 D some_data
ffffffff81000200 W weak_fn
ffffffffc0000000 t ext4_read [ext4]
garbage line
";

    #[test]
    fn addresses_resolve_to_the_closest_code_symbol_below() {
        let table = KernelTable::parse(TEXT).unwrap();
        assert_eq!(table.len(), 4, "data and garbage are skipped");
        assert_eq!(table.lookup(0xffffffff81000000), Some("_stext"));
        assert_eq!(table.lookup(0xffffffff81000150), Some("do_one"));
        assert_eq!(table.lookup(0xffffffff81000190), Some("do_one"));
        assert_eq!(table.lookup(0xffffffff81000210), Some("weak_fn"));
        assert_eq!(table.lookup(0xffffffffc0000010), Some("ext4_read"));
        assert_eq!(table.lookup(0x1000), None);
    }

    #[test]
    fn hidden_addresses_make_no_table() {
        assert!(KernelTable::parse("0000000000000000 T _stext\n").is_none());
        assert!(KernelTable::parse("").is_none());
    }

    #[test]
    fn this_machines_table_names_a_scheduler_function() {
        // The tests run as root (docs/testing.md), where kallsyms shows addresses.
        let table = shared().expect("kallsyms readable");
        assert!(table.len() > 1000);
        let (addr, _) = table
            .symbols
            .iter()
            .find(|(_, name)| &**name == "schedule")
            .expect("the kernel has `schedule`");
        assert_eq!(table.lookup(*addr + 1), Some("schedule"));
    }
}
