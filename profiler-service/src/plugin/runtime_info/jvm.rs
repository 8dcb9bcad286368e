//! A JVM's flags and jars.
//!
//! Flags are what the JVM itself reports as set (`VM.flags`, the
//! non-default `-XX` values after ergonomics) followed by the `-X`/`-XX`
//! options of its command line, which keep the user's spelling
//! (`-Xmx200m` beside `-XX:MaxHeapSize=209715200`). Jars are those of
//! `java.class.path` (`VM.system_properties`) and those the JVM holds open
//! (`/proc/PID/fd`), which include jars loaded by class loaders the class
//! path does not list; jars nested in a fat jar are not seen.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use odp_core::runtime::{Library, LibraryKind};
use tracing::debug;

use super::{dir_names, library, Process, MAX_LIBRARIES};
use crate::plugin::jvm::attach::Attach;
use crate::targets::module_name;

/// What one JVM reported.
#[derive(Debug, Default)]
pub struct Found {
    pub flags: Vec<String>,
    pub libraries: BTreeSet<Library>,
}

/// Asks one JVM (over its attach socket, `jcmd` as the fallback) for its
/// flags, when `with_flags`, and its class path; reads its open jars.
pub fn collect(process: &Process<'_>, jcmd: &Path, with_flags: bool) -> Found {
    let attach = Attach::new(process.procfs.clone(), process.pid, jcmd.to_owned());
    // A JVM that did not answer once is not asked again: each try may
    // wait for its attach listener and then for jcmd.
    let answering = Cell::new(true);
    let ask = |command: &str| {
        if !answering.get() {
            return None;
        }
        match attach.command(command) {
            Ok(output) => Some(output),
            Err(e) => {
                debug!(pid = process.pid, command, error = %e, "runtime info: JVM did not answer");
                answering.set(false);
                None
            }
        }
    };
    let mut found = Found::default();
    if with_flags {
        found.flags = ask("VM.flags")
            .map(|out| parse_vm_flags(&out))
            .unwrap_or_default();
        found.flags.extend(command_line_options(&process.argv()));
    }
    if let Some(props) = ask("VM.system_properties") {
        if let Some(class_path) = property(&props, "java.class.path") {
            found
                .libraries
                .extend(class_path.split(':').filter_map(jar_library));
        }
    }
    found.libraries.extend(open_jars(process));
    found
}

/// The jars among a process's open files.
fn open_jars(process: &Process<'_>) -> Vec<Library> {
    let fd_dir = process.procfs.proc_file(process.pid, "fd");
    dir_names(&fd_dir)
        .into_iter()
        .filter_map(|fd| fs::read_link(fd_dir.join(fd)).ok())
        .filter_map(|target| jar_library(target.to_str()?))
        .take(MAX_LIBRARIES + 1)
        .collect()
}

/// The flags of `VM.flags` output: `-XX:+UseSerialGC -XX:MaxHeapSize=...`
/// (jcmd's `PID:` line, if any, is not a flag).
pub fn parse_vm_flags(output: &str) -> Vec<String> {
    output
        .split_whitespace()
        .filter(|token| token.starts_with("-X"))
        .map(str::to_owned)
        .collect()
}

/// The `-X...` and `-XX:...` options of a `java` command line, up to the
/// main class or `-jar` (what follows are the program's own arguments).
pub fn command_line_options(argv: &[String]) -> Vec<String> {
    /// Launcher options whose value is the next argument.
    const WITH_VALUE: [&str; 12] = [
        "-cp",
        "-classpath",
        "--class-path",
        "-p",
        "--module-path",
        "--upgrade-module-path",
        "--add-modules",
        "--limit-modules",
        "--add-reads",
        "--add-exports",
        "--add-opens",
        "--patch-module",
    ];
    let mut options = Vec::new();
    let mut args = argv.iter().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            a if !a.starts_with('-') => break,
            "-jar" | "-m" | "--module" => break,
            a if WITH_VALUE.contains(&a) => {
                args.next();
            }
            a if a.starts_with("-X") => options.push(a.to_owned()),
            _ => {}
        }
    }
    options
}

/// A property's value in `VM.system_properties` output, which is
/// `java.util.Properties` text: `key=value` lines with `\:`, `\=`, `\\`
/// and `\uXXXX` escapes, `#` comments.
pub fn property(output: &str, key: &str) -> Option<String> {
    output.lines().find_map(|line| {
        let (k, v) = split_property(line)?;
        (k == key).then_some(v)
    })
}

fn split_property(line: &str) -> Option<(String, String)> {
    let line = line.trim_start();
    if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
        return None;
    }
    let mut key = String::new();
    let mut chars = line.chars();
    loop {
        match chars.next()? {
            '\\' => key.push(unescape(&mut chars)?),
            '=' | ':' => break,
            c => key.push(c),
        }
    }
    let mut value = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' => value.push(unescape(&mut chars)?),
            c => value.push(c),
        }
    }
    Some((key, value))
}

fn unescape(chars: &mut std::str::Chars<'_>) -> Option<char> {
    Some(match chars.next()? {
        't' => '\t',
        'n' => '\n',
        'r' => '\r',
        'f' => '\u{c}',
        'u' => {
            let hex: String = chars.by_ref().take(4).collect();
            char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
        }
        c => c,
    })
}

/// A jar named by a path: `log4j-core-2.14.1.jar` → `log4j-core` 2.14.1,
/// `guava-33.0.0-jre.jar` → `guava` 33.0.0-jre, `app.jar` → `app`. The
/// version starts at the first `-` followed by a number (`2`, `2.14`, not
/// `2d`); names such as `commons-lang3` keep their digits.
pub fn jar_library(path: &str) -> Option<Library> {
    let stem = module_name(path).strip_suffix(".jar")?;
    let split = stem
        .match_indices('-')
        .map(|(i, _)| i)
        .find(|&i| i > 0 && starts_with_number(&stem[i + 1..]));
    let (name, version) = match split {
        Some(i) => (&stem[..i], Some(&stem[i + 1..])),
        None => (stem, None),
    };
    (!name.is_empty()).then(|| library(LibraryKind::Jar, name, version))
}

/// `2.14.1`, `33.0.0-jre`, `5`, `1.0-SNAPSHOT`: digits then a dot, a dash,
/// or nothing.
fn starts_with_number(s: &str) -> bool {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && matches!(s.as_bytes().get(digits), None | Some(b'.' | b'-' | b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/runtime");

    fn fixture(name: &str) -> String {
        fs::read_to_string(Path::new(FIXTURES).join(name)).unwrap()
    }

    fn jar(name: &str, version: Option<&str>) -> Option<Library> {
        Some(library(LibraryKind::Jar, name, version))
    }

    #[test]
    fn jar_file_names_split_into_name_and_version() {
        let cases = [
            (
                "/app/lib/log4j-core-2.14.1.jar",
                jar("log4j-core", Some("2.14.1")),
            ),
            ("guava-33.0.0-jre.jar", jar("guava", Some("33.0.0-jre"))),
            (
                "commons-lang3-3.12.0.jar",
                jar("commons-lang3", Some("3.12.0")),
            ),
            (
                "spring-core-5.3.20.RELEASE.jar",
                jar("spring-core", Some("5.3.20.RELEASE")),
            ),
            (
                "bcprov-jdk15on-1.70.jar",
                jar("bcprov-jdk15on", Some("1.70")),
            ),
            ("app-1.0-SNAPSHOT.jar", jar("app", Some("1.0-SNAPSHOT"))),
            ("lib/app.jar", jar("app", None)),
            ("tool-2d-render.jar", jar("tool-2d-render", None)),
            (
                "/tmp/odp-fixture-1.2.3.jar (deleted)",
                jar("odp-fixture", Some("1.2.3")),
            ),
        ];
        for (path, expected) in cases {
            assert_eq!(jar_library(path), expected, "{path}");
        }
        assert_eq!(jar_library("/app/classes"), None);
        assert_eq!(jar_library("/app/lib/.jar"), None);
    }

    #[test]
    fn vm_flags_are_read_from_a_real_reply() {
        let flags = parse_vm_flags(&fixture("vm-flags.txt"));
        assert!(flags.contains(&"-XX:+UseSerialGC".to_owned()), "{flags:?}");
        assert!(flags.contains(&"-XX:MaxHeapSize=209715200".to_owned()));
        assert!(flags.iter().all(|f| f.starts_with("-XX:")));
        // jcmd prints the pid first; it is no flag.
        assert_eq!(parse_vm_flags("2565:\n-XX:+UseG1GC \n"), ["-XX:+UseG1GC"]);
    }

    #[test]
    fn the_class_path_comes_out_of_real_system_properties() {
        let props = fixture("vm-system-properties.txt");
        assert_eq!(
            property(&props, "java.class.path").as_deref(),
            Some("odp-fixture-1.2.3.jar:cls")
        );
        assert_eq!(
            property(&props, "java.vendor.url").as_deref(),
            Some("https://tracker.debian.org/openjdk-17")
        );
        assert_eq!(property(&props, "line.separator").as_deref(), Some("\n"));
        assert_eq!(property("a\\u0041b=\\u00e9", "aAb").as_deref(), Some("é"));
        assert_eq!(property(&props, "no.such.key"), None);
    }

    #[test]
    fn command_line_options_stop_at_the_main_class() {
        let argv: Vec<String> = [
            "java",
            "-Xmx200m",
            "-cp",
            "-Xnot-an-option.jar",
            "-XX:+UseSerialGC",
            "-Dx=y",
            "-jar",
            "app.jar",
            "-Xprogram-argument",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(
            command_line_options(&argv),
            ["-Xmx200m", "-XX:+UseSerialGC"]
        );
        let main_class: Vec<String> = ["java", "-Xss1m", "Main", "-Xmx1g"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(command_line_options(&main_class), ["-Xss1m"]);
    }
}
