//! Live profiles of targets that designate processes by what they run
//! (a command-line regex) or where they run (a cgroup), through the real
//! runner and native plugin.
//!
//! The agent leaves itself and its descendants out of such targets, and
//! here the test binary plays the agent, so the workloads it should find
//! are started detached (`sh -c '... &'`, re-parented away from us); one
//! started as a plain child checks the exclusion.
//!
//! Needs perf_event access to another process, as `sampling.rs` does.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use odp_core::event::FinishReason;
use odp_core::Target;
use odp_profiler_service::plugin::Plugins;
use odp_profiler_service::sampling_thread::{self, RunnerEvent};
use odp_profiler_service::targets::{parse_cgroup_paths, ProcFs};

mod support;

use support::Detached;

/// A burner started detached from the test process (it also exits by
/// itself after its `seconds`, should a test abort).
fn detached_burner(binary: &Path, seconds: u32) -> Detached {
    let detached = Detached::start(&format!("'{}' {seconds}", binary.display()));
    // Let the loader finish so samples land in the burner's own code.
    std::thread::sleep(Duration::from_millis(200));
    detached
}

/// Runs a native profile and returns the pids it started on, the pids it
/// saw samples from, and how it ended.
fn profile(target: Target, duration: Duration) -> (Vec<u32>, Vec<u32>, FinishReason) {
    // A cgroup may hold other programs (Python tools...): the burner is
    // native whatever the majority is.
    let spec = support::native_spec(target, duration);
    let (_stop_tx, stop_rx) = mpsc::channel();
    let (mut started, mut sampled, mut finished) = (None, Vec::new(), None);
    sampling_thread::run(
        &Plugins::default(),
        &ProcFs::default(),
        &spec,
        &stop_rx,
        |event| {
            match event {
                RunnerEvent::Started { pids, .. } => started = Some(pids),
                RunnerEvent::Window(s) => sampled.extend(s.stacks.iter().map(|st| st.tid)),
                RunnerEvent::Cost(_) => {}
                RunnerEvent::Finished(reason) => finished = Some(reason),
                RunnerEvent::Failed(e) => panic!("profile failed: {e}"),
            }
            true
        },
    );
    sampled.sort_unstable();
    sampled.dedup();
    (
        started.expect("the profile must report its start"),
        sampled,
        finished.expect("the profile must report its end"),
    )
}

#[test]
fn profiles_every_process_whose_command_line_matches() {
    let binary = support::build_burner("burn-bycmdline");
    let a = detached_burner(&binary, 20);
    let b = detached_burner(&binary, 20);
    // Same command line, but a child of the "agent": left out.
    let own = support::start_burner(&binary, 20);

    let (pids, sampled, reason) = profile(
        Target::CommandLine(r"/burn-bycmdline 20$".into()),
        Duration::from_secs(2),
    );
    let mut expected = vec![a.0, b.0];
    expected.sort_unstable();
    assert_eq!(pids, expected, "own child {}", own.id());
    assert_eq!(reason, FinishReason::DurationElapsed);
    assert!(
        sampled.contains(&a.0) && sampled.contains(&b.0) && !sampled.contains(&own.id()),
        "{sampled:?}"
    );
}

#[test]
fn profiles_every_process_of_a_cgroup() {
    let binary = support::build_burner("burn-bycgroup");
    let child = detached_burner(&binary, 20);
    let text = std::fs::read_to_string(format!("/proc/{}/cgroup", child.0)).unwrap();
    // The most specific of its hierarchies' paths selects the fewest
    // bystanders; they are profiled too, which is what a cgroup means.
    let path = parse_cgroup_paths(&text)
        .into_iter()
        .max_by_key(String::len)
        .expect("a cgroup path");

    let (pids, sampled, reason) = profile(Target::Cgroup(path.clone()), Duration::from_secs(2));
    assert!(pids.contains(&child.0), "{path}: {pids:?}");
    assert!(
        !pids.contains(&std::process::id()),
        "the agent profiled itself"
    );
    assert!(sampled.contains(&child.0), "{sampled:?}");
    assert_eq!(reason, FinishReason::DurationElapsed);
}
