//! Where threads wait, through the REST API and odpctl: an off-CPU profile
//! of four threads contending on one mutex (profiler-service's
//! tests/data/waits.c) started by odpctl, read back in time units, its
//! contention issue raised by the pipeline; a CPU profile of the same
//! program beside it; and the views that refuse to add the two.

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

/// Samples of `root`'s subtrees whose path holds `function`.
fn samples_through(node: &Value, function: &str) -> u64 {
    if node["name"] == function {
        return node["total"].as_u64().unwrap_or(0);
    }
    node["children"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|child| samples_through(child, function))
        .sum()
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
    assert_eq!(off["status"], "finished", "{off}");
    assert_eq!(off["mode"], "off-cpu", "{off}");
    assert_eq!(off["options"]["min_wait_us"], 1, "{off}");

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
    assert!((period - 1e9 / FREQUENCY_HZ).abs() < 1.0, "{period}");
    let samples = flame["samples"].as_u64().unwrap();
    let seconds = samples as f64 * period / 1e9;
    let locked = samples_through(&flame["root"], "take_lock");
    eprintln!(
        "off-cpu through the API: {samples} samples = {seconds:.2} s, take_lock {:.1} %",
        100.0 * locked as f64 / samples.max(1) as f64
    );
    // Four threads for about six seconds, on fewer CPUs than threads.
    assert!((4.0..=26.0).contains(&seconds), "{seconds} s off CPU");
    assert!(
        locked as f64 > 0.7 * samples as f64,
        "{locked} of {samples}"
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
        .unwrap();
    let cpu = client
        .wait_finished(&cpu_id, Duration::from_secs(90), |_| {})
        .await
        .unwrap();
    assert_eq!(cpu["status"], "finished", "{cpu}");

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
    let range = "since=2020-01-01T00:00:00Z&until=2030-01-01T00:00:00Z";
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
