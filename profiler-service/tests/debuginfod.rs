//! Debug files from a debuginfod server: a stripped shared library whose
//! local functions only its separate debug file names is profiled through
//! the real sampler, with a real `debuginfod` (elfutils) serving that file
//! on loopback. Its functions must get their names once the file is
//! fetched, and keep the module grouping (`[libodpdi.so]`) without a
//! server; a file of another build must be refused.
//!
//! Needs cc, objcopy and strip (binutils), `debuginfod` (the Debian
//! package of that name; scripts/bootstrap.sh installs it) and perf_event
//! access to another process (root, CAP_PERFMON or
//! kernel.perf_event_paranoid <= 1).

mod support;
use support::run_command;

use std::collections::HashSet;
use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use object::Object;
use odp_core::{Snapshot, Target};
use odp_profiler_service::plugin::native::debuginfod::{
    verify_debug_file, Debuginfod, DebuginfodSettings, FetchStatus, VerifyError,
};
use odp_profiler_service::plugin::{PluginSettings, Plugins};
use odp_profiler_service::sampling_thread::{self, RunnerEvent};
use odp_profiler_service::targets::ProcFs;

const LIBRARY: &str = "libodpdi.so";
/// The library's local functions: in its debug file's `.symtab` only.
const LOCAL_FUNCTIONS: [&str; 2] = ["odp_alpha_spin", "odp_beta_spin"];

/// Two static busy functions behind one exported entry point, which the
/// stripped library's `.dynsym` still names. `VARIANT` makes another build
/// (another build id).
const LIBRARY_SOURCE: &str = r#"
static volatile unsigned long sink;
__attribute__((noinline, noclone)) static void odp_alpha_spin(void) {
    for (int i = 0; i < 200000; i++) sink += i * 3 + VARIANT;
}
__attribute__((noinline, noclone)) static void odp_beta_spin(void) {
    for (int i = 0; i < 100000; i++) sink ^= i;
}
void odp_burn(void) {
    for (;;) { odp_alpha_spin(); odp_beta_spin(); }
}
"#;

const PROGRAM_SOURCE: &str = r#"
void odp_burn(void);
int main(void) { odp_burn(); return 0; }
"#;

/// A directory of its own per test, emptied first.
fn workdir(test: &str) -> PathBuf {
    support::workdir(&format!("debuginfod-{test}"))
}

/// The stripped library, its debug file and a program running it.
struct Built {
    library: PathBuf,
    debug: PathBuf,
    program: PathBuf,
    build_id: Vec<u8>,
}

/// Builds [`LIBRARY`] and its program in `dir`; the debug file goes to
/// `dir/debug/`, where a server can index it.
fn build(dir: &Path, variant: u32) -> Built {
    fs::write(dir.join("lib.c"), LIBRARY_SOURCE).unwrap();
    fs::write(dir.join("prog.c"), PROGRAM_SOURCE).unwrap();
    let library = dir.join(LIBRARY);
    run_command(
        Command::new("cc")
            .args([
                "-g",
                "-O1",
                "-fno-omit-frame-pointer",
                "-fno-inline",
                "-fPIC",
            ])
            .args(["-shared", "-Wl,--build-id", "-Wl,-soname,libodpdi.so"])
            .arg(format!("-DVARIANT={variant}"))
            .arg("-o")
            .arg(&library)
            .arg(dir.join("lib.c")),
    );
    let program = dir.join("prog");
    run_command(
        Command::new("cc")
            .args(["-O1", "-fno-omit-frame-pointer", "-o"])
            .arg(&program)
            .arg(dir.join("prog.c"))
            .arg(format!("-L{}", dir.display()))
            .arg("-lodpdi")
            .arg(format!("-Wl,-rpath,{}", dir.display())),
    );
    fs::create_dir_all(dir.join("debug")).unwrap();
    let debug = dir.join("debug").join("libodpdi.debug");
    run_command(
        Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&library)
            .arg(&debug),
    );
    run_command(Command::new("strip").arg("--strip-all").arg(&library));
    let data = fs::read(&library).unwrap();
    let elf = object::File::parse(data.as_slice()).unwrap();
    let build_id = elf
        .build_id()
        .unwrap()
        .expect("built with a build id")
        .to_vec();
    assert!(
        elf.section_by_name(".symtab").is_none(),
        "{} is stripped",
        library.display()
    );
    Built {
        library,
        debug,
        program,
        build_id,
    }
}

/// A child process killed and reaped on drop, even when a test fails.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_program(built: &Built) -> Killed {
    Killed(
        Command::new(&built.program)
            .spawn()
            .expect("start the test program"),
    )
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// A free loopback port (another process may take it before the server
/// does; unlikely enough for a test).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The status code of a plain `GET`, or `None` when nothing answers.
fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// elfutils' debuginfod, scanning `dir` for ELF/DWARF files, on loopback.
struct Server {
    _process: Killed,
    port: u16,
}

impl Server {
    fn start(dir: &Path, scanned: &Path) -> Server {
        let port = free_port();
        let log = fs::File::create(dir.join("debuginfod.log")).unwrap();
        let process = Command::new("debuginfod")
            .arg("-F")
            .arg(format!("--port={port}"))
            .arg(format!(
                "--database={}",
                dir.join("debuginfod.sqlite").display()
            ))
            .arg(scanned)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("debuginfod (apt-get install debuginfod) is needed");
        Server {
            _process: Killed(process),
            port,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Waits until the first scan indexed `build_id` (half a second here).
    fn wait_serves(&self, build_id: &[u8]) {
        let path = format!("/buildid/{}/debuginfo", hex(build_id));
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let status = http_status(self.port, &path);
            if status == Some(200) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "debuginfod never served {path} (last: {status:?})"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn plugins_of(urls: Vec<String>, cache_dir: &Path) -> Plugins {
    Plugins::standard(
        ProcFs::default(),
        PluginSettings {
            debuginfod: DebuginfodSettings {
                urls,
                cache_dir: cache_dir.to_owned(),
            },
            ..PluginSettings::default()
        },
    )
}

/// The names of a window's frames in the library: function names, or the
/// module grouping flame graphs show for unnamed code.
fn library_names(snapshot: &Snapshot) -> HashSet<String> {
    snapshot
        .frames
        .iter()
        .filter(|f| f.module == LIBRARY)
        .map(|f| f.display_name())
        .collect()
}

/// Profiles `pid` in 1 s windows until `done` says so of the windows so
/// far, or `limit` passes; returns the windows.
fn profile_until(
    plugins: &Plugins,
    pid: u32,
    limit: Duration,
    mut done: impl FnMut(&[Snapshot]) -> bool,
) -> Vec<Snapshot> {
    let spec = support::native_spec(Target::Pid(pid), limit);
    let (_stop_tx, stop_rx) = mpsc::channel();
    let mut windows = Vec::new();
    sampling_thread::run(plugins, &ProcFs::default(), &spec, &stop_rx, |event| {
        match event {
            RunnerEvent::Window(snapshot) => {
                windows.push(*snapshot);
                return !done(&windows);
            }
            RunnerEvent::Failed(e) => panic!(
                "profile failed: {e}\n(this test needs perf_event access to another process: \
                 run as root, grant CAP_PERFMON or set kernel.perf_event_paranoid <= 1)"
            ),
            _ => {}
        }
        true
    });
    windows
}

fn named(names: &HashSet<String>) -> bool {
    LOCAL_FUNCTIONS.iter().all(|f| names.contains(*f))
}

#[test]
fn a_stripped_library_gets_its_names_from_a_debuginfod_server() {
    let dir = workdir("served");
    let built = build(&dir, 1);
    let server = Server::start(&dir, built.debug.parent().unwrap());
    server.wait_serves(&built.build_id);
    let program = start_program(&built);
    let pid = program.0.id();

    let cache = dir.join("cache");
    let plugins = plugins_of(vec![server.url()], &cache);
    let started = Instant::now();
    let mut first_named = None;
    let windows = profile_until(&plugins, pid, Duration::from_secs(60), |windows| {
        let names = library_names(windows.last().unwrap());
        if named(&names) && first_named.is_none() {
            first_named = Some((windows.len() - 1, started.elapsed()));
        }
        // Two named windows: the names stay once found.
        first_named.is_some_and(|(first, _)| windows.len() >= first + 2)
    });
    let per_window: Vec<HashSet<String>> = windows.iter().map(library_names).collect();
    let (first, after) = first_named.unwrap_or_else(|| {
        panic!(
            "{} never named in {} windows: {per_window:?}",
            LOCAL_FUNCTIONS.join(", "),
            windows.len()
        )
    });
    eprintln!(
        "names from debuginfod in window {first} ({after:.1?} after the start); windows: {per_window:?}"
    );
    // The window the file arrived in may still hold grouped samples from
    // before; the next ones are all named.
    for names in &per_window[first + 1..] {
        assert!(named(names), "{names:?}");
        assert!(!names.contains("[libodpdi.so]"), "{names:?}");
    }
    // Before the file arrived, the library's code was grouped, never
    // misnamed.
    for names in &per_window[..first] {
        for name in names {
            assert!(
                ["[libodpdi.so]", "odp_burn"].contains(&name.as_str())
                    || LOCAL_FUNCTIONS.contains(&name.as_str()),
                "{name} in {names:?}"
            );
        }
    }
    let cached = cache.join(hex(&built.build_id)).join("debuginfo");
    assert_eq!(
        fs::read(&cached).unwrap(),
        fs::read(&built.debug).unwrap(),
        "the served file is cached as elfutils caches it"
    );

    // A later agent (a new client) names the library from its cache at
    // once, the server gone.
    drop(server);
    let unreachable = vec!["http://127.0.0.1:1".to_owned()];
    let restarted = plugins_of(unreachable, &cache);
    let windows = profile_until(&restarted, pid, Duration::from_secs(20), |windows| {
        windows.len() >= 2
    });
    let names = library_names(&windows[0]);
    assert!(named(&names), "first window after a restart: {names:?}");
}

#[test]
fn without_debuginfod_the_library_stays_grouped() {
    let dir = workdir("none");
    let built = build(&dir, 2);
    // The file is even in the cache: without servers the client is off.
    let cache = dir.join("cache");
    let cached = cache.join(hex(&built.build_id));
    fs::create_dir_all(&cached).unwrap();
    fs::copy(&built.debug, cached.join("debuginfo")).unwrap();
    let program = start_program(&built);

    let plugins = plugins_of(Vec::new(), &cache);
    let windows = profile_until(&plugins, program.0.id(), Duration::from_secs(3), |_| false);
    let names: HashSet<String> = windows.iter().flat_map(library_names).collect();
    assert!(names.contains("[libodpdi.so]"), "{names:?}");
    for function in LOCAL_FUNCTIONS {
        assert!(!names.contains(function), "{function} in {names:?}");
    }
}

#[test]
fn a_debug_file_of_another_build_is_refused() {
    let dir = workdir("refused");
    let ours = build(&dir, 3);
    let other_dir = dir.join("other");
    fs::create_dir_all(&other_dir).unwrap();
    let other = build(&other_dir, 4);
    assert_ne!(ours.build_id, other.build_id);

    let open = |path: &Path| fs::File::open(path).unwrap();
    verify_debug_file(open(&ours.debug), &ours.build_id).expect("our own debug file");
    // The stripped library itself carries the build id too: what matters
    // is that the bytes belong to this build.
    verify_debug_file(open(&ours.library), &ours.build_id).unwrap();
    match verify_debug_file(open(&other.debug), &ours.build_id) {
        Err(VerifyError::OtherBuildId { expected, found }) => {
            assert_eq!(expected, hex(&ours.build_id));
            assert_eq!(found, hex(&other.build_id));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        verify_debug_file(open(&dir.join("lib.c")), &ours.build_id),
        Err(VerifyError::NotElf(_))
    ));

    // A server that answers every build id with the other build's debug
    // file (debuginfod itself serves a file by the build id in it, so a
    // plain HTTP server plays the bad server): nothing is cached.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(Mutex::new(fs::read(&other.debug).unwrap()));
    let body = Arc::clone(&served);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0; 4096];
            let _ = stream.read(&mut request);
            let body = body.lock().unwrap().clone();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    let fetch = |cache: &Path| {
        let settings = DebuginfodSettings {
            urls: vec![format!("http://127.0.0.1:{port}")],
            cache_dir: cache.to_owned(),
        };
        let client = Debuginfod::new(&settings).unwrap();
        client.request(&ours.build_id);
        let deadline = Instant::now() + Duration::from_secs(60);
        while client.status(&ours.build_id) == FetchStatus::Pending {
            assert!(Instant::now() < deadline, "the fetch never ended");
            std::thread::sleep(Duration::from_millis(50));
        }
        client
    };
    let cache = dir.join("cache");
    let client = fetch(&cache);
    assert_eq!(client.status(&ours.build_id), FetchStatus::Failed);
    assert_eq!(client.cached(&ours.build_id), None);
    assert_eq!(client.generation(), 0);
    let left: Vec<_> = fs::read_dir(&cache)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "no file left in the cache: {left:?}");

    // The same server sending the right file: it was the file that was
    // refused, not the server.
    *served.lock().unwrap() = fs::read(&ours.debug).unwrap();
    let client = fetch(&dir.join("cache-good"));
    assert_eq!(client.status(&ours.build_id), FetchStatus::Fetched);
    assert_eq!(client.generation(), 1);
    assert!(client.cached(&ours.build_id).is_some());
}
