//! What a profile reports about its target in `profile_started`
//! ([`RuntimeInfo`]): the executable and its GNU build id, the shared
//! objects it maps, and per runtime its options and libraries — a JVM's
//! flags and jars ([`jvm`]), a Python interpreter's options and installed
//! distributions ([`python`]).
//!
//! Everything is read from `/proc/PID` and, for files the process names,
//! through `/proc/PID/root`, so a process in another mount namespace (a
//! container) is read as it sees its files. Reads are bounded (file heads,
//! directory listings, processes examined) and a process that exits
//! half-way only makes the report shorter: nothing here fails a profile.
//!
//! A target of several processes reports the executable and flags of its
//! first process running the profiled runtime, and the union of the
//! libraries of its first [`MAX_PROCESSES`] processes.

pub mod jvm;
pub mod python;

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

use odp_core::runtime::{Executable, Library, LibraryKind, RuntimeInfo, MAX_FLAGS, MAX_LIBRARIES};
use odp_core::Language;

use crate::plugin::identify::{classify, Classified};
use crate::targets::{module_name, Mapping, ProcFs};

/// Processes of one target whose libraries are read: a service forking
/// hundreds of identical workers reports what its first ones run without
/// the agent reading every one of them.
pub const MAX_PROCESSES: usize = 16;
/// The most read of `cmdline`, `environ` and metadata files: enough for
/// any real header, small enough that a huge file costs nothing.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Directory entries looked at per directory (`site-packages`, `fd`).
pub const MAX_DIR_ENTRIES: usize = 20_000;

/// Collects [`RuntimeInfo`]; `jcmd` is the attach fallback for JVMs.
#[derive(Debug, Clone)]
pub struct Collector {
    procfs: ProcFs,
    jcmd: PathBuf,
}

/// One process as the collector sees it.
pub struct Process<'a> {
    pub procfs: &'a ProcFs,
    pub pid: u32,
    pub maps: Vec<Mapping>,
    /// The executable as the process sees it.
    pub exe: Option<PathBuf>,
    pub identified: Language,
    /// The runtime version [`identify`](crate::plugin::identify) told from
    /// the maps (CPython's `3.11`).
    pub version: Option<String>,
}

impl<'a> Process<'a> {
    pub fn read(procfs: &'a ProcFs, pid: u32) -> Self {
        let maps = procfs.maps(pid).unwrap_or_default();
        let exe = procfs.exe(pid);
        let paths: Vec<&str> = maps.iter().map(|m| m.path.as_str()).collect();
        let exe_name = exe.as_deref().and_then(|e| e.file_name()?.to_str());
        let (identified, version) = match classify(&paths, exe_name) {
            Classified::Jvm { .. } => (Language::Jvm, None),
            Classified::Python { version } => (Language::Python, version),
            Classified::Native => (Language::Native, None),
        };
        Process {
            procfs,
            pid,
            maps,
            exe,
            identified,
            version,
        }
    }

    /// The command line's arguments (bounded; empty once the process is
    /// gone).
    pub fn argv(&self) -> Vec<String> {
        nul_separated(&self.read_proc("cmdline"))
    }

    /// The environment the process started with, `NAME=value` strings.
    pub fn environ(&self) -> Vec<String> {
        nul_separated(&self.read_proc("environ"))
    }

    fn read_proc(&self, name: &str) -> Vec<u8> {
        read_head(&self.procfs.proc_file(self.pid, name), MAX_FILE_BYTES).unwrap_or_default()
    }

    /// A path as the process sees it, readable from here.
    pub fn in_root(&self, path: &Path) -> PathBuf {
        self.procfs.in_root(self.pid, path)
    }
}

impl Collector {
    pub fn new(procfs: ProcFs, jcmd: PathBuf) -> Self {
        Collector { procfs, jcmd }
    }

    /// What the target's processes run, for a profile of `language`.
    pub fn collect(&self, language: Language, pids: &[u32]) -> RuntimeInfo {
        let processes: Vec<Process<'_>> = pids
            .iter()
            .take(MAX_PROCESSES)
            .map(|&pid| Process::read(&self.procfs, pid))
            .collect();
        let first = processes
            .iter()
            .position(|p| p.identified == language)
            .unwrap_or(0);
        let mut flags = Vec::new();
        let mut libraries = BTreeSet::new();
        let mut python_dirs = python::SeenDirs::default();
        for (index, process) in processes.iter().enumerate() {
            let is_first = index == first;
            libraries.extend(process.maps.iter().filter_map(|m| shared_library(&m.path)));
            // A runtime's own probes only on processes that run it: the
            // attach protocol signals the process, and a shell wrapper has
            // no site-packages.
            if process.identified != language {
                continue;
            }
            match language {
                Language::Jvm => {
                    let found = jvm::collect(process, &self.jcmd, is_first);
                    if is_first {
                        flags = found.flags;
                    }
                    libraries.extend(found.libraries);
                }
                Language::Python => {
                    let found = python::collect(process, &mut python_dirs);
                    if is_first {
                        flags = found.flags;
                    }
                    libraries.extend(found.libraries);
                }
                Language::Native => {}
            }
        }
        let executable = processes.get(first).and_then(executable);
        assemble(flags, libraries, executable)
    }
}

/// Flags deduplicated in order and libraries sorted, both capped.
pub fn assemble(
    flags: Vec<String>,
    libraries: BTreeSet<Library>,
    executable: Option<Executable>,
) -> RuntimeInfo {
    let mut seen = BTreeSet::new();
    let flags: Vec<String> = flags
        .into_iter()
        .filter(|f| seen.insert(f.clone()))
        .take(MAX_FLAGS)
        .collect();
    let libraries_truncated = libraries.len() > MAX_LIBRARIES;
    RuntimeInfo {
        flags,
        libraries: libraries.into_iter().take(MAX_LIBRARIES).collect(),
        libraries_truncated,
        executable,
    }
}

/// The executable's path (as the process sees it) and build id, read
/// through `/proc/PID/exe`, which opens the very file the process runs
/// even when its path means something else here or it was replaced.
fn executable(process: &Process<'_>) -> Option<Executable> {
    let path = process.exe.as_ref()?;
    Some(Executable {
        path: path.to_string_lossy().into_owned(),
        build_id: build_id(&process.procfs.proc_file(process.pid, "exe")),
    })
}

/// The GNU build id note of an ELF file, lowercase hex; `None` when the
/// file is not ELF, has no note or cannot be read.
pub fn build_id(path: &Path) -> Option<String> {
    let id = blazesym::helper::read_elf_build_id(path).ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// A library of a kind, as the parsers here find them.
pub fn library(kind: LibraryKind, name: &str, version: Option<&str>) -> Library {
    Library {
        kind,
        name: name.to_owned(),
        version: version.map(str::to_owned),
    }
}

/// A mapped shared object as a library: `libssl.so.3` → `libssl` 3,
/// `libstdc++.so.6.0.30` → `libstdc++` 6.0.30, the old glibc naming
/// `libc-2.31.so` → `libc` 2.31, `libjvm.so` → `libjvm` without version.
/// The soname version is what the file name says (`libc.so.6` is glibc's
/// ABI 6, not its release: telling that would mean reading the library).
/// CPython extension modules are left out: their distribution is reported
/// as a Python library.
pub fn shared_library(path: &str) -> Option<Library> {
    if !path.starts_with('/') {
        return None;
    }
    let file = module_name(path);
    let (stem, after) = file.split_once(".so")?;
    if stem.is_empty()
        || !(after.is_empty() || after.starts_with('.'))
        || [".cpython-", ".abi3", ".pypy"]
            .iter()
            .any(|tag| stem.contains(tag))
    {
        return None;
    }
    let soname_version = after.strip_prefix('.').filter(|v| is_dotted_number(v));
    let (name, version) = match soname_version {
        Some(version) => (stem, Some(version)),
        None if after.is_empty() => match stem.rsplit_once('-') {
            Some((name, version))
                if !name.is_empty() && version.contains('.') && is_dotted_number(version) =>
            {
                (name, Some(version))
            }
            _ => (stem, None),
        },
        None => (stem, None),
    };
    Some(library(LibraryKind::Shared, name, version))
}

/// `3`, `1.1`, `6.0.30`: digits separated by single dots.
fn is_dotted_number(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

/// At most `limit` bytes of a file.
pub fn read_head(path: &Path, limit: u64) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    File::open(path)
        .ok()?
        .take(limit)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// The names of at most [`MAX_DIR_ENTRIES`] entries of a directory, sorted
/// so that a capped listing is the same every time; empty when it cannot
/// be read.
pub fn dir_names(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .take(MAX_DIR_ENTRIES)
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort_unstable();
    names
}

/// `cmdline` and `environ` split at their NULs.
pub fn nul_separated(raw: &[u8]) -> Vec<String> {
    raw.split(|&b| b == 0)
        .filter(|part| !part.is_empty())
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(name: &str, version: Option<&str>) -> Option<Library> {
        Some(library(LibraryKind::Shared, name, version))
    }

    #[test]
    fn shared_objects_give_their_soname_or_file_version() {
        let cases = [
            (
                "/usr/lib/x86_64-linux-gnu/libssl.so.3",
                shared("libssl", Some("3")),
            ),
            (
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                shared("libc", Some("6")),
            ),
            (
                "/lib/x86_64-linux-gnu/libc-2.31.so",
                shared("libc", Some("2.31")),
            ),
            (
                "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
                shared("libstdc++", Some("6.0.30")),
            ),
            (
                "/opt/py/lib/libpython3.11.so.1.0",
                shared("libpython3.11", Some("1.0")),
            ),
            (
                "/lib64/ld-linux-x86-64.so.2",
                shared("ld-linux-x86-64", Some("2")),
            ),
            (
                "/usr/lib/jvm/java-17/lib/server/libjvm.so",
                shared("libjvm", None),
            ),
            (
                "/usr/lib/libfoo.so.1.0 (deleted)",
                shared("libfoo", Some("1.0")),
            ),
        ];
        for (path, expected) in cases {
            assert_eq!(shared_library(path), expected, "{path}");
        }
        for not_a_library in [
            "[vdso]",
            "/usr/bin/python3.11",
            "/usr/lib/python3.11/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so",
            "/venv/lib/python3.11/site-packages/pkg/_speedups.abi3.so",
            "/tmp/data.socket",
            "/usr/lib/jvm/java-17/lib/modules",
        ] {
            assert_eq!(shared_library(not_a_library), None, "{not_a_library}");
        }
    }

    #[test]
    fn flags_keep_their_order_once_and_libraries_are_capped() {
        let libraries: BTreeSet<Library> = (0..MAX_LIBRARIES + 5)
            .map(|i| library(LibraryKind::Jar, &format!("lib{i:05}"), None))
            .collect();
        let info = assemble(
            vec!["-B".into(), "-X dev".into(), "-B".into()],
            libraries,
            None,
        );
        assert_eq!(info.flags, ["-B", "-X dev"]);
        assert_eq!(info.libraries.len(), MAX_LIBRARIES);
        assert!(info.libraries_truncated);
        assert_eq!(info.libraries[0].name, "lib00000");
    }

    /// `readelf -n` (binutils) names the build id of a binary; ours must
    /// read the same note, from the file and through `/proc/self/exe`.
    #[test]
    fn build_id_matches_readelf_on_a_real_binary() {
        let exe = std::env::current_exe().unwrap();
        let ours = build_id(&exe).expect("the test binary has a GNU build id");
        assert_eq!(
            build_id(Path::new("/proc/self/exe")).as_deref(),
            Some(&*ours)
        );
        let out = std::process::Command::new("readelf")
            .arg("-n")
            .arg(&exe)
            .output()
            .expect("readelf (binutils) is needed for this test");
        let text = String::from_utf8_lossy(&out.stdout);
        let theirs = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("Build ID: "))
            .expect("readelf shows a build id");
        assert_eq!(ours, theirs.trim());
        assert_eq!(build_id(Path::new("/proc/self/status")), None);
        assert_eq!(build_id(Path::new("/nonexistent")), None);
    }

    #[test]
    fn a_gone_process_reports_nothing_rather_than_failing() {
        let collector = Collector::new(ProcFs::default(), "jcmd".into());
        for language in Language::ALL {
            assert!(collector.collect(language, &[u32::MAX]).is_empty());
        }
        let ours = collector.collect(Language::Native, &[std::process::id()]);
        let exe = ours.executable.expect("our executable");
        assert!(exe.build_id.is_some());
        assert!(ours
            .libraries
            .iter()
            .any(|l| l.name == "libc" && l.kind == LibraryKind::Shared));
    }
}
