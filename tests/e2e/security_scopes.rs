//! A service scope binds targets, not a label (issue 27, findings 3 and
//! 4): a token scoped to `demo` profiles only `demo`'s defined target, on
//! the hosts whose agent reports running it, and starting a profile never
//! deploys an agent for a caller who could not deploy one.

use std::time::Duration;

use odp_devstack::{mint_scoped_token, ApiClient};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

async fn start(client: &ApiClient, body: Value) -> (u16, Value) {
    let answer = client
        .request(Method::POST, "/api/v1/profiles", Some(&body))
        .await
        .expect("POST /api/v1/profiles");
    (answer.status, answer.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_token_profiles_only_its_services_target_on_its_hosts() {
    let h = common::start_configured("scopes", |o| o.local_deployer = true).await;
    let admin = h.platform.client();
    let host = h.platform.host_id.clone();
    let _demo = h.spawn_demo_for(120);
    common::define_demo_service(&h).await;
    let secret = &h.platform.jwt_secret;
    let scoped = h
        .platform
        .client_for(&mint_scoped_token(secret, "ci", "profiler", &["demo*"]).unwrap());

    let fresh = format!("{host}-fresh");
    let demo = |target: Value, on: &str| {
        let mut body = json!({"host": on, "service": "demo", "duration_secs": 2});
        body.as_object_mut()
            .unwrap()
            .extend(target.as_object().unwrap().clone());
        body
    };
    for (body, why) in [
        (
            demo(json!({"process_name": "postgres"}), &host),
            "another program, labelled demo",
        ),
        (demo(json!({"cgroup": "/"}), &host), "every process"),
        (demo(json!({"cmdline": ".*"}), &host), "every command line"),
        (demo(json!({"pid": 1}), &host), "a pid"),
        (
            demo(json!({"process_name": "cpu-split"}), &fresh),
            "a host that does not run it",
        ),
        (
            json!({"host": host, "service": "demo-other", "process_name": "cpu-split",
                   "duration_secs": 2}),
            "an undefined service the pattern matches",
        ),
    ] {
        let (code, answer) = start(&scoped, body).await;
        assert_eq!(code, 403, "{why}: {answer}");
        assert!(answer["error"]["message"].is_string(), "{why}: {answer}");
    }

    // The defined target on a host that runs it is the scope's to profile.
    let (code, answer) = start(&scoped, demo(json!({"process_name": "cpu-split"}), &host)).await;
    assert_eq!(code, 202, "{answer}");

    // Nothing was deployed for the host that has no agent, and nothing
    // was recorded for the refused starts.
    let deploys = admin
        .call(
            Method::GET,
            &format!("/api/v1/requests?kind=deploy&host={fresh}"),
            None,
            200,
        )
        .await
        .unwrap();
    assert_eq!(deploys["requests"], json!([]), "{deploys}");
    let profiles = admin
        .call(Method::GET, "/api/v1/profiles?service=demo", None, 200)
        .await
        .unwrap();
    assert_eq!(
        profiles["profiles"].as_array().unwrap().len(),
        1,
        "{profiles}"
    );

    // An admin still profiles anything, and its start deploys.
    let (code, answer) = start(&admin, demo(json!({"cmdline": "cpu-split"}), &fresh)).await;
    assert_eq!(code, 202, "{answer}");
    let deploys = common::wait_for_body(
        &admin,
        &format!("/api/v1/requests?kind=deploy&host={fresh}"),
        Duration::from_secs(30),
        |b| b["requests"].as_array().is_some_and(|r| !r.is_empty()),
    )
    .await;
    assert_eq!(deploys["requests"][0]["requested_by"], "odp-dev");
}
