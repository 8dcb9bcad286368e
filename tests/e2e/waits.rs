//! Where threads wait, through the REST API and odpctl: an off-CPU profile
//! of four threads contending on one mutex (profiler-service's
//! tests/data/waits.c) started by odpctl, read back in time units, its
//! contention issue raised by the pipeline; a CPU profile of the same
//! program beside it; and the views that refuse to add the two.

use odp_client::types::{ProfileMode, ProfileStatus};
use std::path::{Path, PathBuf};
use std::time::Duration;

use odp_devstack::ServiceProcess;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

const FREQUENCY_HZ: f64 = 99.0;

fn build_waits(dir: &Path) -> PathBuf {
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiler-service/tests/data/waits.c");
    let out = dir.join("waits");
    let status = std::process::Command::new("cc")
        .args(["-O2", "-g", "-pthread", "-fomit-frame-pointer", "-o"])
        .arg(&out)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) builds waits.c");
    assert!(status.success(), "cc failed on {}", source.display());
    out
}

/// Samples of `node`'s subtrees whose path holds `path`, a run of frames
/// one under the other.
fn samples_through(node: &Value, path: &[&str]) -> u64 {
    let children = || node["children"].as_array().into_iter().flatten();
    if node["name"] == path[0] {
        return match &path[1..] {
            [] => node["total"].as_u64().unwrap_or(0),
            rest => children()
                .filter(|c| c["name"] == rest[0])
                .map(|c| samples_through(c, rest))
                .sum(),
        };
    }
    children().map(|child| samples_through(child, path)).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_cpu_profiles_through_the_api_odpctl_and_detection() {
    let h = common::start("waits", 2).await;
    let binary = build_waits(h.stack.state_dir());
    let program = ServiceProcess::builder("waits", &binary)
        .args(["mutex", "120"])
        .log_dir(h.stack.log_dir())
        .spawn()
        .expect("start waits");
    let client = h.platform.client();
    let host = h.platform.host_id.clone();
    let pid = program.pid().to_string();

    // odpctl starts it (its --event and --min-wait-us flags), and waits.
    let args = [
        "start",
        "--host",
        &host,
        "--pid",
        &pid,
        "--service",
        "contended",
        "--duration-secs",
        "6",
        "--event",
        "off-cpu",
        "--min-wait-us",
        "1",
        "--wait",
    ];
    let output = tokio::task::block_in_place(|| common::odpctl(&h, &h.platform.token, &args));
    assert!(output.status.success(), "{output:?}\n{}", h.platform.logs());
    // The id, then the top functions, saying how long, not only how often.
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let off_id = stdout.lines().next().unwrap_or_default().trim().to_owned();
    assert!(stdout.contains("of time off CPU)"), "{stdout}");
    let off = client
        .wait_finished(&off_id, Duration::from_secs(90), |_| {})
        .await
        .unwrap();
    assert_eq!(off.status, ProfileStatus::Finished, "{off:?}");
    assert_eq!(off.mode, ProfileMode::OffCpu, "{off:?}");
    assert_eq!(off.options.min_wait_us, Some(1), "{off:?}");

    let flame = client
        .call(
            Method::GET,
            &format!("/api/v1/profiles/{off_id}/flamegraph"),
            None,
            200,
        )
        .await
        .unwrap();
    assert_eq!(flame["event"], "off-cpu");
    assert_eq!(flame["unit"], "nanoseconds");
    let period = flame["period"].as_f64().expect("a period");
    // 1/99 s, or more in windows the agent's cost control slowed (FDA's
    // floor is 19 Hz): the answer's period is then the mean it weighted to.
    assert!(
        (1e9 / FREQUENCY_HZ - 1.0..=1e9 / 19.0).contains(&period),
        "{period}"
    );
    let samples = flame["samples"].as_u64().unwrap();
    let seconds = samples as f64 * period / 1e9;
    let share =
        |path: &[&str]| samples_through(&flame["root"], path) as f64 / samples.max(1) as f64;
    let contenders = share(&["contender"]);
    let locking = share(&["take_lock", "pthread_mutex_lock"]) / contenders.max(1e-9);
    let main = share(&["main"]);
    eprintln!(
        "off-cpu through the API: {samples} samples = {seconds:.2} s; contender threads {:.1} %, \
         of which blocked in pthread_mutex_lock under take_lock {:.1} %; main {:.1} %",
        100.0 * contenders,
        100.0 * locking,
        100.0 * main
    );
    // Four contenders for about six seconds on fewer CPUs than threads
    // (the rest of their time off CPU is preemption, which grows when the
    // platform's own services share the CPUs), and the main thread asleep
    // in sleep(3) all along, from before the profile started.
    assert!((6.0..=32.0).contains(&seconds), "{seconds} s off CPU");
    assert!(
        contenders + main > 0.99 && contenders > 0.5,
        "only the program's threads"
    );
    assert!(
        locking > 0.3,
        "{locking} of the contenders' time blocked on the mutex"
    );
    let main_seconds = main * seconds;
    assert!(
        (4.5..=7.5).contains(&main_seconds),
        "main slept {main_seconds} s of about 6"
    );

    // The pipeline's detection names the contended mutex.
    let issues = client
        .call(
            Method::GET,
            &format!("/api/v1/profiles/{off_id}/issues"),
            None,
            200,
        )
        .await
        .unwrap();
    let raised: Vec<&str> = issues["issues"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["rule_id"].as_str())
        .collect();
    assert!(raised.contains(&"native-mutex-wait"), "{issues}");
    assert!(!raised.contains(&"native-lock-contention"), "{issues}");

    // A CPU profile of the same program: the critical section, not the wait.
    let cpu_id = client
        .start_profile(
            &json!({"host": host, "pid": program.pid(), "service": "contended",
                               "duration_secs": 3}),
        )
        .await
        .unwrap()
        .id;
    let cpu = client
        .wait_finished(cpu_id, Duration::from_secs(90), |_| {})
        .await
        .unwrap();
    assert_eq!(cpu.status, ProfileStatus::Finished, "{cpu:?}");

    // Never added together: a diff of the two and an aggregate of both are
    // refused, an aggregate of one event is not.
    let diff = client
        .request(
            Method::GET,
            &format!("/api/v1/diff?baseline={cpu_id}&target={off_id}"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(diff.status, 422, "{}", diff.text);
    assert!(
        diff.text.contains("cannot compare cpu-clock with off-cpu"),
        "{}",
        diff.text
    );
    let now = chrono::Utc::now();
    let hour = chrono::Duration::hours(1);
    let range = format!(
        "since={}&until={}",
        (now - hour).format("%Y-%m-%dT%H:%M:%SZ"),
        (now + hour).format("%Y-%m-%dT%H:%M:%SZ")
    );
    let mixed = client
        .request(
            Method::GET,
            &format!("/api/v1/aggregate?service=contended&{range}"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(mixed.status, 422, "{}", mixed.text);
    assert!(mixed.text.contains("cpu-clock, off-cpu"), "{}", mixed.text);
    let only_off = client
        .call(
            Method::GET,
            &format!("/api/v1/aggregate?service=contended&{range}&event=off-cpu"),
            None,
            200,
        )
        .await
        .unwrap();
    assert_eq!(only_off["event"], "off-cpu");
    assert_eq!(only_off["samples"], samples);
    assert_eq!(only_off["unit"], "nanoseconds");
    let bad = client
        .request(
            Method::GET,
            &format!("/api/v1/aggregate?service=contended&{range}&event=naps"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(bad.status, 422, "{}", bad.text);
    assert!(
        bad.text.contains("off-cpu"),
        "the events are listed: {}",
        bad.text
    );
    drop(program);
}
