//! Start options through the REST API: the plugin, the event (and with it
//! the profile's mode) and cost control reach the agent inside the signed
//! command, bad combinations are refused before dispatch, and a profile
//! shows what the agent reported about the target's runtime.

use odp_client::types::{ProfileMode, ProfileStatus};
use std::time::Duration;

use odp_core::runtime::LibraryKind;
use odp_core::Language;
use reqwest::Method;
use serde_json::json;

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_options_reach_the_agent_and_runtime_comes_back() {
    let h = common::start("options", 2).await;
    let demo = h.spawn_demo();
    let client = h.platform.client();
    let host = h.platform.host_id.clone();
    let start = |options: serde_json::Value| json!({"host": host, "pid": demo.pid(), "duration_secs": 4, "options": options});

    for (options, expect) in [
        (
            json!({"plugin": "python", "event": "heap-bytes"}),
            "cannot measure heap-bytes",
        ),
        (
            json!({"plugin": "native", "event": "alloc-bytes"}),
            "cannot measure alloc-bytes",
        ),
        (
            json!({"plugin": "python", "event": "off-cpu"}),
            "cannot measure off-cpu",
        ),
        (
            json!({"event": "cpu-clock", "min_wait_us": 100}),
            "min_wait_us applies",
        ),
        (json!({"fda": {"lambda": 1.5}}), "fda.lambda"),
        (
            json!({"duty_cycle": {"on_secs": 3, "period_secs": 2}}),
            "duty cycle",
        ),
        (json!({"plugin": "cobol"}), "`plugin`"),
    ] {
        let reply = client
            .request(
                Method::POST,
                "/api/v1/profiles",
                Some(&start(options.clone())),
            )
            .await
            .unwrap();
        assert_eq!(reply.status, 422, "{options}: {}", reply.text);
        let message = reply.body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(expect), "{options}: {message}");
    }
    let unknown = start(json!({"fsp": 0.5}));
    let reply = client
        .request(Method::POST, "/api/v1/profiles", Some(&unknown))
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "unknown option: {}", reply.text);

    let options = json!({"plugin": "native", "fsp_share": 1.0, "fda": {"enabled": false},
                         "overhead_budget": 0.5});
    let cpu = client.start_profile(&start(options)).await.unwrap().id;
    // Another mode of the same target is not a duplicate of the CPU
    // profile, and its event reaches the agent, which detects a native
    // program, has no native allocation sampler and says so.
    let alloc = client
        .start_profile(&start(json!({"event": "alloc-bytes"})))
        .await
        .expect("a second mode of a profiled target is accepted")
        .id;
    let failed = client
        .wait_finished(alloc, Duration::from_secs(60), |_| {})
        .await
        .unwrap();
    assert_eq!(failed.status, ProfileStatus::Failed, "{failed:?}");
    assert_eq!(failed.mode, ProfileMode::Alloc, "{failed:?}");
    let reason = failed.status_reason.as_deref().unwrap_or_default();
    assert!(reason.contains("cannot measure alloc-bytes"), "{failed:?}");
    // The same mode twice is.
    let twice = client
        .request(Method::POST, "/api/v1/profiles", Some(&start(json!({}))))
        .await
        .unwrap();
    assert_eq!(twice.status, 409, "{}", twice.text);

    let done = client
        .wait_finished(cpu, Duration::from_secs(90), |_| {})
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    assert_eq!(done.status, ProfileStatus::Finished, "{done:?}");
    assert_eq!(done.mode, ProfileMode::Cpu);
    // The options exactly as the API shows them: read raw, since decoding
    // would fill in FDA settings the reply left out.
    let shown = client
        .call(Method::GET, &format!("/api/v1/profiles/{cpu}"), None, 200)
        .await
        .unwrap();
    assert_eq!(
        shown["options"],
        json!({"plugin": "native", "fsp_share": 1.0, "overhead_budget": 0.5,
               "fda": {"enabled": false, "theta": 0.05, "lambda": 0.8, "stable_windows": 5,
                       "top_n": 10, "min_hz": 19}})
    );
    let runtime = done.runtime.clone().unwrap_or_default();
    assert_eq!(runtime.language, Some(Language::Native), "{done:?}");
    let exe = runtime
        .runtime
        .executable
        .as_ref()
        .map(|e| e.path.as_str())
        .unwrap_or_default();
    assert!(
        exe.ends_with("cpu-split"),
        "the demo's executable: {runtime:?}"
    );
    assert!(
        runtime
            .runtime
            .libraries
            .iter()
            .any(|l| l.kind == LibraryKind::Shared && l.name == "libc"),
        "the demo links libc: {runtime:?}"
    );
    // odpctl passes its option flags through: the API's refusal is exit 2.
    let pid = demo.pid().to_string();
    let args = [
        "start",
        "--host",
        &host,
        "--pid",
        &pid,
        "--plugin",
        "python",
        "--event",
        "heap-bytes",
    ];
    let output = tokio::task::block_in_place(|| common::odpctl(&h, &h.platform.token, &args));
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("cannot measure heap-bytes"),
        "{output:?}"
    );
    // Schedules keep options for every run, checked the same way.
    let schedule = |options: serde_json::Value| {
        json!({"name": "nightly-alloc", "host": host, "process_name": "java", "duration_secs": 30,
               "cron": "0 3 * * *", "options": options})
    };
    let bad = client
        .request(
            Method::POST,
            "/api/v1/schedules",
            Some(&schedule(json!({"plugin": "jvm", "event": "wall"}))),
        )
        .await
        .unwrap();
    assert_eq!(bad.status, 422, "{}", bad.text);
    let created = client
        .call(
            Method::POST,
            "/api/v1/schedules",
            Some(&schedule(json!({"event": "alloc-bytes"}))),
            201,
        )
        .await
        .unwrap();
    assert_eq!(created["options"], json!({"event": "alloc-bytes"}));
    assert_eq!(created["mode"], "alloc");
    // Lists do not carry the runtime (one query per profile).
    // Raw, since a decoded profile cannot tell an absent runtime from a
    // null one.
    let list = client
        .call(Method::GET, "/api/v1/profiles?", None, 200)
        .await
        .unwrap();
    assert!(list["profiles"][0].get("runtime").is_none(), "{list}");
}
