//! Alert channel management through the API and odpctl: admins only,
//! every field validated, the webhook secret never shown; and the delivery
//! log of alerts the running pipeline sends, with each attempt's outcome.

use std::time::Duration;

use odp_devstack::{mint_scoped_token, ApiClient, DatabaseKind, PlatformOptions, Reply};
use odp_store::Database;
use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::common;
use crate::db::{count, Param};

pub(crate) const SECRET: &str = "first-secret-0123456789";
const ROTATED: &str = "second-secret-9876543210";

async fn call(client: &ApiClient, method: Method, path: &str, body: Option<&Value>) -> Reply {
    client.request(method, path, body).await.unwrap()
}

async fn post(client: &ApiClient, body: &Value) -> Reply {
    call(client, Method::POST, "/api/v1/channels", Some(body)).await
}

/// The next webhook call's JSON body, once its signature is checked to be
/// made with `secret`.
pub(crate) async fn next_call(
    received: &mut mpsc::UnboundedReceiver<(String, Vec<u8>)>,
    secret: &str,
) -> Value {
    let (signed, body) = tokio::time::timeout(Duration::from_secs(60), received.recv())
        .await
        .expect("the webhook is called")
        .unwrap();
    assert_eq!(signed, signature(secret, &body));
    serde_json::from_slice(&body).unwrap()
}

/// The receivers and relays here listen on loopback, which alert channels
/// may not point at by default: allow-listed in the api-server and the
/// pipeline, as an operator allows an in-cluster relay.
pub(crate) fn loopback_allowed(options: &mut PlatformOptions) {
    options.with_agent = false;
    let allow = (
        "ODP_ALERT_ALLOWED_DESTINATIONS".to_owned(),
        "127.0.0.1,::1".to_owned(),
    );
    options.api_env.push(allow.clone());
    options.pipeline_env.push(allow);
}

fn webhook(name: &str, url: &str) -> Value {
    json!({"kind": "webhook", "name": name, "url": url, "secret": SECRET})
}

fn email(name: &str) -> Value {
    // Nothing listens on port 1: every attempt fails and is logged.
    json!({"kind": "email", "name": name, "smtp_url": "smtp://127.0.0.1:1",
           "from": "odp@example.com", "to": ["oncall@example.com", "team+odp@example.com"]})
}

/// A webhook receiver answering 204 to every POST; yields each request's
/// `X-ODP-Signature` header and body.
pub(crate) async fn receiver() -> (String, mpsc::UnboundedReceiver<(String, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (sent, received) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut buffer = [0u8; 8192];
            let (head, body) = loop {
                let n = socket.read(&mut buffer).await.unwrap_or(0);
                if n == 0 {
                    break (String::new(), Vec::new());
                }
                request.extend_from_slice(&buffer[..n]);
                let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&request[..end]).to_lowercase();
                let length: usize = header(&head, "content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                if request.len() >= end + 4 + length {
                    break (head, request[end + 4..end + 4 + length].to_vec());
                }
            };
            let _ = socket
                .write_all(
                    b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            let signature = header(&head, "x-odp-signature").unwrap_or_default();
            let _ = sent.send((signature.to_owned(), body));
        }
    });
    (url, received)
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// `sha256=<hex HMAC-SHA256>`, as the pipeline signs webhooks.
fn signature(secret: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let tag = ring::hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// Queues alerts the way the pipeline's detection does: a rule flagging
/// the profile for the first time enqueues one per matching channel.
async fn detect(db: &Database, profile: uuid::Uuid, service: &str, rule: &str) {
    let subject = odp_store::AlertSubject {
        service,
        host: "web-1",
        except_rules: &[],
    };
    let found = odp_rules::Detection {
        rule_id: rule.to_owned(),
        share: 42.0,
        threshold_pct: 10.0,
        samples_matched: 42,
        samples_total: 100,
        stacks: Vec::new(),
        detail: Value::Null,
    };
    odp_store::save_detections(db, profile, Some(subject), &[found])
        .await
        .unwrap();
}

async fn import(client: &ApiClient, service: &str) -> uuid::Uuid {
    let folded = b"main;work;hot 30\nmain;work 70\n".to_vec();
    let profile = client
        .import_profile(&format!("service={service}&format=folded"), folded)
        .await
        .unwrap();
    profile.id
}

/// Polls the channel's deliveries until `done` holds for the page.
async fn deliveries_until(
    client: &ApiClient,
    channel: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    for _ in 0..300 {
        let path = format!("/api/v1/channels/{channel}/deliveries");
        let page = call(client, Method::GET, &path, None).await;
        assert_eq!(page.status, 200, "{}", page.text);
        let deliveries = page.body["deliveries"].as_array().unwrap().clone();
        if done(&deliveries) {
            return deliveries;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the deliveries of {channel} never got there");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_manage_channels_and_bad_input_is_refused() {
    let h = common::start_configured("channels", loopback_allowed).await;
    let admin = h.platform.client();
    let token = |role: &str| {
        h.platform.client_for(
            &mint_scoped_token(&h.platform.jwt_secret, "someone", role, &["*"]).unwrap(),
        )
    };
    let (anonymous, viewer, profiler) = (
        h.platform.client_for(""),
        token("viewer"),
        token("profiler"),
    );
    let hook = webhook("ops-hook", "https://hooks.example.com/odp");

    // Reads and writes are the admin's.
    let unknown = format!("/api/v1/channels/{}", uuid::Uuid::new_v4());
    for (who, want) in [(&anonymous, 401), (&viewer, 403), (&profiler, 403)] {
        for (method, path, body) in [
            (Method::POST, "/api/v1/channels".to_owned(), Some(&hook)),
            (Method::GET, "/api/v1/channels".to_owned(), None),
            (Method::GET, unknown.clone(), None),
            (
                Method::PATCH,
                unknown.clone(),
                Some(&json!({"enabled": false})),
            ),
            (Method::DELETE, unknown.clone(), None),
            (Method::GET, format!("{unknown}/deliveries"), None),
        ] {
            let reply = call(who, method.clone(), &path, body).await;
            assert_eq!(reply.status, want, "{method} {path}: {}", reply.text);
        }
    }

    let created = post(&admin, &hook).await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(
        (&created.body["kind"], &created.body["service_pattern"]),
        (&json!("webhook"), &json!("*"))
    );
    assert_eq!(created.body["enabled"], true);
    assert!(!created.text.contains(SECRET), "{}", created.text);
    assert!(created.body.get("secret").is_none(), "{}", created.text);
    let hook_id = created.body["id"].as_str().unwrap().to_owned();
    let again = post(&admin, &hook).await;
    assert_eq!(again.status, 409, "{}", again.text);
    // A name is taken across kinds.
    let clash = post(&admin, &email("ops-hook")).await;
    assert_eq!(clash.status, 409, "{}", clash.text);

    let mut mail = email("ops-mail");
    mail["service_pattern"] = json!("checkout-*");
    mail["enabled"] = json!(false);
    let created = post(&admin, &mail).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let mail_id = created.body["id"].as_str().unwrap().to_owned();
    assert_eq!(created.body["smtp_url"], "smtp://127.0.0.1:1");
    assert_eq!(created.body["url"], Value::Null);
    assert_eq!(created.body["to"], mail["to"]);
    assert_eq!(
        (&created.body["enabled"], &created.body["service_pattern"]),
        (&json!(false), &json!("checkout-*"))
    );

    // Bad input: 4xx with a message, nothing stored.
    let with = |base: &Value, key: &str, value: Value| {
        let mut body = base.clone();
        body["name"] = json!("bad-channel");
        body[key] = value;
        body
    };
    let without = |base: &Value, key: &str| {
        let mut body = with(base, "enabled", json!(true));
        body.as_object_mut().unwrap().remove(key);
        body
    };
    let base_mail = email("x");
    let bad = [
        with(&hook, "url", json!("ftp://hooks.example.com")),
        with(&hook, "url", json!("https://")),
        with(&hook, "url", json!("https://user:pw@hooks.example.com/")),
        with(&hook, "url", json!("not a url")),
        with(&hook, "secret", json!("too-short")),
        with(&hook, "secret", json!("sixteen chars\u{0}\u{0}\u{0}")),
        with(&hook, "service_pattern", json!("check out")),
        with(&hook, "service_pattern", json!("")),
        with(&hook, "name", json!("has space")),
        with(&hook, "kind", json!("pager")),
        with(&hook, "enabled", json!("yes")),
        with(&hook, "to", json!(["a@example.com"])),
        with(&hook, "colour", json!("red")),
        without(&hook, "secret"),
        without(&hook, "url"),
        without(&hook, "kind"),
        with(&base_mail, "to", json!([])),
        with(&base_mail, "to", json!(["not-an-address"])),
        with(&base_mail, "to", json!(["Ops <ops@example.com>"])),
        with(&base_mail, "to", json!(vec!["a@example.com"; 51])),
        with(&base_mail, "from", json!("odp@")),
        with(&base_mail, "smtp_url", json!("https://mail.example.com")),
        with(
            &base_mail,
            "smtp_url",
            json!("smtp://mail.example.com:99999"),
        ),
        with(&base_mail, "secret", json!(SECRET)),
        without(&base_mail, "to"),
    ];
    for body in bad {
        let reply = post(&admin, &body).await;
        assert!(
            matches!(reply.status, 400 | 422),
            "{body}: {} {}",
            reply.status,
            reply.text
        );
        assert!(reply.body["error"]["message"].is_string(), "{}", reply.text);
    }
    let listed = call(&admin, Method::GET, "/api/v1/channels", None).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let names: Vec<&str> = listed.body["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ops-hook", "ops-mail"]);
    assert!(!listed.text.contains(SECRET), "{}", listed.text);

    // Changes: each field must suit the kind.
    let hook_path = format!("/api/v1/channels/{hook_id}");
    let mail_path = format!("/api/v1/channels/{mail_id}");
    let patch = json!({"enabled": false, "service_pattern": "search", "secret": ROTATED,
                       "url": "http://[::1]:9000/new"});
    let changed = call(&admin, Method::PATCH, &hook_path, Some(&patch)).await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    assert_eq!(
        (&changed.body["enabled"], &changed.body["service_pattern"]),
        (&json!(false), &json!("search"))
    );
    assert_eq!(changed.body["url"], "http://[::1]:9000/new");
    assert!(!changed.text.contains(ROTATED), "{}", changed.text);
    let changed = call(
        &admin,
        Method::PATCH,
        &mail_path,
        Some(&json!({"to": ["solo@example.com"], "enabled": true})),
    )
    .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    assert_eq!(
        (&changed.body["to"], &changed.body["enabled"]),
        (&json!(["solo@example.com"]), &json!(true))
    );
    for (path, patch) in [
        (&hook_path, json!({"smtp_url": "smtp://mail.example.com"})),
        (&hook_path, json!({"to": ["a@example.com"]})),
        (&hook_path, json!({"secret": "short"})),
        (&hook_path, json!({"url": "ftp://x"})),
        (&hook_path, json!({"name": "renamed"})),
        (&mail_path, json!({"secret": ROTATED})),
        (&mail_path, json!({"to": []})),
        (&mail_path, json!({"from": "nobody"})),
        (&mail_path, json!({"service_pattern": "a/b"})),
    ] {
        let reply = call(&admin, Method::PATCH, path, Some(&patch)).await;
        assert!(matches!(reply.status, 400 | 422), "{patch}: {}", reply.text);
    }
    let shown = call(&admin, Method::GET, &hook_path, None).await;
    assert_eq!(shown.body["url"], "http://[::1]:9000/new", "{}", shown.text);
    for (method, body) in [
        (Method::GET, None),
        (Method::PATCH, Some(json!({"enabled": true}))),
        (Method::DELETE, None),
    ] {
        let reply = call(&admin, method.clone(), &unknown, body.as_ref()).await;
        assert_eq!(reply.status, 404, "{method} {}", reply.text);
    }
    let reply = call(&admin, Method::GET, "/api/v1/channels/not-a-uuid", None).await;
    assert_eq!(reply.status, 400, "{}", reply.text);

    // odpctl: create, list, disable, delete; bad input exits 2.
    let odpctl =
        |args: &[&str]| tokio::task::block_in_place(|| common::odpctl(&h, &h.platform.token, args));
    let output = odpctl(&[
        "channels",
        "create-email",
        "--name",
        "cli-mail",
        "--smtp-url",
        "smtp://mail.local:2525",
        "--from",
        "odp@example.com",
        "--to",
        "a@example.com,b@example.com",
    ]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let cli_id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let output = odpctl(&["channels", "disable", &cli_id]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let output = odpctl(&["channels", "list"]);
    let listed = String::from_utf8_lossy(&output.stdout);
    assert!(
        listed.lines().any(|l| l.starts_with(&cli_id)
            && l.contains(" no ")
            && l.contains("a@example.com,b@example.com via smtp://mail.local:2525")),
        "{listed}"
    );
    let output = odpctl(&[
        "channels",
        "create-webhook",
        "--name",
        "cli-hook",
        "--url",
        "https://x.example.com",
        "--secret",
        "short",
    ]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let output = odpctl(&["channels", "delete", &cli_id]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let output = odpctl(&["channels", "show", &cli_id]);
    assert_eq!(output.status.code(), Some(4), "{output:?}");
    let output = tokio::task::block_in_place(|| {
        let viewer_token = mint_scoped_token(&h.platform.jwt_secret, "v", "viewer", &[]).unwrap();
        common::odpctl(&h, &viewer_token, &["channels", "list"])
    });
    assert_eq!(output.status.code(), Some(3), "{output:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_delivery_log_shows_what_the_pipeline_sent() {
    delivery_log_on(DatabaseKind::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_delivery_log_on_mysql_shows_what_the_pipeline_sent() {
    delivery_log_on(DatabaseKind::Mysql).await;
}

async fn delivery_log_on(database: DatabaseKind) {
    let h = common::start_configured_on(database, "channel-deliveries", loopback_allowed).await;
    let admin = h.platform.client();
    let pool = h.store().await;
    let (url, mut received) = receiver().await;
    let mut hook = webhook("receiver", &url);
    hook["service_pattern"] = json!("check*");
    let created = post(&admin, &hook).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let hook_id = created.body["id"].as_str().unwrap().to_owned();
    let created = post(&admin, &email("mail")).await;
    let mail_id = created.body["id"].as_str().unwrap().to_owned();

    // A search alert matches the email channel's `*` only; a checkout
    // alert matches both.
    let search = import(&admin, "search").await;
    detect(&pool, search, "search", "jvm-hashtable").await;
    let first = import(&admin, "checkout").await;
    detect(&pool, first, "checkout", "jvm-hashtable").await;
    let payload = next_call(&mut received, SECRET).await;
    assert_eq!(payload["profile_id"], json!(first));

    let delivered = deliveries_until(&admin, &hook_id, |d| {
        d.first().is_some_and(|d| d["status"] == "delivered")
    })
    .await;
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    let d = &delivered[0];
    assert_eq!(
        (
            &d["profile_id"],
            &d["rule_id"],
            &d["service"],
            &d["attempts"]
        ),
        (
            &json!(first),
            &json!("jvm-hashtable"),
            &json!("checkout"),
            &json!(1)
        )
    );
    assert!(
        d["rule_title"].as_str().is_some_and(|t| !t.is_empty()),
        "{d}"
    );
    assert_eq!(d["next_attempt_at"], Value::Null);
    let attempt = &d["attempt_log"][0];
    assert_eq!(
        (
            &attempt["status_code"],
            &attempt["success"],
            &attempt["error"]
        ),
        (&json!(204), &json!(true), &Value::Null)
    );

    // The email relay refuses connections: attempts logged with the error.
    let failing = deliveries_until(&admin, &mail_id, |d| {
        d.len() == 2 && d.iter().all(|d| d["attempt_log"][0]["error"].is_string())
    })
    .await;
    assert!(
        failing
            .iter()
            .all(|d| d["attempt_log"][0]["success"] == false
                && d["attempt_log"][0]["status_code"].is_null()),
        "{failing:?}"
    );
    // Newest first, one per page, and the pages chain.
    let page = |query: &str| {
        let path = format!("/api/v1/channels/{mail_id}/deliveries?{query}");
        let admin = admin.clone();
        async move { call(&admin, Method::GET, &path, None).await }
    };
    let one = page("limit=1").await;
    assert_eq!(
        one.body["deliveries"][0]["profile_id"],
        json!(first),
        "{}",
        one.text
    );
    let next = one.body["next_before"].as_str().unwrap().to_owned();
    let two = page(&format!("limit=1&before={next}")).await;
    assert_eq!(
        two.body["deliveries"][0]["profile_id"],
        json!(search),
        "{}",
        two.text
    );
    let three = page(&format!(
        "limit=1&before={}",
        two.body["next_before"].as_str().unwrap()
    ))
    .await;
    assert_eq!(three.body["deliveries"], json!([]), "{}", three.text);
    assert_eq!(three.body["next_before"], Value::Null);
    assert_eq!(page("status=delivered").await.body["deliveries"], json!([]));
    assert_eq!(
        page("status=pending").await.body["deliveries"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    for (query, want) in [
        ("status=lost", 400),
        ("limit=0", 422),
        ("limit=501", 422),
        ("before=nope", 400),
        (
            &format!("before={}", delivered[0]["id"].as_str().unwrap()),
            422,
        ),
        ("colour=red", 400),
    ] {
        let reply = page(query).await;
        assert_eq!(reply.status, want, "{query}: {}", reply.text);
    }

    // Disabled: nothing is queued for it. Rotated: signed with the new key.
    let hook_path = format!("/api/v1/channels/{hook_id}");
    let off = json!({"enabled": false});
    assert_eq!(
        call(&admin, Method::PATCH, &hook_path, Some(&off))
            .await
            .status,
        200
    );
    let second = import(&admin, "checkout").await;
    detect(&pool, second, "checkout", "jvm-hashtable").await;
    let on = json!({"enabled": true, "secret": ROTATED});
    assert_eq!(
        call(&admin, Method::PATCH, &hook_path, Some(&on))
            .await
            .status,
        200
    );
    detect(&pool, second, "checkout", "jvm-stringbuffer").await;
    let payload = next_call(&mut received, ROTATED).await;
    assert_eq!(payload["rule"]["id"], "jvm-stringbuffer");
    let log = deliveries_until(&admin, &hook_id, |d| {
        d.len() == 2 && d.iter().all(|d| d["status"] == "delivered")
    })
    .await;
    assert_eq!(log[0]["rule_id"], "jvm-stringbuffer", "{log:?}");

    // Deleting a channel takes its pending deliveries and attempts along.
    let mail_path = format!("/api/v1/channels/{mail_id}");
    let reply = call(&admin, Method::DELETE, &mail_path, None).await;
    assert_eq!(reply.status, 204, "{}", reply.text);
    let mail_uuid: uuid::Uuid = mail_id.parse().unwrap();
    let left = count(
        &pool,
        "select count(*) from alert_deliveries where channel_id = ?",
        &[Param::Uuid(mail_uuid)],
    )
    .await;
    assert_eq!(left, 0);
    for method in [Method::GET, Method::DELETE] {
        let reply = call(&admin, method, &mail_path, None).await;
        assert_eq!(reply.status, 404, "{}", reply.text);
    }
    let reply = call(
        &admin,
        Method::GET,
        &format!("{mail_path}/deliveries"),
        None,
    )
    .await;
    assert_eq!(reply.status, 404, "{}", reply.text);

    // odpctl's table of the log.
    let output = tokio::task::block_in_place(|| {
        common::odpctl(&h, &h.platform.token, &["channels", "deliveries", &hook_id])
    });
    let table = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(
        table
            .lines()
            .filter(|l| l.contains("delivered") && l.contains("204"))
            .count()
            == 2,
        "{table}"
    );
}
