//! Shared by the integration tests: the C workload and child processes
//! here, the broker and command harness in [`kafka`].

// Each test binary uses a different part of this module, and `pub` here
// only means "for the test files".
#![allow(dead_code, unreachable_pub)]

pub mod kafka;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// Compiles tests/data/burn.c into the test's temporary directory.
pub fn build_burner(name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/burn.c");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let status = Command::new("cc")
        .args([
            "-O2",
            "-fno-omit-frame-pointer",
            "-mno-omit-leaf-frame-pointer",
            "-o",
        ])
        .arg(&out)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) is needed to build the test workload");
    assert!(status.success(), "cc failed to build {}", source.display());
    out
}

/// A child process killed (and reaped) on drop, even when a test fails.
pub struct Killed(pub Child);

impl Killed {
    pub fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Builds and starts the burner for `seconds`, named `name`.
pub fn spawn_burner_for(name: &str, seconds: u32) -> Killed {
    start_burner(&build_burner(name), seconds)
}

/// Starts an already built burner (rebuilding a running binary would fail
/// with "text file busy").
pub fn start_burner(binary: &Path, seconds: u32) -> Killed {
    let child = Command::new(binary)
        .arg(seconds.to_string())
        .spawn()
        .expect("start the burner");
    // Let the loader finish so samples land in the burner's own code.
    std::thread::sleep(Duration::from_millis(200));
    Killed(child)
}

pub fn spawn_burner(name: &str) -> Killed {
    spawn_burner_for(name, 300)
}

pub fn wait_exit(child: &mut Killed, timeout: Duration) -> ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.0.try_wait().expect("wait for the agent") {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "agent did not exit within {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn sigterm(child: &Killed) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
}

/// Compiles tests/data/workload.c (threads and phases modes) as `name`.
pub fn build_workload(name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/workload.c");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let status = Command::new("cc")
        .args([
            "-O2",
            "-pthread",
            "-fno-omit-frame-pointer",
            "-mno-omit-leaf-frame-pointer",
            "-o",
        ])
        .arg(&out)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) is needed to build the test workload");
    assert!(status.success(), "cc failed to build {}", source.display());
    out
}

/// Starts a built workload with its arguments, killed on drop.
pub fn start_workload(binary: &Path, args: &[&str]) -> Killed {
    let child = Command::new(binary)
        .args(args)
        .spawn()
        .expect("start the workload");
    std::thread::sleep(Duration::from_millis(300));
    Killed(child)
}
