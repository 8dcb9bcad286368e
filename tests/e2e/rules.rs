//! Rule management through the API: roles, validation, and a change
//! re-applied to past profiles by the pipeline's re-analysis, visible as
//! progress and in the profiles' issues.

use std::time::Duration;

use odp_devstack::{mint_scoped_token, ApiClient, Reply};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

fn hot_rule(id: &str) -> Value {
    json!({
        "id": id,
        "title": "hot() on the hot path",
        "explanation": "hot is slow",
        "fix": "cool it down",
        "link": "https://example.com/hot",
        "kind": "stack_share",
        "spec": {"function": "^hot$", "leaf_only": true},
        "threshold_pct": 10.0,
    })
}

async fn call(client: &ApiClient, method: Method, path: &str, body: Option<&Value>) -> Reply {
    client.request(method, path, body).await.unwrap()
}

/// Polls the rule until its latest re-analysis finished; returns it.
async fn reanalysed(client: &ApiClient, id: &str) -> Value {
    for _ in 0..300 {
        let rule = call(client, Method::GET, &format!("/api/v1/rules/{id}"), None).await;
        if rule.body["reanalysis"]["status"] == "finished" {
            return rule.body;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the re-analysis of {id} never finished");
}

async fn issue_ids(client: &ApiClient, profile: &str) -> Vec<String> {
    let reply = call(
        client,
        Method::GET,
        &format!("/api/v1/profiles/{profile}/issues"),
        None,
    )
    .await;
    reply.body["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["rule_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_manage_rules_and_changes_reach_past_profiles() {
    let h = common::start_without_agent("rules").await;
    let admin = h.platform.client();
    let secret = &h.platform.jwt_secret;
    let token = |role: &str| {
        h.platform
            .client_for(&mint_scoped_token(secret, "someone", role, &["*"]).unwrap())
    };
    let (anonymous, viewer, profiler) = (
        h.platform.client_for(""),
        token("viewer"),
        token("profiler"),
    );

    // A past profile, 30% in hot(), imported before the rule exists.
    let imported = admin
        .send_bytes(
            Method::POST,
            "/api/v1/profiles/import?service=checkout&format=folded",
            b"main;work;hot 30\nmain;work 70\n".to_vec(),
            "text/plain",
        )
        .await
        .unwrap();
    assert_eq!(imported.status, 201, "{}", imported.text);
    let profile = imported.body["id"].as_str().unwrap().to_owned();
    assert!(!issue_ids(&admin, &profile)
        .await
        .contains(&"hot-path".to_owned()));

    // Who may write.
    let rule = hot_rule("hot-path");
    for (who, want) in [(&anonymous, 401), (&viewer, 403), (&profiler, 403)] {
        let reply = call(who, Method::POST, "/api/v1/rules", Some(&rule)).await;
        assert_eq!(reply.status, want, "{}", reply.text);
        let patch = json!({"enabled": false});
        let reply = call(
            who,
            Method::PATCH,
            "/api/v1/rules/jvm-hashtable",
            Some(&patch),
        )
        .await;
        assert_eq!(reply.status, want, "{}", reply.text);
        let reply = call(who, Method::PUT, "/api/v1/rules/hot-path", Some(&rule)).await;
        assert_eq!(reply.status, want, "{}", reply.text);
    }
    let created = call(&admin, Method::POST, "/api/v1/rules", Some(&rule)).await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["source"], "user");
    assert_eq!(created.body["reanalysis"]["requested_by"], "odp-dev");
    let again = call(&admin, Method::POST, "/api/v1/rules", Some(&rule)).await;
    assert_eq!(again.status, 409, "{}", again.text);

    // The pipeline re-analyses the past profile: the rule now shows there.
    let done = reanalysed(&viewer, "hot-path").await;
    assert!(
        done["reanalysis"]["profiles_total"].as_i64().unwrap() >= 1,
        "{done}"
    );
    assert_eq!(
        done["reanalysis"]["profiles_done"],
        done["reanalysis"]["profiles_total"]
    );
    assert!(issue_ids(&viewer, &profile)
        .await
        .contains(&"hot-path".to_owned()));
    let progress = call(
        &viewer,
        Method::GET,
        "/api/v1/rules/hot-path/reanalysis",
        None,
    )
    .await;
    assert_eq!(progress.body["status"], "finished", "{}", progress.text);

    // Over the threshold for checkout only: gone from its past profile.
    let patch = json!({"service_thresholds": {"checkout": 50.0}});
    let changed = call(
        &admin,
        Method::PATCH,
        "/api/v1/rules/hot-path",
        Some(&patch),
    )
    .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    assert_eq!(changed.body["threshold_pct"], 10.0);
    reanalysed(&viewer, "hot-path").await;
    assert!(!issue_ids(&viewer, &profile)
        .await
        .contains(&"hot-path".to_owned()));

    // A seed rule edited becomes the admin's.
    let disabled = call(
        &admin,
        Method::PATCH,
        "/api/v1/rules/jvm-hashtable",
        Some(&json!({"enabled": false})),
    )
    .await;
    assert_eq!(
        (
            disabled.body["enabled"].clone(),
            disabled.body["source"].clone()
        ),
        (json!(false), json!("user"))
    );

    // Bad input: 4xx with a message, never stored.
    let with = |key: &str, value: Value| {
        let mut r = hot_rule("bad-rule");
        r[key] = value;
        r
    };
    let mut no_id = hot_rule("x");
    no_id.as_object_mut().unwrap().remove("id");
    let bad = [
        with("id", json!("Bad Id")),
        with("id", json!("")),
        with("spec", json!({"function": "("})),
        with("spec", json!({"function": "x", "colour": 1})),
        with("spec", json!({"previous_runs": 0})),
        with("kind", json!("library_version_nope")),
        with("threshold_pct", json!(101)),
        with("threshold_pct", json!(-1)),
        with("service_thresholds", json!({"checkout": 200})),
        with("service_thresholds", json!({"bad name": 1})),
        with("link", json!("ftp://example.com")),
        with("title", json!(" ")),
        with("title", json!("t".repeat(201))),
        with("enabled", json!("yes")),
        no_id,
    ];
    for body in bad {
        let reply = call(&admin, Method::POST, "/api/v1/rules", Some(&body)).await;
        assert!(
            matches!(reply.status, 400 | 422),
            "{body}: {} {}",
            reply.status,
            reply.text
        );
        assert!(reply.body["error"]["message"].is_string(), "{}", reply.text);
    }
    assert_eq!(
        call(&admin, Method::GET, "/api/v1/rules/bad-rule", None)
            .await
            .status,
        404
    );
    let mismatch = call(
        &admin,
        Method::PUT,
        "/api/v1/rules/hot-path",
        Some(&hot_rule("other")),
    )
    .await;
    assert_eq!(mismatch.status, 422, "{}", mismatch.text);
    for (method, body) in [
        (Method::PUT, Some(hot_rule("missing"))),
        (Method::PATCH, Some(json!({"enabled": true}))),
        (Method::GET, None),
    ] {
        let reply = call(
            &admin,
            method.clone(),
            "/api/v1/rules/missing",
            body.as_ref(),
        )
        .await;
        assert_eq!(reply.status, 404, "{method} {}", reply.text);
    }
    let reply = call(
        &admin,
        Method::PATCH,
        "/api/v1/rules/hot-path",
        Some(&json!({"threshold_pct": 200})),
    )
    .await;
    assert_eq!(reply.status, 422, "{}", reply.text);
    let reply = call(
        &admin,
        Method::PATCH,
        "/api/v1/rules/hot-path",
        Some(&json!({"title": "x"})),
    )
    .await;
    assert!(matches!(reply.status, 400 | 422), "{}", reply.text);

    // odpctl: list, and disable following the re-analysis to its end.
    let output = tokio::task::block_in_place(|| {
        common::odpctl(
            &h,
            &h.platform.token,
            &["rules", "disable", "hot-path", "--wait"],
        )
    });
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("re-analysis finished"), "{stderr}");
    let output =
        tokio::task::block_in_place(|| common::odpctl(&h, &h.platform.token, &["rules", "list"]));
    let listed = String::from_utf8_lossy(&output.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("hot-path") && l.contains(" no ")),
        "{listed}"
    );
}
