//! A function's trend over a service's history, read through the API from
//! what the real agent stored of the demo (demo_hot takes 60 % of its one
//! busy thread): every stored sample is in exactly one step, the
//! function's count matches the profile's own top table, its share and
//! cores are the demo's split within their standard errors, and a label
//! of the host's agent narrows it to that host.

use std::time::Duration;

use chrono::Utc;
use odp_devstack::ApiClient;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

async fn trend(client: &ApiClient, query: &str) -> (u16, Value) {
    let reply = client
        .request(
            Method::GET,
            &format!("/api/v1/services/demo/trend?{query}"),
            None,
        )
        .await
        .expect("trend");
    (reply.status, reply.body)
}

/// The CPU seconds process `pid` has used (`/proc/PID/stat`'s utime and
/// stime, in clock ticks of 1/100 s).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the demo's stat");
    let after_name = &stat[stat.rfind(')').expect("stat's name") + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_functions_trend_holds_every_sample_once_with_its_share_and_cores() {
    let h = common::start("trend", 2).await;
    let admin = h.platform.client();
    let demo = h.spawn_demo_for(120);
    let since = Utc::now() - chrono::Duration::minutes(1);
    let cpu_before = cpu_seconds(demo.pid());
    let profile = admin
        .start_profile(&json!({"host": h.platform.host_id, "pid": demo.pid(),
            "service": "demo", "duration_secs": 12, "frequency_hz": 99}))
        .await
        .expect("profile the demo");
    let finished = admin
        .wait_finished(profile.id, Duration::from_secs(90), |_| {})
        .await
        .unwrap();
    assert_eq!(finished.status, odp_core::ProfileStatus::Finished);
    let cpu_after = cpu_seconds(demo.pid());
    let top = admin.top(profile.id, 20).await.unwrap();
    let hot = top
        .functions
        .iter()
        .find(|f| f.function == "demo_hot")
        .expect("demo_hot in the top table")
        .total_samples;

    let until = Utc::now() + chrono::Duration::minutes(1);
    let range = format!(
        "since={}&until={}",
        since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let (status, body) = trend(
        &admin,
        &format!("function=%5Edemo_hot%24&step_secs=10&{range}"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["event"], "cpu-clock");
    assert_eq!(body["step_secs"], 10);
    let points = body["points"].as_array().unwrap();
    let sum = |key: &str| points.iter().map(|p| p[key].as_u64().unwrap()).sum::<u64>();
    // Every stored sample in exactly one step: the windows' own counts
    // (the top table's total weighs them by each window's period).
    let timeline = admin
        .call(
            Method::GET,
            &format!("/api/v1/profiles/{}/timeline", profile.id),
            None,
            200,
        )
        .await
        .expect("the timeline");
    let stored: u64 = timeline["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["samples"].as_u64().unwrap())
        .sum();
    assert_eq!(sum("samples"), stored, "every sample in one step");
    // The top table weighs each window's counts by the period the agent
    // measured in it (the timer's, which drifts around 1/99 s, and which
    // the agent lengthens when it lowers its rate under load) and rounds
    // per function, where the trend's counts are raw samples. On a loaded
    // machine a window sampled at a lower rate weighs more, so the two
    // shares part (CI once: 0.547 raw against 0.516 weighed); the trend's
    // cores, weighed alike, are held to the top table's share below.
    let matched = sum("matched");
    let share = hot as f64 / top.samples as f64;
    let trend_share = matched as f64 / stored as f64;
    assert!(
        (trend_share - share).abs() <= 0.04,
        "demo_hot: {matched} of {stored} in the trend ({trend_share:.4}), \
         {hot} of {} in its top table ({share:.4})",
        top.samples
    );
    // 60 % within four standard errors of the profile's samples, and the
    // 2 % the demo's own split may be off by.
    let share_stderr = (0.6 * 0.4 / stored as f64).sqrt();
    assert!(
        (share - 0.6).abs() <= 4.0 * share_stderr + 0.02,
        "demo_hot's share {share:.3} of {stored} samples"
    );
    // Each full step: 60 % within four standard errors (and the 2 % the
    // demo's own split may be off by).
    for point in points
        .iter()
        .filter(|p| p["samples"].as_u64().unwrap() > 500)
    {
        let (p, stderr) = (
            point["share"].as_f64().unwrap(),
            point["share_stderr"].as_f64().unwrap(),
        );
        assert!(
            (p - 0.6).abs() <= 4.0 * stderr + 0.02,
            "{point} against 0.6\n{body}"
        );
        let cores = point["cores"].as_f64().unwrap();
        assert!(cores <= 0.7, "one thread, 60 % of it at most: {point}");
    }
    // Over the range, the cores of every function add up to the CPU the
    // demo used while it was profiled (the kernel's count), and
    // demo_hot's to its share of that. The agent may lower its rate under
    // load: a sample then stands for more CPU, which the cores follow.
    let all = format!("function=.&step_secs=10&{range}");
    let (_, every) = trend(&admin, &all).await;
    let core_seconds = |body: &Value| -> f64 {
        body["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["cores"].as_f64().unwrap_or(0.0) * 10.0)
            .sum()
    };
    let (all_seconds, hot_seconds) = (core_seconds(&every), core_seconds(&body));
    let used = cpu_after - cpu_before;
    eprintln!(
        "trend: {all_seconds:.2} core-seconds sampled, {used:.2} used by the demo; \
         demo_hot {hot_seconds:.2} ({:.1} %)",
        100.0 * hot_seconds / all_seconds
    );
    assert!(
        all_seconds <= used + 0.05 && all_seconds >= 0.9 * used - 0.3,
        "{all_seconds:.2} core-seconds sampled against {used:.2} used"
    );
    assert!(
        (hot_seconds / all_seconds - share).abs() < 0.02,
        "demo_hot {hot_seconds:.2} of {all_seconds:.2} core-seconds against its {share:.3} share"
    );

    // Only the hosts whose agents report a label: this host reports its
    // architecture, so the steps are the same; a zone no agent reports is
    // refused with the labels named.
    let arch = std::env::consts::ARCH;
    let (status, labelled) = trend(
        &admin,
        &format!("function=%5Edemo_hot%24&step_secs=10&labels=arch:{arch}&{range}"),
    )
    .await;
    assert_eq!(status, 200, "{labelled}");
    assert_eq!(labelled["points"], body["points"]);
    assert_eq!(labelled["hosts"], json!([h.platform.host_id]));
    let (status, nowhere) = trend(
        &admin,
        &format!("function=x&labels=arch:{arch},zone:nowhere&{range}"),
    )
    .await;
    assert_eq!(status, 422, "{nowhere}");
    assert!(
        nowhere.to_string().contains("arch:") && nowhere.to_string().contains("zone:nowhere"),
        "{nowhere}"
    );

    // odpctl draws the same steps.
    let token = h.platform.token.clone();
    let shown = common::odpctl(
        &h,
        &token,
        &[
            "trend",
            "demo",
            "^demo_hot$",
            "--since",
            "5m",
            "--step",
            "10s",
        ],
    );
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{shown:?}");
    assert!(
        text.starts_with("^demo_hot$ in demo") && text.contains('%') && text.contains("####"),
        "{text}"
    );
    eprintln!("{text}");

    // The default step, and the empty steps of a range with nothing.
    let (status, body) = trend(&admin, &format!("function=demo_&{range}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["step_secs"], 10, "2 minutes in at most 120 steps");
    let (status, empty) = trend(
        &admin,
        "function=x&since=2026-01-01T00:00:00Z&until=2026-01-01T01:00:00Z",
    )
    .await;
    assert_eq!(status, 200, "{empty}");
    assert_eq!(empty["event"], Value::Null);
    assert_eq!(empty["points"].as_array().unwrap().len(), 120);

    // Bad input: 422 with the reason.
    for (query, says) in [
        (
            "function=x&since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z".to_owned(),
            "before",
        ),
        (
            "function=x&since=2026-01-01T00:00:00Z&until=2026-03-01T00:00:00Z".to_owned(),
            "31 days",
        ),
        (format!("function=(&{range}"), "regular expression"),
        (format!("function=x&step_secs=1&{range}"), "at least 10"),
        (format!("function=x&hosts=a%20b&{range}"), "hosts"),
        (format!("function=x&labels=zone&{range}"), "key:value"),
    ] {
        let (status, body) = trend(&admin, &query).await;
        assert_eq!(status, 422, "{query}: {body}");
        assert!(body.to_string().contains(says), "{query}: {body}");
    }
    let (status, body) = trend(&admin, &format!("func=x&{range}")).await;
    assert!(
        (400..500).contains(&status),
        "an unknown parameter: {status} {body}"
    );
}
