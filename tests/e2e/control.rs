//! The control plane's rules: who may do what (401 / 403 / allowed for
//! every endpoint), one live profile per target (409), safe retries
//! (`Idempotency-Key`), listing with filters and pages, and expiry of
//! starts no agent acknowledged.

use odp_client::types::ProfileStatus;
use std::time::Duration;

use odp_devstack::{mint_scoped_token, ApiClient};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_and_service_scopes_guard_every_endpoint() {
    let h = common::start_without_agent("authz").await;
    let token = |role: &str, services: &[&str]| {
        h.platform.client_for(
            &mint_scoped_token(&h.platform.jwt_secret, "tester", role, services).unwrap(),
        )
    };
    let (anonymous, viewer) = (h.platform.client_for(""), token("viewer", &[]));
    let (outsider, profiler) = (
        token("profiler", &["search-*"]),
        token("profiler", &["checkout-*"]),
    );
    let host = &h.platform.host_id;
    let body = json!({"host": host, "pid": 1, "service": "checkout-api", "duration_secs": 30});

    let start = |c: &ApiClient| {
        let (c, body) = (c.clone(), body.clone());
        async move {
            c.request(Method::POST, "/api/v1/profiles", Some(&body))
                .await
                .unwrap()
        }
    };
    assert_eq!(start(&anonymous).await.status, 401);
    assert_eq!(start(&viewer).await.status, 403);
    assert_eq!(start(&outsider).await.status, 403);
    // The scope names the service, but `checkout-api` is not defined: a
    // scoped token may not pick its own target (see security_scopes).
    let undefined = start(&profiler).await;
    assert_eq!(undefined.status, 403, "{}", undefined.text);
    let created = start(&token("admin", &[])).await;
    assert_eq!(created.status, 202, "{}", created.text);
    let id = created.body["id"].as_str().unwrap().to_owned();
    assert_eq!(created.body["service"], "checkout-api");
    assert_eq!(created.body["requested_by"], "tester");

    for path in [
        "/api/v1/profiles".to_owned(),
        format!("/api/v1/profiles/{id}"),
        format!("/api/v1/profiles/{id}/flamegraph"),
        format!("/api/v1/profiles/{id}/top"),
        format!("/api/v1/profiles/{id}/issues"),
        "/api/v1/rules".to_owned(),
    ] {
        assert_eq!(
            anonymous
                .request(Method::GET, &path, None)
                .await
                .unwrap()
                .status,
            401,
            "{path}"
        );
        let reply = viewer.request(Method::GET, &path, None).await.unwrap();
        assert_eq!(reply.status, 200, "{path}: {}", reply.text);
    }
    let stop = format!("/api/v1/profiles/{id}/stop");
    assert_eq!(
        anonymous
            .request(Method::POST, &stop, None)
            .await
            .unwrap()
            .status,
        401
    );
    assert_eq!(
        viewer
            .request(Method::POST, &stop, None)
            .await
            .unwrap()
            .status,
        403
    );
    assert_eq!(
        outsider
            .request(Method::POST, &stop, None)
            .await
            .unwrap()
            .status,
        403
    );
    let stopped = profiler.request(Method::POST, &stop, None).await.unwrap();
    assert_eq!(stopped.status, 202, "{}", stopped.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_retries_listing_and_expiry() {
    let h = common::start_without_agent_expiring("lifecycle", 5).await;
    let client = h.platform.client();
    let host = h.platform.host_id.clone();
    let start = |target: Value, key: Option<&str>| {
        let mut request = h
            .platform
            .http()
            .post(format!("{}/api/v1/profiles", h.platform.api_url))
            .bearer_auth(&h.platform.token)
            .json(&target);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };

    let a = json!({"host": host, "process_name": "svc-a", "duration_secs": 30});
    let (status, first) = start(a.clone(), Some("retry-1")).await;
    assert_eq!(status, 202, "{first}");
    // A retry with the same key returns the same profile, not a new one.
    let (status, again) = start(a.clone(), Some("retry-1")).await;
    assert_eq!((status, &again["id"]), (202, &first["id"]), "{again}");
    // A new request for a target with a live profile is refused with it.
    let (status, conflict) = start(a.clone(), None).await;
    assert_eq!(status, 409, "{conflict}");
    assert_eq!(conflict["profile"]["id"], first["id"]);
    assert!(conflict["error"]["message"]
        .as_str()
        .unwrap()
        .contains("live profile"));

    for name in ["svc-b", "svc-c"] {
        let (status, body) = start(
            json!({"host": host, "process_name": name, "duration_secs": 30}),
            None,
        )
        .await;
        assert_eq!(status, 202, "{body}");
    }
    // Pages of two, newest first, then the last page of one.
    let page = client
        .request(Method::GET, "/api/v1/profiles?limit=2", None)
        .await
        .unwrap();
    let names = |page: &Value| -> Vec<String> {
        page["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["service"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&page.body), ["svc-c", "svc-b"], "{}", page.text);
    let cursor = page.body["next_cursor"].as_str().unwrap();
    let next = client
        .request(
            Method::GET,
            &format!("/api/v1/profiles?limit=2&cursor={cursor}"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(names(&next.body), ["svc-a"]);
    assert!(next.body["next_cursor"].is_null());
    let filtered = client
        .request(Method::GET, "/api/v1/profiles?service=svc-b", None)
        .await
        .unwrap();
    assert_eq!(names(&filtered.body), ["svc-b"]);
    let bad = client
        .request(Method::GET, "/api/v1/profiles?cursor=nonsense", None)
        .await
        .unwrap();
    assert_eq!(bad.status, 400);

    // No agent runs here: the starts expire, and the target is free again.
    let id = first["id"].as_str().unwrap();
    let expired = client
        .wait_finished(id, Duration::from_secs(60), |_| {})
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    assert_eq!(expired.status, ProfileStatus::Expired, "{expired:?}");
    let (status, body) = start(a, None).await;
    assert_eq!(status, 202, "{body}");
}
