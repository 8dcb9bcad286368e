//! Hosts known from heartbeats, and undeploying an agent.

use std::time::Duration;

use odp_devstack::mint_scoped_token;
use reqwest::Method;

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_appear_from_heartbeats_and_undeploy_stops_them() {
    let mut h = common::start("hosts", 2).await;
    let client = h.platform.client();
    let host = h.platform.host_id.clone();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let reply = client
            .request(Method::GET, "/api/v1/hosts", None)
            .await
            .unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text);
        let live = reply.body["agents"].as_array().unwrap().iter().any(|a| {
            a["host"] == host.as_str()
                && a["live"] == true
                && a["plugins"].as_array().is_some_and(|p| !p.is_empty())
        });
        if live {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no live agent listed: {}\n{}",
            reply.text,
            h.platform.logs()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    let path = format!("/api/v1/hosts/{host}/undeploy?mode=now");
    let viewer = h
        .platform
        .client_for(&mint_scoped_token(&h.platform.jwt_secret, "v", "viewer", &[]).unwrap());
    assert_eq!(
        viewer
            .request(Method::POST, &path, None)
            .await
            .unwrap()
            .status,
        403
    );
    let bad_mode = format!("/api/v1/hosts/{host}/undeploy?mode=sideways");
    assert_eq!(
        client
            .request(Method::POST, &bad_mode, None)
            .await
            .unwrap()
            .status,
        400
    );
    let reply = client.request(Method::POST, &path, None).await.unwrap();
    assert_eq!(reply.status, 202, "{}", reply.text);

    let agent = h
        .platform
        .agent
        .as_mut()
        .expect("the harness runs an agent");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = agent.try_status().unwrap() {
            break status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the agent did not exit:\n{}",
            agent.log_tail(30)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(status.success(), "undeploy is a clean exit: {status}");
}
