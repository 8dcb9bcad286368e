//! Building the demo workload `demo/cpu-split.c`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{DevError, IoContext, Result};
use crate::postgres::command_failed;
use crate::tools::{c_compiler, repo_root};

/// Flags that keep frame pointers everywhere so perf_event call chains reach
/// `main` (see demo/README.md).
pub const DEMO_CFLAGS: &[&str] = &["-O2", "-g", "-fno-omit-frame-pointer"];

/// Not every compiler/target knows it; the build retries without it.
const LEAF_FRAME_POINTER_FLAG: &str = "-mno-omit-leaf-frame-pointer";

/// The demo's source file.
pub fn demo_source() -> PathBuf {
    repo_root().join("demo").join("cpu-split.c")
}

/// Compiles `demo/cpu-split.c` into `<out_dir>/cpu-split` and returns its path.
pub fn build_demo(out_dir: &Path) -> Result<PathBuf> {
    let compiler = c_compiler()?;
    let source = demo_source();
    if !source.is_file() {
        return Err(DevError::Invalid(format!(
            "demo source {} is missing",
            source.display()
        )));
    }
    std::fs::create_dir_all(out_dir).io_context(|| format!("creating {}", out_dir.display()))?;
    let output_path = out_dir.join("cpu-split");

    let compile = |extra: &[&str]| {
        Command::new(&compiler)
            .args(DEMO_CFLAGS)
            .args(extra)
            .arg("-o")
            .arg(&output_path)
            .arg(&source)
            .output()
            .io_context(|| format!("running {}", compiler.display()))
    };
    let output = compile(&[LEAF_FRAME_POINTER_FLAG])?;
    if output.status.success() {
        return Ok(output_path);
    }
    if String::from_utf8_lossy(&output.stderr).contains("leaf-frame-pointer") {
        let retry = compile(&[])?;
        if retry.status.success() {
            return Ok(output_path);
        }
        return Err(command_failed(
            &format!("{} (demo build)", compiler.display()),
            &retry,
        ));
    }
    Err(command_failed(
        &format!("{} (demo build)", compiler.display()),
        &output,
    ))
}

/// The CPU time (user + system, seconds) process `pid` has used so far,
/// from `/proc/PID/stat`; `None` once it is gone. One agent sampling the
/// single-threaded demo at F Hz takes about F samples per CPU second.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; what follows the
    // last `)` is plain: state, ppid, ... with utime and stime the 12th
    // and 13th fields after it.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / USER_HZ)
}

/// The CPU time (seconds) every process named `name` (its `/proc/PID/stat`
/// command name) has used so far, together: what a bench reads of the
/// broker's or the database's processes beside its own.
pub fn cpu_seconds_of_named(name: &str) -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            comm.trim_end() == name
        })
        .filter_map(cpu_seconds)
        .sum()
}

/// The unit of `/proc` CPU times: 100 on every Linux ABI ODP runs on
/// (x86_64, aarch64).
const USER_HZ: f64 = 100.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_are_found_by_name() {
        let me = std::process::id();
        let started = std::time::Instant::now();
        let mut spin = 0u64;
        while started.elapsed() < std::time::Duration::from_millis(100) {
            spin = std::hint::black_box(spin.wrapping_add(1));
        }
        let own = cpu_seconds(me).unwrap();
        assert!(own > 0.0, "spun for 100 ms");
        let name = std::fs::read_to_string(format!("/proc/{me}/comm")).unwrap();
        assert!(cpu_seconds_of_named(name.trim_end()) >= own);
        assert_eq!(cpu_seconds_of_named("no-such-process"), 0.0);
    }

    #[test]
    fn builds_the_demo_with_its_three_functions() {
        if c_compiler().is_err() {
            eprintln!("skipping: no C compiler");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let binary = build_demo(dir.path()).unwrap();
        let status = Command::new(&binary)
            .args(["--seconds", "0.05"])
            .status()
            .unwrap();
        assert!(status.success());
        let mut spinner = Command::new(&binary)
            .args(["--seconds", "0.3"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(250));
        let used = cpu_seconds(spinner.id()).unwrap();
        assert!(used > 0.0 && used < 0.4, "{used} s of CPU in 0.25 s");
        spinner.wait().unwrap();
        let bad = Command::new(&binary).arg("--nope").status().unwrap();
        assert_eq!(bad.code(), Some(2));
        let image = std::fs::read(&binary).unwrap();
        for name in ["demo_hot", "demo_warm", "demo_cool"] {
            assert!(
                image
                    .windows(name.len())
                    .any(|window| window == name.as_bytes()),
                "{name} missing from the symbol table"
            );
        }
    }
}
