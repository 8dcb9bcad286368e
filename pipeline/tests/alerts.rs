//! Alerts end to end against a real Postgres and a real webhook receiver:
//! a new detection queues one delivery per matching channel, the sender
//! retries through failures with backoff, signs what it sends, logs every
//! attempt, and nothing is sent twice when the profile is re-evaluated or
//! its snapshot redelivered. Destinations inside (loopback, …) are
//! called only when the operator allow-listed them.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use odp_devstack::{Stack, StackOptions};
use odp_pipeline::alerts::{self, Sender};
use odp_pipeline::detect::Detector;
use odp_pipeline::AlertOptions;
use odp_plumbing::egress::AlertDestinations;
use odp_store::{ChannelKind, NewChannel, StoreError};
use sha2::Sha256;
use uuid::Uuid;

const SECRET: &str = "s3cret";

/// What the receiver was sent, in order: headers and body.
type Received = Arc<Mutex<Vec<(HeaderMap, Bytes)>>>;

/// A webhook receiver that answers 500 to its first two requests, then 204.
async fn start_receiver() -> (String, Received) {
    let received: Received = Arc::default();
    let app = axum::Router::new()
        .route(
            "/hook",
            axum::routing::post(
                |State(received): State<Received>, headers: HeaderMap, body: Bytes| async move {
                    let mut received = received.lock().unwrap();
                    received.push((headers, body));
                    if received.len() <= 2 {
                        StatusCode::INTERNAL_SERVER_ERROR
                    } else {
                        StatusCode::NO_CONTENT
                    }
                },
            ),
        )
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, received)
}

/// A URL nothing listens on.
async fn dead_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    drop(listener);
    url
}

/// The receivers listen on loopback: allow-listed, as an operator would
/// allow an in-cluster relay.
fn loopback_allowed() -> AlertDestinations {
    AlertDestinations {
        allowed: vec!["127.0.0.1".parse().unwrap()],
    }
}

/// A running profile of `checkout` with a StringBuffer-heavy window,
/// evaluated: one delivery queued per matching channel.
async fn detect_string_buffer(pool: &sqlx::PgPool, detector: &Detector) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by,
                               service)
         values ($1, 'h-1', '{\"by\": \"pid\", \"value\": 7}', 60000, 99, 'running', 'test',
                 'checkout')",
    )
    .bind(id)
    .execute(pool)
    .await
    .unwrap();
    let s = support::string_buffer_window(id, 30);
    odp_store::store_snapshots(pool, &[&s]).await.unwrap();
    let db = odp_store::Database::from(pool);
    assert_eq!(detector.evaluate_profile(&db, id).await.unwrap(), 1);
    id
}

fn channel(name: &str, url: &str, pattern: &str, enabled: bool) -> NewChannel {
    NewChannel {
        name: name.into(),
        kind: ChannelKind::Webhook,
        url: url.into(),
        secret: Some(SECRET.into()),
        email_from: None,
        email_to: Vec::new(),
        service_pattern: pattern.into(),
        enabled,
    }
}

fn verify(body: &[u8], header: &str) {
    let hex = header.strip_prefix("sha256=").expect("sha256= prefix");
    let tag: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body);
    mac.verify_slice(&tag).expect("signature verifies");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_detections_are_delivered_once_signed_and_retried() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = odp_store::Database::from(&pool);
    let detector = Detector::start(&db).await.unwrap();
    let (url, received) = start_receiver().await;

    let all = odp_store::create_channel(&pool, &channel("ops", &url, "*", true))
        .await
        .unwrap();
    let dead =
        odp_store::create_channel(&pool, &channel("dead", &dead_url().await, "check*", true))
            .await
            .unwrap();
    for other in [
        channel("billing", &url, "billing-*", true),
        channel("off", &url, "*", false),
    ] {
        odp_store::create_channel(&pool, &other).await.unwrap();
    }
    let taken = odp_store::create_channel(&pool, &channel("ops", &url, "*", true)).await;
    assert!(matches!(taken, Err(StoreError::Conflict(_))), "{taken:?}");
    let channels = odp_store::list_channels(&pool).await.unwrap();
    assert_eq!(channels.len(), 4);
    assert_eq!(channels[0].kind, ChannelKind::Webhook);

    let id = Uuid::new_v4();
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by,
                               service)
         values ($1, 'h-1', '{\"by\": \"pid\", \"value\": 7}', 60000, 99, 'running', 'test',
                 'checkout')",
    )
    .bind(id)
    .execute(&pool)
    .await
    .unwrap();
    let s = support::string_buffer_window(id, 30);
    odp_store::store_snapshots(&pool, &[&s]).await.unwrap();
    assert_eq!(detector.evaluate_profile(&db, id).await.unwrap(), 1);
    // Queued with the detection: the matching enabled channels only.
    assert_eq!(
        support::count(&pool, "select count(*) from alert_deliveries").await,
        2
    );

    let options = AlertOptions {
        poll_ms: 20,
        backoff_base_ms: 20,
        max_attempts: 3,
        destinations: loopback_allowed(),
        ..AlertOptions::default()
    };
    let sender = Sender::new(db.clone(), options).unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(alerts::run(sender.clone(), stopped.clone()));

    // Both deliveries settle: one delivered on the third try, the one to
    // nowhere failed after its three attempts.
    support::deliveries_settled(&pool).await;
    let statuses = support::delivery_statuses(&pool).await;
    assert_eq!(
        statuses,
        [
            (all.id, "delivered".to_owned(), 3),
            (dead.id, "failed".to_owned(), 3)
        ]
    );
    let attempts = support::attempts_to(&pool, all.id).await;
    assert_eq!(
        attempts,
        [
            // The remote's error status is not recorded.
            (1, None, false),
            (2, None, false),
            (3, Some(204), true)
        ]
    );
    let dead_errors = support::failures_with_reasons(&pool).await;
    assert_eq!(dead_errors, 3);
    assert_eq!(
        attempt_errors(&pool, all.id).await,
        ["delivery failed: remote answered with an error"; 2]
    );
    assert_eq!(
        attempt_errors(&pool, dead.id).await,
        ["delivery failed: could not connect"; 3]
    );

    // Re-evaluation and redelivery of the snapshot queue nothing new.
    detector.evaluate_profile(&db, id).await.unwrap();
    odp_store::store_snapshots(&pool, &[&s]).await.unwrap();
    detector.evaluate_all(&db, &[id, id]).await;
    assert_eq!(
        support::count(&pool, "select count(*) from alert_deliveries").await,
        2
    );
    assert_eq!(sender.deliver_due(&stopped).await.unwrap(), 0);
    let _ = stop.send(true);
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("sender stops")
        .unwrap();

    let delivery_id: Uuid =
        sqlx::query_scalar("select id from alert_deliveries where channel_id = $1")
            .bind(all.id)
            .fetch_one(&pool)
            .await
            .unwrap();
    let received = received.lock().unwrap().clone();
    assert_eq!(received.len(), 3, "2 failures and 1 success, nothing more");
    for (headers, body) in &received {
        assert_eq!(headers["x-odp-delivery"], delivery_id.to_string().as_str());
        verify(body, headers["x-odp-signature"].to_str().unwrap());
    }
    let body: serde_json::Value = serde_json::from_slice(&received[2].1).unwrap();
    assert_eq!(body["profile_id"], id.to_string());
    assert_eq!(body["service"], "checkout");
    assert_eq!(body["host"], "h-1");
    assert_eq!(body["rule"]["id"], "jvm-stringbuffer");
    assert_eq!(body["rule"]["title"], "java.lang.StringBuffer");
    assert!(body["rule"]["link"]
        .as_str()
        .unwrap()
        .starts_with("https://"));
    assert_eq!(body["share"], 30.0);
    assert_eq!(body["threshold_pct"], 1.0);
    assert_eq!(
        body["stacks"][0]["frames"],
        serde_json::json!(["main", "work", "java.lang.StringBuffer.append"])
    );
    assert_eq!(body["stacks"][0]["count"], 300);
    assert!(body["detected_at"].is_string());

    pool.close().await;
    stack.stop().unwrap();
}

/// The errors the failed attempts to `channel_id` recorded, first first.
async fn attempt_errors(pool: &sqlx::PgPool, channel_id: Uuid) -> Vec<String> {
    sqlx::query_scalar(
        "select a.error from alert_attempts a join alert_deliveries d on d.id = a.delivery_id
         where d.channel_id = $1 and not a.success order by a.attempt",
    )
    .bind(channel_id)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// Without the allow-list a receiver on loopback is never called, whether
/// the URL names it as an IP literal, in another IPv4 form the URL parser
/// normalises, or by a name resolving to it: each delivery fails at its
/// first attempt (a refusal is not retried) with our reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destinations_inside_are_refused_at_delivery() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = odp_store::Database::from(&pool);
    let detector = Detector::start(&db).await.unwrap();
    let (url, received) = start_receiver().await;
    let port = url.split(':').nth(2).unwrap().trim_end_matches("/hook");
    let mut refused = Vec::new();
    for (name, url, why) in [
        ("literal", url.clone(), "destination is a loopback address"),
        (
            "decimal",
            format!("http://2130706433:{port}/hook"),
            "destination is a loopback address",
        ),
        (
            "named",
            format!("http://localhost:{port}/hook"),
            "destination resolves to a loopback address",
        ),
    ] {
        let row = odp_store::create_channel(&pool, &channel(name, &url, "*", true))
            .await
            .unwrap();
        refused.push((row.id, why));
    }
    detect_string_buffer(&pool, &detector).await;

    let options = AlertOptions {
        poll_ms: 20,
        backoff_base_ms: 20,
        max_attempts: 3,
        ..AlertOptions::default()
    };
    let sender = Sender::new(db.clone(), options).unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(alerts::run(sender, stopped));
    support::deliveries_settled(&pool).await;
    let _ = stop.send(true);
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("sender stops")
        .unwrap();

    for (channel_id, why) in refused {
        assert_eq!(
            support::attempts_to(&pool, channel_id).await,
            [(1, None, false)]
        );
        assert_eq!(attempt_errors(&pool, channel_id).await, [why]);
    }
    assert!(support::delivery_statuses(&pool)
        .await
        .iter()
        .all(|(_, status, attempts)| status == "failed" && *attempts == 1));
    assert_eq!(
        received.lock().unwrap().len(),
        0,
        "the receiver was never called"
    );

    pool.close().await;
    stack.stop().unwrap();
}
