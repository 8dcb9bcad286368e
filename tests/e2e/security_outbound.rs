//! Attacks on the running stack: see issue 27. Alert channels as a way
//! inside (SSRF): a channel may not point at loopback, link-local,
//! private, … addresses, in whatever form the URL writes them, unless the
//! operator allow-listed the destination; the pipeline checks again when
//! it connects (a name may resolve elsewhere by then); and the delivery
//! log never shows what a remote answered, so it cannot be used as a port
//! scanner.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use odp_devstack::{ApiClient, Reply};
use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::common;

const SECRET: &str = "outbound-secret-0123456789";
/// What the test's receiver says about itself: must never reach the log.
const BANNER: &str = "internal-admin-console v1.2.3";

async fn create(client: &ApiClient, body: &Value) -> Reply {
    client
        .request(Method::POST, "/api/v1/channels", Some(body))
        .await
        .unwrap()
}

fn webhook(name: &str, url: &str) -> Value {
    json!({"kind": "webhook", "name": name, "url": url, "secret": SECRET})
}

fn email(name: &str, smtp_url: &str) -> Value {
    json!({"kind": "email", "name": name, "smtp_url": smtp_url,
           "from": "odp@example.com", "to": ["oncall@example.com"]})
}

/// A receiver on `ip` that reads each request whole, answers `status`
/// with [`BANNER`] as its body, and counts the connections made to it.
async fn receiver(ip: &str, status: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 8192];
                loop {
                    let n = socket.read(&mut buffer).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buffer[..n]);
                    let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    let head = String::from_utf8_lossy(&request[..end]).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{BANNER}",
                    BANNER.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    (port, calls)
}

/// Every form of an inside address a URL can take is refused at create
/// and at change, with a message naming the allow-list; nothing stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_to_inside_addresses_are_refused() {
    let h = common::start_without_agent("outbound-create").await;
    let admin = h.platform.client();
    let inside = [
        (
            "http://127.0.0.1:8080/hook",
            "127.0.0.1 is a loopback address",
        ),
        (
            "http://localhost:8080/hook",
            "localhost resolves to a loopback address",
        ),
        ("http://[::1]:8080/hook", "::1 is a loopback address"),
        ("http://0.0.0.0:8080/hook", "0.0.0.0 is an unspecified"),
        // The URL parser reads these as 127.0.0.1.
        (
            "http://2130706433:8080/hook",
            "127.0.0.1 is a loopback address",
        ),
        ("http://127.1:8080/hook", "127.0.0.1 is a loopback address"),
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254 is a link-local address",
        ),
        ("http://[::ffff:127.0.0.1]/", "is a loopback address"),
        ("https://10.0.0.1/hook", "10.0.0.1 is a private address"),
        (
            "http://100.64.0.1/hook",
            "is a shared (carrier-grade NAT) address",
        ),
        ("http://[fe80::1]/hook", "is a link-local address"),
    ];
    for (i, (url, why)) in inside.iter().enumerate() {
        let reply = create(&admin, &webhook(&format!("inside-{i}"), url)).await;
        assert_eq!(reply.status, 422, "{url}: {}", reply.text);
        let message = reply.body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("`url` is refused")
                && message.contains(why)
                && message.contains("ODP_ALERT_ALLOWED_DESTINATIONS"),
            "{url}: {message}"
        );
    }
    for (i, relay) in [
        "smtp://127.0.0.1:25",
        "smtp://[::1]:25",
        "smtp://localhost:25",
        "smtp://192.168.1.10:2525",
    ]
    .iter()
    .enumerate()
    {
        let reply = create(&admin, &email(&format!("relay-{i}"), relay)).await;
        assert_eq!(reply.status, 422, "{relay}: {}", reply.text);
        assert!(
            reply.text.contains("`smtp_url` is refused"),
            "{}",
            reply.text
        );
    }

    // A public address is fine, and cannot be changed to an inside one.
    let public = create(&admin, &webhook("public", "https://8.8.8.8/hook")).await;
    assert_eq!(public.status, 201, "{}", public.text);
    let path = format!("/api/v1/channels/{}", public.body["id"].as_str().unwrap());
    for url in [
        "http://127.0.0.1:9/x",
        "http://localhost/",
        "http://2130706433/",
    ] {
        let reply = admin
            .request(Method::PATCH, &path, Some(&json!({ "url": url })))
            .await
            .unwrap();
        assert_eq!(reply.status, 422, "{url}: {}", reply.text);
    }
    let listed = admin
        .request(Method::GET, "/api/v1/channels", None)
        .await
        .unwrap();
    let channels = listed.body["channels"].as_array().unwrap();
    assert_eq!(channels.len(), 1, "{}", listed.text);
    assert_eq!(channels[0]["url"], "https://8.8.8.8/hook");
}

/// DNS rebinding, as near as a test gets: the api-server allow-lists
/// loopback (so the channels are created), the pipeline does not, and the
/// deliveries are refused when they connect, the receiver never called.
/// A destination both allow: its error answer is logged in our words,
/// neither its status nor its body shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pipeline_checks_where_it_connects_and_the_log_tells_no_answers() {
    let h = common::start_configured("outbound-deliver", |options| {
        options.with_agent = false;
        options.api_env.push((
            "ODP_ALERT_ALLOWED_DESTINATIONS".into(),
            "127.0.0.0/8,::1".into(),
        ));
        options
            .pipeline_env
            .push(("ODP_ALERT_ALLOWED_DESTINATIONS".into(), "127.0.0.2".into()));
    })
    .await;
    let admin = h.platform.client();
    let (port, refused_calls) = receiver("127.0.0.1", "204 No Content").await;
    let (allowed_port, allowed_calls) = receiver("127.0.0.2", "500 Internal Server Error").await;
    let mut ids = Vec::new();
    for (name, url) in [
        ("by-name", format!("http://localhost:{port}/hook")),
        ("literal", format!("http://127.0.0.1:{port}/hook")),
        ("decimal", format!("http://2130706433:{port}/hook")),
        ("allowed", format!("http://127.0.0.2:{allowed_port}/hook")),
    ] {
        let reply = create(&admin, &webhook(name, &url)).await;
        assert_eq!(reply.status, 201, "{url}: {}", reply.text);
        ids.push(reply.body["id"].as_str().unwrap().to_owned());
    }

    // An alert for every channel, as detection queues it.
    let profile = admin
        .import_profile("service=outbound&format=folded", b"main;work 10\n".to_vec())
        .await
        .unwrap()
        .id;
    let found = odp_rules::Detection {
        rule_id: "jvm-hashtable".into(),
        share: 42.0,
        threshold_pct: 10.0,
        samples_matched: 42,
        samples_total: 100,
        stacks: Vec::new(),
        detail: Value::Null,
    };
    let subject = odp_store::AlertSubject {
        service: "outbound",
        host: "web-1",
        except_rules: &[],
    };
    odp_store::save_detections(&h.store().await, profile, Some(subject), &[found])
        .await
        .unwrap();

    let first_attempt = |id: String| {
        let admin = admin.clone();
        async move {
            let path = format!("/api/v1/channels/{id}/deliveries");
            let page = common::wait_for_body(&admin, &path, Duration::from_secs(60), |page| {
                page["deliveries"][0]["attempt_log"][0]["error"].is_string()
            })
            .await;
            page["deliveries"][0].clone()
        }
    };
    for (id, why) in ids.iter().zip([
        "destination resolves to a loopback address",
        "destination is a loopback address",
        "destination is a loopback address",
    ]) {
        let delivery = first_attempt(id.clone()).await;
        let attempt = &delivery["attempt_log"][0];
        assert_eq!(
            (
                &attempt["error"],
                &attempt["status_code"],
                &attempt["success"]
            ),
            (&json!(why), &Value::Null, &json!(false)),
            "{delivery}"
        );
        // Refused for good: not retried.
        assert_eq!(
            (&delivery["status"], &delivery["attempts"]),
            (&json!("failed"), &json!(1)),
            "{delivery}"
        );
    }
    let delivery = first_attempt(ids[3].clone()).await;
    let attempt = &delivery["attempt_log"][0];
    assert_eq!(
        (&attempt["error"], &attempt["status_code"]),
        (
            &json!("delivery failed: remote answered with an error"),
            &Value::Null
        ),
        "{delivery}"
    );
    let log = delivery["attempt_log"].to_string();
    assert!(!log.contains(BANNER) && !log.contains("Internal"), "{log}");
    assert!(!attempt["error"].as_str().unwrap().contains("500"), "{log}");
    assert!(allowed_calls.load(Ordering::SeqCst) >= 1);
    assert_eq!(
        refused_calls.load(Ordering::SeqCst),
        0,
        "a refused destination was connected to"
    );
}
