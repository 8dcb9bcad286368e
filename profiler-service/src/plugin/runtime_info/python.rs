//! A CPython interpreter's options and installed distributions.
//!
//! Options are the interpreter's command-line switches (`-O`, `-X dev`,
//! `-W error`...) and the `PYTHON*` variables of its environment that
//! change how it behaves ([`BEHAVIOUR_VARIABLES`]; not paths such as
//! `PYTHONPATH`), unless `-E`/`-I` make it ignore them.
//!
//! Distributions are the `*.dist-info` and `*.egg-info` entries (name and
//! version from their `METADATA`/`PKG-INFO` headers, else from the entry's
//! name) of the directories the interpreter imports from, found the way
//! CPython's `site` finds them, through `/proc/PID/root`:
//! - directories of mapped extension modules (`.../site-packages/x.so`);
//! - the virtual environment's `lib/pythonX.Y/site-packages`, when the
//!   launcher (`argv[0]`, looked up in `PATH` when it has no `/`) has a
//!   `pyvenv.cfg` beside it or one level up;
//! - unless a virtual environment excludes them, the prefix's
//!   (`PYTHONHOME`, else the executable's `../`) `lib/pythonX.Y/site-packages`
//!   and Debian's `dist-packages` directories, and the user site
//!   (`~/.local/lib/pythonX.Y/site-packages`) unless `-s`, `-I` or
//!   `PYTHONNOUSERSITE` turn it off;
//! - the `PYTHONPATH` entries (importable, so their distributions are
//!   visible to `importlib.metadata` too).

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use odp_core::runtime::{Library, LibraryKind};

use super::{dir_names, read_head, Process, MAX_LIBRARIES};

/// Environment variables reported as flags: each changes what the
/// interpreter does (memory allocator, optimisation, hashing, buffering,
/// warnings, debugging aids), so a profile may differ because of it.
pub const BEHAVIOUR_VARIABLES: [&str; 27] = [
    "PYTHONASYNCIODEBUG",
    "PYTHONCOERCECLOCALE",
    "PYTHONDEBUG",
    "PYTHONDEVMODE",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONFAULTHANDLER",
    "PYTHONHASHSEED",
    "PYTHONINSPECT",
    "PYTHONINTMAXSTRDIGITS",
    "PYTHONIOENCODING",
    "PYTHONMALLOC",
    "PYTHONMALLOCSTATS",
    "PYTHONNODEBUGRANGES",
    "PYTHONNOUSERSITE",
    "PYTHONOPTIMIZE",
    "PYTHONPERFSUPPORT",
    "PYTHONPROFILEIMPORTTIME",
    "PYTHONSAFEPATH",
    "PYTHONTRACEMALLOC",
    "PYTHONUNBUFFERED",
    "PYTHONUTF8",
    "PYTHONVERBOSE",
    "PYTHONWARNDEFAULTENCODING",
    "PYTHONWARNINGS",
    "PYTHON_CPU_COUNT",
    "PYTHON_GIL",
    "PYTHON_JIT",
];

/// Site directories already listed for this target, so that workers of one
/// interpreter are read once.
#[derive(Debug, Default)]
pub struct SeenDirs(HashSet<PathBuf>);

/// What one interpreter reported.
#[derive(Debug, Default)]
pub struct Found {
    pub flags: Vec<String>,
    pub libraries: BTreeSet<Library>,
}

pub fn collect(process: &Process<'_>, seen: &mut SeenDirs) -> Found {
    let argv = process.argv();
    let environ = process.environ();
    let options = interpreter_options(&argv);
    let env = |name: &str| -> Option<&str> {
        if options.ignore_environment {
            return None;
        }
        variable(&environ, name)
    };
    let mut flags = options.flags.clone();
    flags.extend(
        BEHAVIOUR_VARIABLES
            .iter()
            .filter_map(|name| Some(format!("{name}={}", env(name)?))),
    );
    let mut libraries = BTreeSet::new();
    for dir in site_dirs(process, &argv, &options, &env) {
        if seen.0.insert(dir.clone()) {
            libraries.extend(distributions(&process.in_root(&dir)));
        }
    }
    Found { flags, libraries }
}

/// A variable of an `environ` listing; empty values count as unset, as
/// CPython reads them.
fn variable<'a>(environ: &'a [String], name: &str) -> Option<&'a str> {
    environ.iter().find_map(|entry| {
        let value = entry.strip_prefix(name)?.strip_prefix('=')?;
        (!value.is_empty()).then_some(value)
    })
}

/// The interpreter's switches, as it parses them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `-O`, `-OO`, `-B`, `-X dev`, `-W error`...
    pub flags: Vec<String>,
    /// `-E` or `-I`: `PYTHON*` variables are ignored.
    pub ignore_environment: bool,
    /// `-s` or `-I`: no user site directory.
    pub no_user_site: bool,
}

/// Parses the switches of a `python` command line, up to the script,
/// `-c` or `-m`. Repeatable switches come out with their count (`-OO`,
/// `-vv`), the others once; `-X` and `-W` with their value.
pub fn interpreter_options(argv: &[String]) -> Options {
    let mut options = Options::default();
    let mut counted: Vec<(char, usize)> = Vec::new();
    let mut valued = Vec::new();
    let mut args = argv.iter().skip(1);
    'args: while let Some(arg) = args.next() {
        if arg == "--check-hash-based-pycs" {
            if let Some(mode) = args.next() {
                valued.push(format!("{arg} {mode}"));
            }
            continue;
        }
        let Some(letters) = arg.strip_prefix('-') else {
            break;
        };
        if letters.is_empty() || letters.starts_with('-') {
            // `-` (stdin) or `--`/`--help`: the options end.
            break;
        }
        for (i, letter) in letters.char_indices() {
            match letter {
                'c' | 'm' => break 'args,
                'X' | 'W' => {
                    let rest = &letters[i + 1..];
                    let value = if rest.is_empty() {
                        args.next().cloned()
                    } else {
                        Some(rest.to_owned())
                    };
                    if let Some(value) = value {
                        valued.push(format!("-{letter} {value}"));
                    }
                    continue 'args;
                }
                'b' | 'B' | 'd' | 'E' | 'i' | 'I' | 'O' | 'P' | 'R' | 's' | 'S' | 'u' | 'v' => {
                    match counted.iter_mut().find(|(c, _)| *c == letter) {
                        Some((_, n)) => *n += 1,
                        None => counted.push((letter, 1)),
                    }
                }
                _ => {}
            }
        }
    }
    let has = |letter: char| counted.iter().any(|(c, _)| *c == letter);
    options.ignore_environment = has('E') || has('I');
    options.no_user_site = has('s') || has('I');
    options.flags = counted
        .iter()
        .map(|&(letter, n)| {
            let repeat = if matches!(letter, 'b' | 'd' | 'O' | 'v') {
                n
            } else {
                1
            };
            format!("-{}", letter.to_string().repeat(repeat))
        })
        .chain(valued)
        .collect();
    options
}

/// The directories to look for distributions in, as the process names
/// them.
fn site_dirs<'e>(
    process: &Process<'_>,
    argv: &[String],
    options: &Options,
    env: &dyn Fn(&str) -> Option<&'e str>,
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = process
        .maps
        .iter()
        .filter_map(|m| site_dir_of(&m.path))
        .collect();
    let versions = python_versions(process);
    let venv = argv.first().and_then(|argv0| {
        let launcher = launcher(process, argv0, env("PATH"))?;
        virtual_env(process, &launcher)
    });
    let base_visible = venv.as_ref().is_none_or(|v| v.system_site_packages);
    if let Some(venv) = &venv {
        for version in &versions {
            dirs.push(venv.dir.join(format!("lib/python{version}/site-packages")));
        }
    }
    if base_visible {
        let prefix = env("PYTHONHOME")
            .map(|home| PathBuf::from(home.split(':').next().unwrap_or(home)))
            .or_else(|| Some(process.exe.as_ref()?.parent()?.parent()?.to_owned()));
        if let Some(prefix) = prefix {
            dirs.push(prefix.join("lib/python3/dist-packages"));
            for version in &versions {
                dirs.push(prefix.join(format!("lib/python{version}/site-packages")));
                dirs.push(prefix.join(format!("lib/python{version}/dist-packages")));
                if prefix == Path::new("/usr") {
                    dirs.push(format!("/usr/local/lib/python{version}/dist-packages").into());
                }
            }
        }
        if !options.no_user_site && env("PYTHONNOUSERSITE").is_none() {
            let user_base = env("PYTHONUSERBASE")
                .map(PathBuf::from)
                .or_else(|| Some(Path::new(env("HOME")?).join(".local")));
            if let Some(base) = user_base {
                for version in &versions {
                    dirs.push(base.join(format!("lib/python{version}/site-packages")));
                }
            }
        }
    }
    if let Some(path) = env("PYTHONPATH") {
        dirs.extend(
            path.split(':')
                .filter(|p| p.starts_with('/'))
                .map(PathBuf::from),
        );
    }
    dirs
}

/// `/venv/lib/python3.11/site-packages` out of a path inside it.
fn site_dir_of(path: &str) -> Option<PathBuf> {
    ["/site-packages/", "/dist-packages/"]
        .iter()
        .find_map(|marker| {
            let at = path.find(marker)?;
            Some(PathBuf::from(&path[..at + marker.len() - 1]))
        })
}

/// The interpreter's `X.Y`: as detected, else from a mapped
/// `lib/pythonX.Y/` path (a static build's extension modules).
fn python_versions(process: &Process<'_>) -> Vec<String> {
    if let Some(version) = &process.version {
        return vec![version.clone()];
    }
    let mut found = BTreeSet::new();
    for mapping in &process.maps {
        for part in mapping.path.split('/') {
            if let Some(version) = part.strip_prefix("python") {
                if version.split('.').count() == 2
                    && version
                        .split('.')
                        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                {
                    found.insert(version.to_owned());
                }
            }
        }
    }
    found.into_iter().collect()
}

/// The launcher path as the process named it: `argv[0]` when it has a
/// `/` (relative to the working directory), else the first `PATH` entry
/// holding it.
fn launcher(process: &Process<'_>, argv0: &str, path: Option<&str>) -> Option<PathBuf> {
    if argv0.contains('/') {
        let argv0 = Path::new(argv0);
        if argv0.is_absolute() {
            return Some(argv0.to_owned());
        }
        let cwd = fs::read_link(process.procfs.proc_file(process.pid, "cwd")).ok()?;
        return Some(cwd.join(argv0));
    }
    path?
        .split(':')
        .filter(|dir| dir.starts_with('/'))
        .take(64)
        .map(|dir| Path::new(dir).join(argv0))
        .find(|candidate| process.in_root(candidate).is_file())
}

struct VirtualEnv {
    dir: PathBuf,
    system_site_packages: bool,
}

/// The virtual environment of a launcher: the directory of the
/// `pyvenv.cfg` beside it or one level up, as CPython looks for it.
fn virtual_env(process: &Process<'_>, launcher: &Path) -> Option<VirtualEnv> {
    let bin = launcher.parent()?;
    [Some(bin), bin.parent()]
        .into_iter()
        .flatten()
        .find_map(|dir| {
            let cfg = read_head(&process.in_root(&dir.join("pyvenv.cfg")), 16 * 1024)?;
            Some(VirtualEnv {
                dir: dir.to_owned(),
                system_site_packages: parse_pyvenv_system_site(&String::from_utf8_lossy(&cfg)),
            })
        })
}

/// `include-system-site-packages = true` in a `pyvenv.cfg`.
pub fn parse_pyvenv_system_site(cfg: &str) -> bool {
    cfg.lines().any(|line| {
        line.split_once('=').is_some_and(|(k, v)| {
            k.trim() == "include-system-site-packages" && v.trim().eq_ignore_ascii_case("true")
        })
    })
}

/// The distributions installed in a directory (read from here).
pub fn distributions(dir: &Path) -> Vec<Library> {
    let mut found = Vec::new();
    for name in dir_names(dir) {
        let metadata = if name.ends_with(".dist-info") {
            dir.join(&name).join("METADATA")
        } else if name.ends_with(".egg-info") {
            let entry = dir.join(&name);
            // An egg-info is a directory with PKG-INFO, or that file itself.
            if entry.is_dir() {
                entry.join("PKG-INFO")
            } else {
                entry
            }
        } else {
            continue;
        };
        let (meta_name, meta_version) = read_head(&metadata, super::MAX_FILE_BYTES)
            .map(|bytes| parse_metadata(&String::from_utf8_lossy(&bytes)))
            .unwrap_or_default();
        let from_dir = parse_dist_dir_name(&name);
        let Some(name) = meta_name.or_else(|| from_dir.as_ref().map(|d| d.0.clone())) else {
            continue;
        };
        found.push(Library {
            kind: LibraryKind::Python,
            name,
            version: meta_version.or_else(|| from_dir.and_then(|d| d.1)),
        });
        if found.len() > MAX_LIBRARIES {
            break;
        }
    }
    found
}

/// `Name:` and `Version:` of core metadata (`METADATA`, `PKG-INFO`): email
/// style headers, which end at the first blank line.
pub fn parse_metadata(text: &str) -> (Option<String>, Option<String>) {
    let mut name = None;
    let mut version = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            break;
        }
        if let Some((key, value)) = line.split_once(':') {
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            match key.trim().to_ascii_lowercase().as_str() {
                "name" if name.is_none() => name = Some(value.to_owned()),
                "version" if version.is_none() => version = Some(value.to_owned()),
                _ => {}
            }
        }
    }
    (name, version)
}

/// Name and version from an entry's name: `requests-2.31.0.dist-info`,
/// `six-1.16.0-py3.11.egg-info`, `mypkg.egg-info` (a development install,
/// no version). Distribution names in these entries have their `-`
/// escaped as `_`, so the first `-` ends the name.
pub fn parse_dist_dir_name(entry: &str) -> Option<(String, Option<String>)> {
    let stem = entry
        .strip_suffix(".dist-info")
        .or_else(|| entry.strip_suffix(".egg-info"))?;
    let (name, version) = match stem.split_once('-') {
        Some((name, rest)) => {
            let version = rest.split_once("-py").map_or(rest, |(v, _)| v);
            (name, (!version.is_empty()).then(|| version.to_owned()))
        }
        None => (stem, None),
    };
    (!name.is_empty()).then(|| (name.to_owned(), version))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn interpreter_switches_are_read_up_to_the_script() {
        let options = interpreter_options(&args(
            "python3 -OO -Bu -X dev -Ximporttime -W error -s script.py -O -X other",
        ));
        assert_eq!(
            options.flags,
            [
                "-OO",
                "-B",
                "-u",
                "-s",
                "-X dev",
                "-X importtime",
                "-W error"
            ]
        );
        assert!(options.no_user_site);
        assert!(!options.ignore_environment);

        let isolated = interpreter_options(&args("python -I -c print(1) -O"));
        assert_eq!(isolated.flags, ["-I"]);
        assert!(isolated.ignore_environment && isolated.no_user_site);
        assert_eq!(
            interpreter_options(&args("python -E -m http.server -B")).flags,
            ["-E"]
        );
        assert_eq!(
            interpreter_options(&args("python --check-hash-based-pycs always app.py")).flags,
            ["--check-hash-based-pycs always"]
        );
        assert_eq!(interpreter_options(&args("python3")), Options::default());
    }

    #[test]
    fn core_metadata_gives_name_and_version() {
        let metadata = "Metadata-Version: 2.1\nName: PyYAML\nVersion: 6.0.1\nSummary: x\n\
                        Requires-Dist: foo\n\nName: not-a-header\n";
        assert_eq!(
            parse_metadata(metadata),
            (Some("PyYAML".into()), Some("6.0.1".into()))
        );
        assert_eq!(parse_metadata("\nName: late\n"), (None, None));
        assert_eq!(
            parse_metadata("Metadata-Version: 2.1\nname: lower\n"),
            (Some("lower".into()), None)
        );
    }

    #[test]
    fn entry_names_give_name_and_version_when_metadata_is_missing() {
        let cases = [
            (
                "requests-2.31.0.dist-info",
                Some(("requests", Some("2.31.0"))),
            ),
            (
                "typing_extensions-4.9.0.dist-info",
                Some(("typing_extensions", Some("4.9.0"))),
            ),
            ("six-1.16.0-py3.11.egg-info", Some(("six", Some("1.16.0")))),
            ("mypkg.egg-info", Some(("mypkg", None))),
            ("requests", None),
        ];
        for (entry, expected) in cases {
            let expected = expected.map(|(n, v)| (n.to_owned(), v.map(str::to_owned)));
            assert_eq!(parse_dist_dir_name(entry), expected, "{entry}");
        }
    }

    #[test]
    fn distributions_are_read_from_a_site_directory() {
        let site = tempfile::tempdir().unwrap();
        let dist = site.path().join("odp_fixture-1.2.3.dist-info");
        fs::create_dir(&dist).unwrap();
        fs::write(
            dist.join("METADATA"),
            "Metadata-Version: 2.1\nName: odp-fixture\nVersion: 1.2.3\n",
        )
        .unwrap();
        // No METADATA: the entry's name tells.
        fs::create_dir(site.path().join("bare-0.1.dist-info")).unwrap();
        fs::write(
            site.path().join("legacy-2.0-py3.11.egg-info"),
            "Metadata-Version: 1.0\nName: legacy\nVersion: 2.0\n",
        )
        .unwrap();
        fs::create_dir(site.path().join("a_package")).unwrap();
        let mut found = distributions(site.path());
        found.sort();
        let names: Vec<(&str, Option<&str>)> = found
            .iter()
            .map(|l| (l.name.as_str(), l.version.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                ("bare", Some("0.1")),
                ("legacy", Some("2.0")),
                ("odp-fixture", Some("1.2.3")),
            ]
        );
        assert!(found.iter().all(|l| l.kind == LibraryKind::Python));
        assert!(distributions(&site.path().join("missing")).is_empty());
    }

    #[test]
    fn site_directories_come_out_of_mapped_paths_and_pyvenv_cfg() {
        assert_eq!(
            site_dir_of("/v/lib/python3.11/site-packages/numpy/core/_m.cpython-311.so"),
            Some(PathBuf::from("/v/lib/python3.11/site-packages"))
        );
        assert_eq!(
            site_dir_of("/usr/lib/python3/dist-packages/yaml/_yaml.so"),
            Some(PathBuf::from("/usr/lib/python3/dist-packages"))
        );
        assert_eq!(site_dir_of("/usr/lib/libc.so.6"), None);
        assert!(parse_pyvenv_system_site(
            "home = /usr/bin\ninclude-system-site-packages = true\nversion = 3.11.7\n"
        ));
        assert!(!parse_pyvenv_system_site(
            "home = /usr/bin\ninclude-system-site-packages = false\n"
        ));
    }
}
