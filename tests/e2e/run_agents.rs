//! A run over three real agents, each under a host id of its own on this
//! machine (the harness's, and two started here with their own identity,
//! state and zone label), all seeing the demo: a run of `count: 2`
//! stratified by zone picks two hosts covering both zones, the same seed
//! picks the same two, its stop rule ends it before its maximum duration,
//! and its aggregate holds exactly its members' samples.

use std::collections::BTreeSet;
use std::time::Duration;

use odp_devstack::{workspace_binary, ServiceProcess, TANSU_KAFKA_OPTIONS};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{self, Harness};

/// A real agent for `host` with the zone label `zone`, its own identity
/// and state directory.
fn agent_for(h: &Harness, host: &str, zone: &str) -> ServiceProcess {
    let identity =
        odp_devstack::agent_identity::issue_identity(&h.platform.signing_key, host, "e2e").unwrap();
    let state = tempfile::tempdir().unwrap().keep();
    let mut agent =
        ServiceProcess::builder(host, workspace_binary("odp-profiler-service").unwrap());
    for (variable, value) in identity.env() {
        agent = agent.env(variable, value);
    }
    agent
        .env("ODP_STATE_DIR", &state)
        .env("ODP_LABELS", format!("zone={zone}"))
        .args(["--kafka-bootstrap", h.stack.kafka_bootstrap()])
        .args(h.stack.topics().cli_args())
        .args(["--host-id", host])
        .arg("--command-public-key")
        .arg(&h.platform.public_key)
        .args(["--heartbeat-secs", "2", "--window-secs", "2"])
        .env("ODP_KAFKA_OPTIONS", TANSU_KAFKA_OPTIONS)
        .log_dir(h.stack.log_dir())
        .spawn()
        .unwrap()
}

async fn call(h: &Harness, method: Method, path: &str, body: Option<&Value>, want: u16) -> Value {
    h.platform
        .client()
        .call(method, path, body, want)
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}\n{}", h.platform.logs()))
}

fn is_ended(run: &Value) -> bool {
    ["finished", "partial", "stopped", "precise"].contains(&run["status"].as_str().unwrap_or(""))
        && !run["ended_at"].is_null()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stratified_run_over_three_real_agents_stops_when_precise() {
    let h = common::start_configured("runagents", |o| {
        o.window_secs = 2;
        o.agent_env.push(("ODP_LABELS".into(), "zone=z1".into()));
    })
    .await;
    let prefix = h.platform.host_id.strip_suffix("host").unwrap().to_owned();
    let (b, c) = (format!("{prefix}host-b"), format!("{prefix}host-c"));
    let _agents = [agent_for(&h, &b, "z2"), agent_for(&h, &c, "z1")];
    let _demo = h.spawn_demo_for(240);
    let service = json!({"name": "demo", "process_name": "cpu-split"});
    call(&h, Method::POST, "/api/v1/services", Some(&service), 201).await;
    let found = common::wait_for_body(
        &h.platform.client(),
        "/api/v1/services/demo/hosts",
        Duration::from_secs(90),
        |b| b["hosts"].as_array().is_some_and(|h| h.len() == 3),
    )
    .await;
    let zones: std::collections::BTreeMap<String, String> = found["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let host = h["host"].as_str().unwrap().to_owned();
            (host, h["labels"]["zone"].as_str().unwrap_or("").to_owned())
        })
        .collect();
    assert_eq!(zones.len(), 3, "{found}");

    let request = json!({
        "service": "demo", "hosts": {"count": 2}, "stratify_by": ["zone"], "seed": 11,
        "duration_secs": 60, "window_secs": 2, "frequency_hz": 499,
        "stop_when": {"top": 2, "max_stderr": 0.02},
    });
    let started = call(&h, Method::POST, "/api/v1/runs", Some(&request), 202).await;
    let chosen: Vec<String> =
        serde_json::from_value(started["selection"]["hosts"].clone()).unwrap();
    assert_eq!(chosen.len(), 2, "{started}");
    let covered: BTreeSet<&str> = chosen.iter().map(|host| zones[host].as_str()).collect();
    assert_eq!(covered, BTreeSet::from(["z1", "z2"]), "{started}");

    let id = started["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/runs/{id}");
    let ended = common::wait_for_body(
        &h.platform.client(),
        &path,
        Duration::from_secs(90),
        is_ended,
    )
    .await;
    assert_eq!(ended["status"], "precise", "{ended}\n{}", h.platform.logs());
    let took = ended["duration_secs"].as_u64().unwrap_or(60);
    assert_eq!(took, 60, "the maximum stays what was asked: {ended}");
    let saved = ended["saved_secs"].as_f64().unwrap_or(0.0);
    assert!(saved > 0.0, "the stop rule ended it early: {ended}");

    // The aggregate holds exactly what the members stored, once their last
    // windows are in: the pipeline judges a run only after that.
    common::wait_for_body(
        &h.platform.client(),
        &format!("{path}/issues"),
        Duration::from_secs(60),
        |b| !b["evaluated_at"].is_null(),
    )
    .await;
    let mut members = 0u64;
    for member in ended["members"].as_array().unwrap() {
        let profile = member["profile_id"].as_str().unwrap();
        let top = call(
            &h,
            Method::GET,
            &format!("/api/v1/profiles/{profile}/top"),
            None,
            200,
        )
        .await;
        members += top["samples"].as_u64().unwrap();
    }
    // The same samples, each weighed by its window's period: the run on
    // one scale for all its members, each member's top on its own. When
    // an agent lowered its rate under load the periods differ, and each
    // stack's weighed count is rounded on both sides (CI once: 4,104 in
    // the run against 4,105 in its members). Weighing keeps a total, so
    // only the rounding parts them.
    let flame = call(&h, Method::GET, &format!("{path}/flamegraph"), None, 200).await;
    let run = flame["samples"].as_u64().unwrap_or(0);
    assert!(
        run.abs_diff(members) <= 1 + members / 1000,
        "{run} in the run against {members} in its members: {}",
        flame["hosts"]
    );
    assert!(members > 0);

    // The same seed over the same live hosts: the same two.
    let again = call(&h, Method::POST, "/api/v1/runs", Some(&request), 202).await;
    assert_eq!(again["selection"]["hosts"], started["selection"]["hosts"]);
    let second = format!("/api/v1/runs/{}", again["id"].as_str().unwrap());
    let _ = h
        .platform
        .client()
        .request(Method::POST, &format!("{second}/stop"), None)
        .await;
}
