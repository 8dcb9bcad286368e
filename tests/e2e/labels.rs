//! Labels on profiles: set at start (API and `odpctl start --label`),
//! returned with the profile, and used to filter the list.

use std::collections::BTreeMap;

use odp_client::types::ProfilesPage;
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common;

fn ids(page: &ProfilesPage) -> Vec<Uuid> {
    page.profiles.iter().map(|p| p.id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_carry_labels_and_the_list_filters_by_them() {
    let h = common::start_without_agent("labels").await;
    let client = h.platform.client();
    let host = h.platform.host_id.clone();
    let start = |pid: u32, labels: Value| json!({"host": host, "pid": pid, "duration_secs": 60, "labels": labels});

    let prod = client
        .start_profile(&start(1, json!({"env": "prod", "release": "v1.2:rc"})))
        .await
        .unwrap()
        .id;
    let staging = client
        .start_profile(&start(2, json!({"env": "staging"})))
        .await
        .unwrap()
        .id;
    let shown = client.profile(prod).await.unwrap();
    assert_eq!(
        shown.labels,
        BTreeMap::from([
            ("env".to_owned(), "prod".to_owned()),
            ("release".to_owned(), "v1.2:rc".to_owned()),
        ])
    );

    let list = |query: &str| {
        let client = &client;
        let query = query.to_owned();
        async move { client.list_profiles(&query).await.unwrap() }
    };
    assert_eq!(ids(&list("labels=env:prod").await), vec![prod]);
    assert_eq!(ids(&list("labels=env:staging").await), vec![staging]);
    // All pairs must match; values may hold `:`.
    assert_eq!(
        ids(&list("labels=env:prod,release:v1.2:rc").await),
        vec![prod]
    );
    assert!(ids(&list("labels=env:prod,release:v2").await).is_empty());
    assert_eq!(
        ids(&list("labels=env:%20prod%20,%20release:v1.2:rc").await),
        vec![prod],
        "spaces around keys and values are ignored"
    );
    assert_eq!(ids(&list("").await).len(), 2);

    // The CLI sets and filters labels too.
    let args = [
        "start",
        "--host",
        &host,
        "--pid",
        "3",
        "--label",
        "env=canary",
    ];
    let output = tokio::task::block_in_place(|| common::odpctl(&h, &h.platform.token, &args));
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let canary = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let args = ["list", "--label", "env=canary"];
    let output = tokio::task::block_in_place(|| common::odpctl(&h, &h.platform.token, &args));
    let listed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(listed.contains(&canary), "{listed}");
    assert!(!listed.contains(&prod.to_string()), "{listed}");
    let bad = ["list", "--label", "no-equals-sign"];
    let output = tokio::task::block_in_place(|| common::odpctl(&h, &h.platform.token, &bad));
    assert_eq!(output.status.code(), Some(2), "{output:?}");

    let too_many: serde_json::Map<String, Value> =
        (0..17).map(|i| (format!("k{i}"), json!("v"))).collect();
    let bad_starts = [
        json!({"bad key": "v"}),
        json!({"": "v"}),
        json!({"k".repeat(64): "v"}),
        json!({"env": "line\nbreak"}),
        json!({"env": "x".repeat(257)}),
        json!({"env": " padded"}),
        json!({"env": 3}),
        json!(["env", "prod"]),
        Value::Object(too_many),
    ];
    for labels in bad_starts {
        let reply = client
            .request(
                Method::POST,
                "/api/v1/profiles",
                Some(&start(4, labels.clone())),
            )
            .await
            .unwrap();
        assert!(
            matches!(reply.status, 400 | 422),
            "{labels}: {} {}",
            reply.status,
            reply.text
        );
        assert!(reply.body["error"]["message"].is_string(), "{}", reply.text);
    }
    for query in [
        "labels=env",
        "labels=bad%20key:v",
        "labels=",
        "labels=env:prod,",
    ] {
        let path = format!("/api/v1/profiles?{query}");
        let reply = client.request(Method::GET, &path, None).await.unwrap();
        assert_eq!(reply.status, 422, "{query}: {}", reply.text);
    }
}
