//! Which runtime a target process runs, told the way Atys does from what
//! the process has mapped: a JVM maps `libjvm.so`, a CPython interpreter
//! maps `libpython*.so` (shared builds) or is itself a `python*` executable
//! (static builds); anything else is sampled as native code.
//!
//! The version comes along when it is cheap: a JDK's `release` file next to
//! its `libjvm.so`, CPython's major.minor from the library or executable
//! name. Nothing here starts a process.

use std::fs;
use std::path::Path;

use odp_core::Language;

use crate::targets::{module_name, ProcFs};

/// What the agent found out about a target's runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanguageRuntime {
    pub language: Language,
    /// `17.0.15`, `3.11`; `None` when it could not be told cheaply.
    pub version: Option<String>,
}

impl LanguageRuntime {
    pub fn native() -> Self {
        LanguageRuntime {
            language: Language::Native,
            version: None,
        }
    }
}

/// The runtime of one process; native when it has gone or its maps cannot
/// be read.
pub fn identify(procfs: &ProcFs, pid: u32) -> LanguageRuntime {
    let maps = procfs.maps(pid).unwrap_or_default();
    let paths: Vec<&str> = maps.iter().map(|m| m.path.as_str()).collect();
    let exe = procfs.exe(pid);
    let exe_name = exe.as_deref().and_then(|e| e.file_name()?.to_str());
    match classify(&paths, exe_name) {
        Classified::Jvm { libjvm } => LanguageRuntime {
            language: Language::Jvm,
            version: jdk_release_version(procfs, pid, Path::new(libjvm)),
        },
        Classified::Python { version } => LanguageRuntime {
            language: Language::Python,
            version,
        },
        Classified::Native => LanguageRuntime::native(),
    }
}

/// The runtime of a target's processes: the language most of them run (the
/// first process's on a tie, a runtime's over native code's), with the
/// version of the first that runs it. One profile uses one plugin, so a
/// target mixing runtimes is sampled as its majority runtime, and
/// [`samplable`] leaves out the processes that run another.
pub fn identify_all(procfs: &ProcFs, pids: &[u32]) -> LanguageRuntime {
    let runtimes: Vec<LanguageRuntime> = pids.iter().map(|&pid| identify(procfs, pid)).collect();
    let count = |language: Language| runtimes.iter().filter(|r| r.language == language).count();
    let Some(first) = runtimes.first() else {
        return LanguageRuntime::native();
    };
    let mut best = first.language;
    for language in Language::ALL {
        // A shell that launched the program, or the client that asked for
        // the profile, often matches a command-line pattern too.
        let beats_native = best == Language::Native && count(language) == count(best);
        if count(language) > count(best) || (beats_native && language != Language::Native) {
            best = language;
        }
    }
    runtimes
        .into_iter()
        .find(|r| r.language == best)
        .unwrap_or_else(LanguageRuntime::native)
}

/// The processes among `pids` a plugin for `language` samples: all of
/// them for native code (perf samples any process), else those that run
/// `language`, so that a launcher shell or a client whose command line
/// matches the target's pattern does not fail a Python or JVM profile.
pub fn samplable(procfs: &ProcFs, language: Language, pids: &[u32]) -> Vec<u32> {
    if language == Language::Native {
        return pids.to_vec();
    }
    pids.iter()
        .copied()
        .filter(|&pid| identify(procfs, pid).language == language)
        .collect()
}

/// The runtime a process's mapped files and executable name point to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classified<'a> {
    Jvm { libjvm: &'a str },
    Python { version: Option<String> },
    Native,
}

pub fn classify<'a>(mapped: &[&'a str], exe_name: Option<&str>) -> Classified<'a> {
    if let Some(libjvm) = mapped
        .iter()
        .find(|path| module_name(path).starts_with("libjvm."))
    {
        return Classified::Jvm { libjvm };
    }
    if let Some(lib) = mapped
        .iter()
        .map(|path| module_name(path))
        .find(|name| name.starts_with("libpython"))
    {
        return Classified::Python {
            version: python_version(lib.trim_start_matches("libpython")),
        };
    }
    if let Some(rest) = exe_name.and_then(|name| name.strip_prefix("python")) {
        // `python`, `python3`, `python3.12`, `python3.13t`: not `pythonista`.
        if rest
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == 't')
        {
            return Classified::Python {
                version: python_version(rest),
            };
        }
    }
    Classified::Native
}

/// `3.11` out of `3.11.so.1.0` or `3.11`; `None` for a bare `3` or nothing,
/// which do not say which interpreter it is.
fn python_version(suffix: &str) -> Option<String> {
    let mut parts = suffix.split('.');
    let major = parts.next().filter(|p| is_number(p))?;
    let minor = parts.next().map(|p| p.trim_end_matches(['t', 'd', 'm']))?;
    is_number(minor).then(|| format!("{major}.{minor}"))
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `JAVA_VERSION` from the `release` file of the JDK a `libjvm.so` belongs
/// to (`<home>/lib/server/libjvm.so`, or `<home>/jre/lib/amd64/server/` for
/// Java 8), read through the process's root.
fn jdk_release_version(procfs: &ProcFs, pid: u32, libjvm: &Path) -> Option<String> {
    libjvm.ancestors().skip(1).take(5).find_map(|dir| {
        let text = fs::read_to_string(procfs.in_root(pid, &dir.join("release"))).ok()?;
        parse_release_version(&text)
    })
}

/// The value of `JAVA_VERSION="..."` in a JDK `release` file.
pub fn parse_release_version(text: &str) -> Option<String> {
    text.lines()
        .find_map(|line| line.strip_prefix("JAVA_VERSION="))
        .map(|value| value.trim().trim_matches('"').to_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_libjvm_makes_a_jvm() {
        let maps = [
            "/usr/lib/jvm/java-17-openjdk-amd64/bin/java",
            "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so",
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
        ];
        assert_eq!(
            classify(&maps, Some("java")),
            Classified::Jvm { libjvm: maps[1] }
        );
    }

    #[test]
    fn libpython_or_a_python_executable_makes_python() {
        let shared = ["/opt/py/bin/python3.11", "/opt/py/lib/libpython3.11.so.1.0"];
        assert_eq!(
            classify(&shared, Some("python3.11")),
            Classified::Python {
                version: Some("3.11".into())
            }
        );
        // A static build maps no libpython: the executable name tells.
        let static_build = ["/usr/bin/python3.12", "/usr/lib/libc.so.6"];
        assert_eq!(
            classify(&static_build, Some("python3.12")),
            Classified::Python {
                version: Some("3.12".into())
            }
        );
        assert_eq!(
            classify(&static_build, Some("python3")),
            Classified::Python { version: None }
        );
        assert_eq!(
            classify(&["/usr/bin/python3.13t"], Some("python3.13t")),
            Classified::Python {
                version: Some("3.13".into())
            }
        );
    }

    #[test]
    fn anything_else_is_native() {
        let maps = ["/usr/bin/pythonista-helper", "/usr/lib/libc.so.6"];
        assert_eq!(
            classify(&maps, Some("pythonista-helper")),
            Classified::Native
        );
        assert_eq!(classify(&[], None), Classified::Native);
        // A JVM embedding Python (or the reverse) is profiled as the JVM.
        let both = ["/x/libpython3.11.so", "/y/lib/server/libjvm.so"];
        assert!(matches!(classify(&both, None), Classified::Jvm { .. }));
    }

    #[test]
    fn release_files_give_the_jdk_version() {
        let release =
            "IMPLEMENTOR=\"Debian\"\nJAVA_VERSION=\"17.0.15\"\nJAVA_VERSION_DATE=\"2025-04-15\"\n";
        assert_eq!(parse_release_version(release).as_deref(), Some("17.0.15"));
        assert_eq!(parse_release_version("JAVA_VERSION=\"\"\n"), None);
        assert_eq!(parse_release_version("OS_NAME=Linux\n"), None);
    }

    #[test]
    fn a_real_process_of_ours_is_native_and_a_gone_one_too() {
        let procfs = ProcFs::default();
        // The test binary itself: Rust, no interpreter.
        assert_eq!(
            identify(&procfs, std::process::id()),
            LanguageRuntime::native()
        );
        assert_eq!(identify(&procfs, u32::MAX), LanguageRuntime::native());
        assert_eq!(identify_all(&procfs, &[]), LanguageRuntime::native());
    }
}
