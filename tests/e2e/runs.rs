//! Runs through the real stack: a service found on the host running it,
//! a run choosing from the live hosts, bad requests refused before
//! anything is created, and a stop rule ending the run early.

use std::time::Duration;

use odp_devstack::{mint_scoped_token, ApiClient};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

async fn status(
    client: &ApiClient,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let answer = client
        .request(method.clone(), path, body.as_ref())
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    (answer.status, answer.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_chooses_live_hosts_and_its_stop_rule_ends_it_early() {
    let h = common::start_configured("runs", |o| {
        o.agent_env.push(("ODP_LABELS".into(), "zone=eu-1".into()));
    })
    .await;
    let admin = h.platform.client();
    let secret = &h.platform.jwt_secret;
    let _demo = h.spawn_demo_for(120);
    common::define_demo_service(&h).await;

    // Refused before anything is created.
    let runs = "/api/v1/runs";
    let base = json!({"service": "demo", "duration_secs": 60, "window_secs": 2});
    let with = |field: &str, value: Value| {
        let mut body = base.clone();
        body[field] = value;
        body
    };
    let mut strict_two = with("hosts", json!({"count": 2}));
    strict_two["strict"] = json!(true);
    let viewer = h
        .platform
        .client_for(&mint_scoped_token(secret, "v", "viewer", &[]).unwrap());
    let other = h
        .platform
        .client_for(&mint_scoped_token(secret, "p", "profiler", &["checkout"]).unwrap());
    for (client, body, expected, why) in [
        (&viewer, base.clone(), 403, "a viewer"),
        (&other, base.clone(), 403, "a token for another service"),
        (
            &admin,
            with("service", json!("nope")),
            422,
            "an undefined service",
        ),
        (
            &admin,
            with("hosts", json!({"percent": 0})),
            422,
            "0 percent",
        ),
        (
            &admin,
            with("hosts", json!({"percent": 101})),
            422,
            "101 percent",
        ),
        (&admin, with("hosts", json!({"count": 0})), 422, "no host"),
        (&admin, strict_two, 422, "more hosts than live, strict"),
        (
            &admin,
            with("stratify_by", json!(["rack"])),
            422,
            "an unknown label",
        ),
        (
            &admin,
            with("stop_when", json!({"top": 0, "max_stderr": 0.01})),
            422,
            "top 0",
        ),
        (
            &admin,
            with("stop_when", json!({"top": 3, "max_stderr": 0})),
            422,
            "epsilon 0",
        ),
        (&admin, with("duration_secs", json!(0)), 422, "no duration"),
    ] {
        let (code, answer) = status(client, Method::POST, runs, Some(body)).await;
        assert_eq!(code, expected, "{why}: {answer}");
        assert!(answer["error"]["message"].is_string(), "{why}: {answer}");
    }
    let listed = admin.call(Method::GET, runs, None, 200).await.unwrap();
    assert_eq!(listed["runs"], json!([]), "nothing half-created");

    // K above the live hosts takes them all and says so; the stop rule
    // ends the run long before its 60 s.
    let mut request = with("hosts", json!({"count": 3}));
    request["stratify_by"] = json!(["zone"]);
    request["seed"] = json!(7);
    request["stop_when"] = json!({"top": 3, "max_stderr": 0.02});
    let started = admin
        .call(Method::POST, runs, Some(&request), 202)
        .await
        .unwrap();
    let id = started["id"].as_str().unwrap().to_owned();
    assert_eq!(started["selection"]["capped"], true);
    assert_eq!(started["selection"]["eligible"], 1);
    assert_eq!(started["selection"]["hosts"], json!([h.platform.host_id]));
    assert_eq!(started["selection"]["strata"][0]["labels"]["zone"], "eu-1");
    assert_eq!(started["seed"], 7);
    assert_eq!(started["members"].as_array().unwrap().len(), 1);

    let path = format!("{runs}/{id}");
    let ended = common::wait_for_body(&admin, &path, Duration::from_secs(50), |b| {
        b["status"] == "precise"
    })
    .await;
    assert_eq!(ended["status"], "precise", "{ended}\n{}", h.platform.logs());
    let epsilon = ended["reached_epsilon"].as_f64().unwrap();
    assert!(epsilon <= 0.02, "{ended}");
    assert!(ended["saved_secs"].as_f64().unwrap() > 20.0, "{ended}");
    let samples = ended["samples_used"].as_f64().unwrap();
    let member = ended["members"][0]["profile_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let profile = common::wait_for_body(
        &admin,
        &format!("/api/v1/profiles/{member}"),
        Duration::from_secs(30),
        |p| p["status"] == "stopped",
    )
    .await;
    assert_eq!(profile["status"], "stopped", "{profile}");
    let precision = admin
        .call(Method::GET, &format!("{path}/precision"), None, 200)
        .await
        .unwrap();
    let top = precision["decision"]["top"].as_array().unwrap();
    assert_eq!(top[0]["function"], "demo_hot", "{precision}");
    // The pooled binomial's N for the widest top share at ±2%, p(1−p)/ε²:
    // 600 samples for the demo's 60%, fewer when a busy machine moves the
    // split (587 at 64%); the rule may take up to a window more (2 s at
    // 99 Hz), and the shares move a little as the last samples land.
    let widest = top
        .iter()
        .map(|t| t["share"].as_f64().unwrap())
        .map(|p| p * (1.0 - p))
        .fold(0.0, f64::max);
    let analytic = widest / (0.02 * 0.02);
    assert!(
        (0.9 * analytic..=analytic + 3.0 * 198.0).contains(&samples),
        "{samples} samples against {analytic:.0}: {ended}\n{precision}"
    );
    assert!(
        // The demo's 60% moves a few points when the machine is busy.
        (0.5..0.75).contains(&top[0]["share"].as_f64().unwrap()),
        "{precision}"
    );

    // An ended run cannot be stopped.
    let (code, _) = status(&admin, Method::POST, &format!("{path}/stop"), None).await;
    assert_eq!(code, 409);
}
