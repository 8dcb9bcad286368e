//! Bad input to the REST API gets a 4xx with a JSON error, never a 5xx.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

/// Who asks, the request, and the status it must get.
type Case<'a> = (
    &'a odp_devstack::ApiClient,
    (Method, String, Option<Value>),
    u16,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_4xx_errors() {
    let h = common::start_without_agent("api").await;
    let client = h.platform.client();
    let anonymous = h.platform.client_for("");
    let forged = h
        .platform
        .client_for("eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl");
    let host = h.platform.host_id.clone();
    let start = |body: Value| (Method::POST, "/api/v1/profiles".to_owned(), Some(body));

    let unknown = uuid::Uuid::new_v4();
    let cases: Vec<Case<'_>> = vec![
        (
            &anonymous,
            (Method::GET, format!("/api/v1/profiles/{unknown}"), None),
            401,
        ),
        (
            &forged,
            (Method::GET, format!("/api/v1/profiles/{unknown}"), None),
            401,
        ),
        (
            &anonymous,
            start(json!({"host": host, "pid": 1, "duration_secs": 1})),
            401,
        ),
        (
            &client,
            (Method::GET, format!("/api/v1/profiles/{unknown}"), None),
            404,
        ),
        (
            &client,
            (
                Method::GET,
                format!("/api/v1/profiles/{unknown}/flamegraph"),
                None,
            ),
            404,
        ),
        (
            &client,
            (
                Method::POST,
                format!("/api/v1/profiles/{unknown}/stop"),
                None,
            ),
            404,
        ),
        (
            &client,
            (Method::GET, "/api/v1/profiles/not-a-uuid".to_owned(), None),
            400,
        ),
        (
            &client,
            (Method::GET, "/api/v1/nothing-here".to_owned(), None),
            404,
        ),
        (
            &client,
            start(json!({"host": host, "duration_secs": 5})),
            422,
        ),
        (
            &client,
            start(json!({"host": host, "pid": 1, "duration_secs": 0})),
            422,
        ),
        (
            &client,
            start(json!({"host": host, "pid": 1, "duration_secs": 100000})),
            422,
        ),
        (
            &client,
            start(json!({"host": host, "pid": 1, "duration_secs": 5, "frequency_hz": 0})),
            422,
        ),
        (
            &client,
            start(json!({"host": host, "pid": 1, "duration_secs": 5, "frequency_hz": 1_000_000})),
            422,
        ),
        (
            &client,
            start(json!({"host": host, "pid": 1, "duration_secs": 5, "colour": "red"})),
            422,
        ),
        (
            &client,
            start(json!({"host": host, "pid": "one", "duration_secs": 5})),
            422,
        ),
        (
            &client,
            start(json!({"host": "bad host!", "pid": 1, "duration_secs": 5})),
            422,
        ),
        (&client, start(json!([1, 2, 3])), 422),
    ];
    // Command-line and cgroup targets: exactly one target, a regex that
    // compiles, a cgroup path or container id, and a service to file under.
    let schedule = |body: Value| (Method::POST, "/api/v1/schedules".to_owned(), Some(body));
    let mut cases = cases;
    for body in [
        json!({"cmdline": "java (", "service": "s"}),
        json!({"cmdline": "", "service": "s"}),
        json!({"cmdline": "a".repeat(1001), "service": "s"}),
        json!({"cmdline": r"(\w{500}){500}", "service": "s"}),
        json!({"cmdline": "java", "pid": 1, "service": "s"}),
        json!({"cmdline": "java", "cgroup": "/a", "service": "s"}),
        json!({"cmdline": "java"}),
        json!({"cgroup": "/system.slice"}),
        json!({"cgroup": "system.slice", "service": "s"}),
        json!({"cgroup": "abc123", "service": "s"}),
        json!({"cgroup": "/a/../b", "service": "s"}),
        json!({"cgroup": 7, "service": "s"}),
    ] {
        let mut start_body = body.clone();
        start_body["host"] = json!(host);
        start_body["duration_secs"] = json!(5);
        cases.push((&client, start(start_body.clone()), 422));
        let mut schedule_body = start_body;
        schedule_body["name"] = json!("bad-target");
        schedule_body["cron"] = json!("0 3 * * *");
        cases.push((&client, schedule(schedule_body), 422));
    }
    for (who, (method, path, body), want) in cases {
        let reply = who
            .request(method.clone(), &path, body.as_ref())
            .await
            .unwrap();
        assert_eq!(
            reply.status, want,
            "{method} {path} {body:?}: {}",
            reply.text
        );
        let message = reply.body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            !message.is_empty(),
            "{method} {path}: no JSON error message in {}",
            reply.text
        );
    }

    // A regex that does not compile says why.
    let reply = client
        .request(
            Method::POST,
            "/api/v1/profiles",
            Some(&json!({"host": host, "cmdline": "java (", "service": "s", "duration_secs": 5})),
        )
        .await
        .unwrap();
    let message = reply.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("unclosed group"), "{}", reply.text);

    // Malformed JSON and a missing content type are 400s.
    let raw = h.platform.http();
    let url = format!("{}/api/v1/profiles", h.platform.api_url);
    for (content_type, body) in [("application/json", "{\"host\": "), ("text/plain", "{}")] {
        let response = raw
            .post(&url)
            .bearer_auth(&h.platform.token)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 400, "{content_type} {body}");
        let json: Value = response.json().await.unwrap();
        assert!(json["error"]["message"].is_string());
    }

    // A profile that already ended cannot be stopped: 409.
    let id = client
        .start_profile(&json!({"host": host, "pid": 1, "duration_secs": 1}))
        .await
        .unwrap()
        .id;
    let pool = h.pool().await;
    sqlx::query("update profiles set status = 'finished' where id = $1::uuid")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();
    let reply = client
        .request(Method::POST, &format!("/api/v1/profiles/{id}/stop"), None)
        .await
        .unwrap();
    assert_eq!(reply.status, 409, "{}", reply.text);
}
