//! Shared by the cost-control benchmarks: the C workload and a profile run
//! through the real runner.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::Duration;

use odp_core::cost::CostEventKind;
use odp_core::{Snapshot, Target};
use odp_profiler_service::cost::CostSettings;
use odp_profiler_service::plugin::Plugins;
use odp_profiler_service::runner::{self, ProfileSpec, RunnerEvent};
use odp_profiler_service::targets::ProcFs;
use uuid::Uuid;

/// Compiles tests/data/workload.c.
pub fn build_workload(name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/workload.c");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let status = Command::new("cc")
        .args(["-O2", "-pthread", "-fno-omit-frame-pointer"])
        .arg("-mno-omit-leaf-frame-pointer")
        .arg("-o")
        .arg(&out)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) is needed");
    assert!(status.success(), "cc failed on {}", source.display());
    out
}

/// A child killed on drop.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn start(binary: &Path, args: &[&str]) -> Killed {
    let child = Command::new(binary)
        .args(args)
        .spawn()
        .expect("start workload");
    std::thread::sleep(Duration::from_millis(500));
    Killed(child)
}

/// Profiles `pid` with the real native plugin; returns the windows and
/// cost reports.
pub fn profile(
    pid: u32,
    duration: Duration,
    window: Duration,
    frequency_hz: u32,
    cost: CostSettings,
) -> (Vec<Snapshot>, Vec<CostEventKind>) {
    let spec = ProfileSpec {
        profile_id: Uuid::new_v4(),
        host: "bench".into(),
        agent_id: "bench".into(),
        target: Target::Pid(pid),
        duration,
        frequency_hz,
        window,
        cost,
        plugin: None,
        event: None,
    };
    let (_stop, stop_rx) = mpsc::channel();
    let (mut snapshots, mut reports) = (Vec::new(), Vec::new());
    runner::run(
        &Plugins::default(),
        &ProcFs::default(),
        &spec,
        &stop_rx,
        |e| {
            match e {
                RunnerEvent::Window(s) => snapshots.push(*s),
                RunnerEvent::Cost(k) => reports.push(k),
                RunnerEvent::Failed(e) => panic!("profile failed: {e}"),
                _ => {}
            }
            true
        },
    );
    (snapshots, reports)
}

/// Leaf (self) samples per function of one window.
pub fn leaves(s: &Snapshot) -> std::collections::HashMap<String, u64> {
    odp_profiler_service::cost::control::leaf_counts(s)
}
