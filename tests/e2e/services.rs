//! Services: the CRUD API with its access rules and validation, and the
//! hosts that run one, found through the real agent (the definitions
//! reach it as a signed `sync_services`, its heartbeats report the
//! service and the host's labels, the pipeline stores them).

use std::time::Duration;

use odp_devstack::{mint_scoped_token, ApiClient};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

async fn status(client: &ApiClient, method: Method, path: &str, body: Option<Value>) -> u16 {
    client
        .request(method.clone(), path, body.as_ref())
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_crud_with_roles_and_validation() {
    let h = common::start_without_agent("svc-crud").await;
    let admin = h.platform.client();
    let anonymous = h.platform.client_for("");
    let viewer = h
        .platform
        .client_for(&mint_scoped_token(&h.platform.jwt_secret, "v", "viewer", &[]).unwrap());
    let list = "/api/v1/services";
    let checkout =
        json!({"name": "checkout", "cmdline": "java .*checkout", "owner_team": "payments"});

    assert_eq!(
        status(&anonymous, Method::POST, list, Some(checkout.clone())).await,
        401
    );
    assert_eq!(
        status(&viewer, Method::POST, list, Some(checkout.clone())).await,
        403
    );
    let created = admin
        .call(Method::POST, list, Some(&checkout), 201)
        .await
        .expect("an admin defines a service");
    assert_eq!(
        created["target"],
        json!({"by": "cmdline", "value": "java .*checkout"})
    );
    assert_eq!(created["owner_team"], "payments");
    assert_eq!(created["created_by"], "odp-dev");
    assert_eq!(
        status(&admin, Method::POST, list, Some(checkout.clone())).await,
        409
    );

    for (body, why) in [
        (
            json!({"name": "a b", "process_name": "x"}),
            "a name with a space",
        ),
        (json!({"name": "x"}), "no target"),
        (
            json!({"name": "x", "process_name": "a", "cgroup": "/b"}),
            "two targets",
        ),
        (json!({"name": "x", "pid": 1}), "a pid"),
        (
            json!({"name": "x", "cmdline": "("}),
            "a regex that does not compile",
        ),
        (
            json!({"name": "x", "process_name": "a/b"}),
            "a process name with a slash",
        ),
        (
            json!({"name": "x", "process_name": "a", "owner_team": "t".repeat(300)}),
            "a long team",
        ),
    ] {
        let code = status(&admin, Method::POST, list, Some(body)).await;
        assert!(
            (400..500).contains(&code) && code != 401 && code != 403,
            "{why}: {code}"
        );
    }

    let one = "/api/v1/services/checkout";
    let read = viewer.call(Method::GET, one, None, 200).await.unwrap();
    assert_eq!(read["name"], "checkout");
    let changed = admin
        .call(
            Method::PATCH,
            one,
            Some(&json!({"process_name": "java", "owner_team": ""})),
            200,
        )
        .await
        .unwrap();
    assert_eq!(
        changed["target"],
        json!({"by": "process_name", "value": "java"})
    );
    assert_eq!(changed["owner_team"], Value::Null);
    assert_eq!(
        status(&viewer, Method::PATCH, one, Some(json!({}))).await,
        403
    );
    let all = viewer.call(Method::GET, list, None, 200).await.unwrap();
    assert_eq!(all["services"].as_array().unwrap().len(), 1);
    let hosts = viewer
        .call(Method::GET, &format!("{one}/hosts"), None, 200)
        .await
        .unwrap();
    assert_eq!(hosts["hosts"], json!([]), "no agent runs: no host");

    assert_eq!(status(&viewer, Method::DELETE, one, None).await, 403);
    assert_eq!(status(&admin, Method::DELETE, one, None).await, 204);
    assert_eq!(status(&admin, Method::DELETE, one, None).await, 404);
    assert_eq!(status(&viewer, Method::GET, one, None).await, 404);
    assert_eq!(
        status(&viewer, Method::GET, &format!("{one}/hosts"), None).await,
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_is_found_on_the_host_that_runs_it_with_its_labels() {
    let h = common::start_configured("svc-hosts", |o| {
        o.agent_env
            .push(("ODP_LABELS".into(), "zone=eu-1,version=1.4.2".into()));
    })
    .await;
    let admin = h.platform.client();
    let _demo = h.spawn_demo_for(120);
    for body in [
        json!({"name": "demo", "process_name": "cpu-split"}),
        json!({"name": "absent", "process_name": "no-such-process"}),
    ] {
        admin
            .call(Method::POST, "/api/v1/services", Some(&body), 201)
            .await
            .expect("define a service");
    }
    let path = "/api/v1/services/demo/hosts";
    let found = common::wait_for_body(&admin, path, Duration::from_secs(60), |b| {
        b["hosts"].as_array().is_some_and(|hosts| !hosts.is_empty())
    })
    .await;
    let hosts = found["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 1, "{found}\n{}", h.platform.logs());
    assert_eq!(hosts[0]["host"], h.platform.host_id.as_str());
    let labels = &hosts[0]["labels"];
    assert_eq!(labels["zone"], "eu-1");
    assert_eq!(labels["version"], "1.4.2");
    assert!(
        labels["kernel"].as_str().is_some_and(|k| !k.is_empty()),
        "{labels}"
    );
    assert!(labels["cpu_model"].is_string(), "{labels}");

    let absent = admin
        .call(Method::GET, "/api/v1/services/absent/hosts", None, 200)
        .await
        .unwrap();
    assert_eq!(absent["hosts"], json!([]), "no process of it runs");

    // A changed definition reaches the agent too: the demo is no longer it.
    admin
        .call(
            Method::PATCH,
            "/api/v1/services/demo",
            Some(&json!({"process_name": "no-such-process"})),
            200,
        )
        .await
        .unwrap();
    let gone = common::wait_for_body(&admin, path, Duration::from_secs(60), |b| {
        b["hosts"].as_array().is_some_and(|hosts| hosts.is_empty())
    })
    .await;
    assert_eq!(gone["hosts"], json!([]), "{gone}\n{}", h.platform.logs());
}
