//! Continuous profiles: the API with its access rules, limits and
//! conflicts; and a service profiled always by the real agent, its hourly
//! segment opened by the pipeline from the agent's first signed window,
//! its samples checked against what the target earned, beside an
//! on-demand profile of the same process, through an agent restart and
//! until it is turned off.

use std::time::Duration;

use odp_devstack::{mint_scoped_token, ApiClient};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

async fn status_and_body(
    client: &ApiClient,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, String) {
    let reply = client
        .request(method.clone(), path, body.as_ref())
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    (reply.status, reply.text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuous_profiles_with_roles_limits_and_conflicts() {
    let h = common::start_without_agent("cont-api").await;
    let admin = h.platform.client();
    let anonymous = h.platform.client_for("");
    let viewer = h
        .platform
        .client_for(&mint_scoped_token(&h.platform.jwt_secret, "v", "viewer", &[]).unwrap());
    for body in [
        json!({"name": "checkout", "process_name": "checkout"}),
        json!({"name": "checkout-again", "process_name": "checkout"}),
        json!({"name": "search", "cmdline": "java .*search"}),
    ] {
        admin
            .call(Method::POST, "/api/v1/services", Some(&body), 201)
            .await
            .expect("define a service");
    }
    let list = "/api/v1/continuous";
    let on = json!({"service": "checkout"});
    assert_eq!(
        status_and_body(&anonymous, Method::POST, list, Some(on.clone()))
            .await
            .0,
        401
    );
    assert_eq!(
        status_and_body(&viewer, Method::POST, list, Some(on.clone()))
            .await
            .0,
        403
    );
    let created = admin
        .call(Method::POST, list, Some(&on), 201)
        .await
        .expect("an admin turns it on");
    assert_eq!(
        (
            &created["event"],
            &created["frequency_hz"],
            &created["cpu_budget_percent"]
        ),
        (&json!("cpu-clock"), &json!(19), &json!(0.5)),
        "the defaults: {created}"
    );
    assert_eq!(created["hosts"], Value::Null);
    assert_eq!(created["enabled"], true);
    assert_eq!(created["segment_secs"], 3600);
    assert_eq!(created["created_by"], "odp-dev");

    // A second on the same service, or on another service of the same
    // processes: 409, naming the first.
    for service in ["checkout", "checkout-again"] {
        let (code, text) = status_and_body(
            &admin,
            Method::POST,
            list,
            Some(json!({"service": service})),
        )
        .await;
        assert_eq!(code, 409, "{service}: {text}");
        assert!(text.contains(created["id"].as_str().unwrap()), "{text}");
    }
    // Past the operator's limits: 422 naming them. Other bad input: 4xx.
    for (body, says) in [
        (
            json!({"service": "search", "frequency_hz": 1000}),
            "1 to 100 Hz",
        ),
        (
            json!({"service": "search", "cpu_budget_percent": 5}),
            "at most 2 %",
        ),
        (
            json!({"service": "search", "cpu_budget_percent": 0}),
            "at most 2 %",
        ),
        (json!({"service": "nothing"}), "define it first"),
        (
            json!({"service": "search", "event": "off-cpu"}),
            "cpu-clock",
        ),
        (json!({"service": "search", "hosts": ["a b"]}), "hosts"),
    ] {
        let (code, text) = status_and_body(&admin, Method::POST, list, Some(body.clone())).await;
        assert_eq!(code, 422, "{body}: {text}");
        assert!(text.contains(says), "{body}: {text}");
    }
    for body in [
        json!({"service": "search", "rate": 19}),
        json!({"frequency_hz": 19}),
    ] {
        let (code, text) = status_and_body(&admin, Method::POST, list, Some(body.clone())).await;
        assert!((400..500).contains(&code), "{body}: {code} {text}");
    }

    let one = format!("{list}/{}", created["id"].as_str().unwrap());
    let changed = admin
        .call(
            Method::PATCH,
            &one,
            Some(&json!({"frequency_hz": 49, "hosts": ["web-2", "web-1"]})),
            200,
        )
        .await
        .unwrap();
    assert_eq!(changed["frequency_hz"], 49);
    assert_eq!(changed["hosts"], json!(["web-1", "web-2"]));
    assert_eq!(
        status_and_body(
            &viewer,
            Method::PATCH,
            &one,
            Some(json!({"enabled": false}))
        )
        .await
        .0,
        403
    );
    let (code, text) = status_and_body(
        &admin,
        Method::PATCH,
        &one,
        Some(json!({"frequency_hz": 101})),
    )
    .await;
    assert_eq!(code, 422, "{text}");
    let off = admin
        .call(Method::PATCH, &one, Some(&json!({"enabled": false})), 200)
        .await
        .unwrap();
    assert_eq!(off["enabled"], false);
    let listed = viewer.call(Method::GET, list, None, 200).await.unwrap();
    assert_eq!(listed["continuous"].as_array().unwrap().len(), 1);

    // odpctl shows it as a user reads it.
    let token = h.platform.token.clone();
    let shown = common::odpctl(&h, &token, &["continuous", "list"]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{shown:?}");
    assert!(
        text.contains("checkout") && text.contains(" off ") && text.contains("web-1,web-2"),
        "{text}"
    );

    assert_eq!(
        status_and_body(&viewer, Method::DELETE, &one, None).await.0,
        403
    );
    assert_eq!(
        status_and_body(&admin, Method::DELETE, &one, None).await.0,
        204
    );
    assert_eq!(
        status_and_body(&admin, Method::DELETE, &one, None).await.0,
        404
    );
}

/// The profiles of continuous profile `id`, newest first.
async fn segments(client: &ApiClient, id: &str) -> Vec<Value> {
    let page = client
        .call(
            Method::GET,
            &format!("/api/v1/profiles?labels=continuous:{id}&limit=50"),
            None,
            200,
        )
        .await
        .expect("list segments");
    page["profiles"].as_array().cloned().unwrap_or_default()
}

/// The samples stored for `profile` and what its target earned.
async fn coverage(client: &ApiClient, profile: &str) -> (i64, Option<i64>) {
    let body = client
        .call(
            Method::GET,
            &format!("/api/v1/profiles/{profile}"),
            None,
            200,
        )
        .await
        .expect("the profile");
    let coverage = &body["coverage"];
    (
        coverage["captured"].as_i64().unwrap_or(0),
        coverage["expected"].as_i64(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_is_profiled_always_through_an_agent_restart_until_turned_off() {
    let mut h = common::start("cont-agent", 2).await;
    let admin = h.platform.client();
    let _demo = h.spawn_demo_for(300);
    common::define_demo_service(&h).await;
    let created = admin
        .call(
            Method::POST,
            "/api/v1/continuous",
            Some(&json!({"service": "demo", "frequency_hz": 49})),
            201,
        )
        .await
        .expect("turn it on");
    let id = created["id"].as_str().unwrap().to_owned();

    // The agent learns of it from the sync and starts the hour's segment;
    // the pipeline opens it from the first window.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let segment = loop {
        if let Some(first) = segments(&admin, &id).await.first() {
            if coverage(&admin, first["id"].as_str().unwrap()).await.0 > 0 {
                break first.clone();
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no segment with samples\n{}",
            h.platform.logs()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let profile = segment["id"].as_str().unwrap().to_owned();
    assert_eq!(segment["host"], h.platform.host_id.as_str());
    assert_eq!(segment["status"], "running");
    assert_eq!(segment["service"], "demo");
    assert_eq!(segment["frequency_hz"], 49);

    // An on-demand profile of the same process runs beside it.
    let on_demand = admin
        .start_profile(
            &json!({"host": h.platform.host_id, "process_name": "cpu-split",
            "duration_secs": 3, "frequency_hz": 99}),
        )
        .await
        .expect("an on-demand profile beside the continuous one");
    let finished = admin
        .wait_finished(on_demand.id, Duration::from_secs(60), |_| {})
        .await
        .unwrap();
    assert_eq!(
        finished.status,
        odp_core::ProfileStatus::Finished,
        "{finished:?}\n{}",
        h.platform.logs()
    );
    // Against what the demo earned on the CPU meanwhile (its CPU time ×
    // 99 Hz, as the agent read it): a floor of 3 s × 99 Hz would fail
    // whenever other work on the machine took the demo's CPU.
    let beside = admin.top(on_demand.id, 5).await.unwrap().samples;
    let (captured, expected) = coverage(&admin, &on_demand.id.to_string()).await;
    let expected = expected.expect("a CPU profile's expected samples");
    assert_eq!(
        beside as i64, captured,
        "the profile reads what it captured"
    );
    assert!(
        expected > 90 && captured as f64 >= 0.9 * expected as f64,
        "the on-demand profile beside the continuous one captured {captured} of the \
         {expected} samples the demo earned in 3 s at 99 Hz"
    );

    // The agent restarts: it takes the assignment back and the same hour's
    // segment goes on growing.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (before_restart, _) = coverage(&admin, &profile).await;
    let agent = h.platform.agent.as_mut().expect("the platform's agent");
    assert!(agent.stop().unwrap().success());
    agent.respawn().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let (captured, _) = coverage(&admin, &profile).await;
        if captured > before_restart + 200 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the segment stopped growing after the restart ({captured} after {before_restart})\n{}",
            h.platform.logs()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (captured, expected) = coverage(&admin, &profile).await;
    let expected = expected.expect("a CPU profile says what its target earned");
    eprintln!("continuous segment: {captured} samples stored, {expected} earned");
    assert!(
        (captured as f64) >= 0.95 * expected as f64 && (captured as f64) <= 1.05 * expected as f64,
        "{captured} stored against {expected} earned\n{}",
        h.platform.logs()
    );

    // Turned off, the segment ends and stops growing.
    admin
        .call(
            Method::PATCH,
            &format!("/api/v1/continuous/{id}"),
            Some(&json!({"enabled": false})),
            200,
        )
        .await
        .unwrap();
    let ended = common::wait_for_body(
        &admin,
        &format!("/api/v1/profiles/{profile}"),
        Duration::from_secs(90),
        |b| b["status"] != "running",
    )
    .await;
    assert_eq!(ended["status"], "stopped", "{ended}\n{}", h.platform.logs());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (settled, _) = coverage(&admin, &profile).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(coverage(&admin, &profile).await.0, settled, "still sampled");
    assert_eq!(
        segments(&admin, &id).await.len(),
        1,
        "one segment this hour"
    );
}
