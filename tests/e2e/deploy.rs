//! Deploying agents on demand and the control requests' lifecycle: a
//! deploy runs the local deployer and ends with the host's heartbeat,
//! `start` deploys by itself, stop and undeploy are stored as requests
//! that end when the profile ends and the agent stops.

use odp_client::types::ProfileStatus;
use std::time::Duration;

use odp_devstack::{mint_scoped_token, ApiClient};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

/// Polls a request until it leaves the open states; returns it.
async fn settled(client: &ApiClient, id: &str, timeout: Duration) -> Value {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let reply = client
            .request(Method::GET, &format!("/api/v1/requests/{id}"), None)
            .await
            .unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text);
        if matches!(reply.body["status"].as_str(), Some("finished" | "failed")) {
            return reply.body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still open: {}",
            reply.text
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploys_follow_heartbeats_and_requests_record_their_outcome() {
    let h = common::start_configured("deploy", |options| {
        options.with_agent = false;
        options.local_deployer = true;
        options.window_secs = 1;
        options
            .api_env
            .push(("ODP_AGENT_LIVE_SECS".into(), "4".into()));
    })
    .await;
    let admin = h.platform.client();
    let viewer = h
        .platform
        .client_for(&mint_scoped_token(&h.platform.jwt_secret, "v", "viewer", &[]).unwrap());
    let host = format!("{}-deployed", h.platform.host_id);
    let deploy_path = format!("/api/v1/hosts/{host}/deploy");

    let anonymous = h.platform.client_for("");
    let status = |c: &ApiClient, method: Method, path: String| {
        let c = c.clone();
        async move { c.request(method, &path, None).await.unwrap().status }
    };
    assert_eq!(
        status(&anonymous, Method::POST, deploy_path.clone()).await,
        401
    );
    assert_eq!(
        status(&viewer, Method::POST, deploy_path.clone()).await,
        403
    );
    let bad_host = "/api/v1/hosts/bad%20host/deploy".to_owned();
    assert_eq!(status(&admin, Method::POST, bad_host).await, 422);

    let started = admin
        .request(Method::POST, &deploy_path, None)
        .await
        .unwrap();
    assert_eq!(started.status, 202, "{}", started.text);
    assert_eq!(started.body["request"]["status"], "running");
    let id = started.body["request"]["id"].as_str().unwrap().to_owned();
    let deployed = settled(&admin, &id, Duration::from_secs(60)).await;
    assert_eq!(
        deployed["status"],
        "finished",
        "{deployed}\n{}",
        h.platform.logs()
    );
    assert_eq!(deployed["kind"], "deploy");
    assert_eq!(deployed["requested_by"], "odp-dev");

    let again = admin
        .request(Method::POST, &deploy_path, None)
        .await
        .unwrap();
    assert_eq!(again.status, 200, "an agent is live: {}", again.text);
    assert_eq!(again.body["request"]["status"], "finished");

    // `start` implies deploy: a host without an agent gets one.
    let demo = h.spawn_demo();
    let fresh_host = format!("{}-on-demand", h.platform.host_id);
    let request = json!({"host": fresh_host, "pid": demo.pid(), "duration_secs": 2});
    let profile = admin.start_profile(&request).await.unwrap().id;
    let ended = admin
        .wait_finished(profile, Duration::from_secs(90), |_| {})
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    assert_eq!(ended.status, ProfileStatus::Finished, "{ended:?}");
    let deploys = admin
        .request(
            Method::GET,
            &format!("/api/v1/requests?kind=deploy&host={fresh_host}"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        deploys.body["requests"][0]["status"], "finished",
        "{}",
        deploys.text
    );

    // A stop is a request that ends when the profile does.
    let long = json!({"host": host, "pid": demo.pid(), "duration_secs": 120});
    let profile = admin.start_profile(&long).await.unwrap().id;
    admin
        .wait_for_status(profile, ProfileStatus::Running, Duration::from_secs(30))
        .await
        .unwrap();
    admin.stop_profile(profile).await.unwrap();
    let stops = admin
        .request(Method::GET, "/api/v1/requests?kind=stop", None)
        .await
        .unwrap();
    let stop_id = stops.body["requests"][0]["id"].as_str().unwrap().to_owned();
    let stopped = settled(&admin, &stop_id, Duration::from_secs(30)).await;
    assert_eq!(stopped["status"], "finished", "{stopped}");
    assert_eq!(stopped["profile_id"], profile.to_string());

    // An undeploy ends when the host's heartbeats stop.
    let path = format!("/api/v1/hosts/{host}/undeploy?mode=now");
    let undeploy = admin.request(Method::POST, &path, None).await.unwrap();
    assert_eq!(undeploy.status, 202, "{}", undeploy.text);
    let undeploy_id = undeploy.body["request"]["id"].as_str().unwrap().to_owned();
    assert_eq!(undeploy.body["request"]["status"], "dispatched");
    let undeployed = settled(&admin, &undeploy_id, Duration::from_secs(30)).await;
    assert_eq!(undeployed["status"], "finished", "{undeployed}");
    assert_eq!(undeployed["status_reason"], "the agent stopped");

    let listed = viewer
        .request(Method::GET, "/api/v1/requests?limit=50", None)
        .await
        .unwrap();
    assert_eq!(listed.status, 200);
    let kinds: Vec<&str> = listed.body["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["kind"].as_str())
        .collect();
    for kind in ["deploy", "stop", "undeploy"] {
        assert!(kinds.contains(&kind), "{kinds:?}");
    }
    let unknown_kind = "/api/v1/requests?kind=reboot".to_owned();
    assert_eq!(status(&viewer, Method::GET, unknown_kind).await, 422);
    assert_eq!(
        status(&anonymous, Method::GET, "/api/v1/requests".into()).await,
        401
    );
}
