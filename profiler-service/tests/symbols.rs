//! Where a stripped module's local functions get their names: a test
//! program is built, stripped as distributions strip their packages, and
//! given its symbols back the ways they do: a separate debug file found
//! through `.gnu_debuglink` (Debian's `-dbg` packages are found by build
//! id, which tests/unwind.rs covers on this machine's libc) or an
//! xz-compressed MiniDebugInfo section (Fedora). Needs cc, objcopy and
//! strip (binutils), and xz (xz-utils).

mod support;
use support::run_command;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol};
use odp_profiler_service::plugin::native::module_symbols::{ModuleSymbols, SymbolSource};

/// Functions of tests/data/threads.c: in the program's `.symtab` only,
/// since an executable exports nothing in `.dynsym`.
const FUNCTIONS: [&str; 3] = ["spin", "thread_burn", "main_burn"];

/// A directory of its own per test, emptied first.
fn workdir(test: &str) -> PathBuf {
    support::workdir(&format!("symbols-{test}"))
}

/// Builds tests/data/threads.c at `opt` (different levels make different
/// builds, with different build ids).
fn build(out: &Path, opt: &str) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/threads.c");
    run_command(
        Command::new("cc")
            .args([opt, "-pthread", "-o"])
            .arg(out)
            .arg(source),
    );
}

/// The stated addresses of [`FUNCTIONS`] in an unstripped program.
fn addresses(program: &Path) -> Vec<(&'static str, u64)> {
    let data = fs::read(program).unwrap();
    let elf = object::File::parse(data.as_slice()).unwrap();
    FUNCTIONS
        .iter()
        .map(|&name| {
            let symbol = elf
                .symbols()
                .find(|s| s.name() == Ok(name))
                .unwrap_or_else(|| panic!("{name} in {}", program.display()));
            (name, symbol.address())
        })
        .collect()
}

/// A copy of `program` stripped of `.symtab`, as distributions ship it.
/// The debug sections of `program`, alone, into `debug`.
fn only_keep_debug(program: &Path, debug: &Path) {
    run_command(
        Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(program)
            .arg(debug),
    );
}

/// Links `module` to its separate debug file `debug` (`.gnu_debuglink`).
fn add_debuglink(module: &Path, debug: &Path) {
    run_command(
        Command::new("objcopy")
            .arg(format!("--add-gnu-debuglink={}", debug.display()))
            .arg(module),
    );
}

fn stripped(program: &Path, out: &Path) {
    run_command(
        Command::new("strip")
            .arg("--strip-all")
            .arg("-o")
            .arg(out)
            .arg(program),
    );
}

fn read(path: &Path) -> ModuleSymbols {
    ModuleSymbols::read(File::open(path).unwrap(), path, &[PathBuf::from("/")])
}

/// Asserts each function resolves (inside its body) to its own name, or to
/// nothing when `named` is false.
fn assert_names(symbols: &ModuleSymbols, functions: &[(&str, u64)], named: bool) {
    for &(name, addr) in functions {
        let found = symbols.table.lookup(addr + 1);
        if named {
            assert_eq!(found, Some(name), "{name} at {addr:#x}");
        } else {
            assert_eq!(found, None, "{name} at {addr:#x} has no symbol left");
        }
    }
}

#[test]
fn a_debug_file_named_by_the_debug_link_names_local_functions() {
    let dir = workdir("debuglink");
    let program = dir.join("prog");
    build(&program, "-O2");
    let functions = addresses(&program);
    let debug = dir.join("prog.debug");
    only_keep_debug(&program, &debug);
    let shipped = dir.join("prog.stripped");
    stripped(&program, &shipped);

    let bare = read(&shipped);
    assert_eq!(bare.source, SymbolSource::DynamicOnly);
    assert_names(&bare, &functions, false);

    add_debuglink(&shipped, &debug);
    let linked = read(&shipped);
    assert_eq!(linked.source, SymbolSource::DebugFile);
    assert_names(&linked, &functions, true);
}

#[test]
fn a_debug_file_of_another_build_is_refused() {
    let dir = workdir("mismatch");
    let program = dir.join("prog");
    build(&program, "-O2");
    let functions = addresses(&program);
    let shipped = dir.join("prog.stripped");
    stripped(&program, &shipped);
    // The debug link names prog.debug, then prog.debug is replaced by the
    // debug file of a different build: its addresses would name the wrong
    // code, and its build id says so.
    let debug = dir.join("prog.debug");
    only_keep_debug(&program, &debug);
    add_debuglink(&shipped, &debug);
    let other = dir.join("other");
    build(&other, "-O0");
    only_keep_debug(&other, &debug);

    let symbols = read(&shipped);
    assert_eq!(symbols.source, SymbolSource::DynamicOnly);
    assert_names(&symbols, &functions, false);
}

#[test]
fn minidebuginfo_names_local_functions() {
    let dir = workdir("minidebuginfo");
    let program = dir.join("prog");
    build(&program, "-O2");
    let functions = addresses(&program);
    // Fedora's recipe (find-debuginfo): the symbol table alone, in an ELF
    // file of its own, xz-compressed into the stripped module.
    let debug = dir.join("prog.debug");
    only_keep_debug(&program, &debug);
    let mini = dir.join("mini");
    run_command(
        Command::new("objcopy")
            .arg("--strip-debug")
            .arg(&debug)
            .arg(&mini),
    );
    // Compressed by xz itself, as the distributions' tools do.
    run_command(Command::new("xz").arg("--keep").arg(&mini));
    let mini_xz = dir.join("mini.xz");
    let shipped = dir.join("prog.stripped");
    stripped(&program, &shipped);
    run_command(
        Command::new("objcopy")
            .arg(format!(
                "--add-section=.gnu_debugdata={}",
                mini_xz.display()
            ))
            .arg(&shipped),
    );

    let symbols = read(&shipped);
    assert_eq!(symbols.source, SymbolSource::MiniDebugInfo);
    assert_names(&symbols, &functions, true);
}
