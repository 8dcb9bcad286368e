//! Email alerts end to end against a real Postgres and a real SMTP server
//! on a loopback port: a new detection mails each matching email channel
//! once, a relay refusing the first tries is retried with backoff until it
//! takes the message, a relay that is down is given up after the attempt
//! limit, every attempt is logged with its SMTP reply, and nothing is sent
//! again on re-evaluation or redelivery.

mod support;

use std::time::Duration;

use odp_devstack::{Stack, StackOptions};
use odp_pipeline::alerts::{self, Sender};
use odp_pipeline::detect::Detector;
use odp_pipeline::AlertOptions;
use odp_store::{ChannelKind, NewChannel, StoreError};
use support::smtp_sink::SmtpSink;
use uuid::Uuid;

fn email_channel(name: &str, smtp_url: &str, pattern: &str) -> NewChannel {
    NewChannel {
        name: name.into(),
        kind: ChannelKind::Email,
        url: smtp_url.into(),
        secret: None,
        email_from: Some("ODP alerts <odp@example.com>".into()),
        email_to: vec!["oncall@example.com".into(), "perf@example.com".into()],
        service_pattern: pattern.into(),
        enabled: true,
    }
}

/// An SMTP URL nothing listens on.
async fn dead_smtp_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("smtp://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

/// A message as a reader sees it: long header lines unfolded, a
/// quoted-printable body decoded, plain line ends.
fn readable(data: &str) -> String {
    let (headers, body) = data.split_once("\r\n\r\n").expect("headers end");
    let headers = headers.replace("\r\n ", " ");
    let body = if headers.contains("Content-Transfer-Encoding: quoted-printable") {
        let joined = body.replace("=\r\n", "");
        let bytes = joined.as_bytes();
        let mut decoded = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'=' && i + 2 < bytes.len() {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                decoded.push(u8::from_str_radix(hex, 16).expect("=XX escape"));
                i += 3;
            } else {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8(decoded).unwrap()
    } else {
        body.to_owned()
    };
    format!("{headers}\n\n{body}").replace("\r\n", "\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_detections_are_mailed_once_and_retried_through_a_refusing_relay() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = odp_store::Database::from(&pool);
    let detector = Detector::start(&db).await.unwrap();
    let sink = SmtpSink::start(2).await;

    let mail = odp_store::create_channel(&pool, &email_channel("mail", &sink.url(), "*"))
        .await
        .unwrap();
    let dead = odp_store::create_channel(
        &pool,
        &email_channel("dead", &dead_smtp_url().await, "pay*"),
    )
    .await
    .unwrap();
    odp_store::create_channel(&pool, &email_channel("other", &sink.url(), "search"))
        .await
        .unwrap();
    let taken = odp_store::create_channel(&pool, &email_channel("mail", &sink.url(), "*")).await;
    assert!(
        matches!(taken, Err(StoreError::Conflict(_))),
        "a taken name conflicts: {taken:?}"
    );
    let no_recipients = NewChannel {
        email_to: vec![],
        ..email_channel("nobody", &sink.url(), "*")
    };
    assert!(
        odp_store::create_channel(&pool, &no_recipients)
            .await
            .is_err(),
        "the schema refuses an email channel without recipients"
    );
    let channels = odp_store::list_channels(&pool).await.unwrap();
    let listed = channels.iter().find(|c| c.id == mail.id).unwrap();
    assert_eq!(listed.kind, ChannelKind::Email);
    assert_eq!(listed.email_to, ["oncall@example.com", "perf@example.com"]);

    let id = Uuid::new_v4();
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by,
                               service)
         values ($1, 'h-7', '{\"by\": \"pid\", \"value\": 7}', 60000, 99, 'running', 'test',
                 'payments')",
    )
    .bind(id)
    .execute(&pool)
    .await
    .unwrap();
    let s = support::string_buffer_window(id, 25);
    odp_store::store_snapshots(&pool, &[&s]).await.unwrap();
    assert_eq!(detector.evaluate_profile(&db, id).await.unwrap(), 1);
    assert_eq!(
        support::count(&pool, "select count(*) from alert_deliveries").await,
        2,
        "one delivery per matching channel"
    );

    let options = AlertOptions {
        poll_ms: 20,
        backoff_base_ms: 20,
        max_attempts: 3,
        profile_base_url: Some("https://odp.example.com/".into()),
        // The sink listens on loopback.
        destinations: odp_plumbing::egress::AlertDestinations {
            allowed: vec!["127.0.0.1".parse().unwrap()],
        },
        ..AlertOptions::default()
    };
    let sender = Sender::new(db.clone(), options).unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(alerts::run(sender.clone(), stopped.clone()));
    support::deliveries_settled(&pool).await;

    let statuses = support::delivery_statuses(&pool).await;
    assert_eq!(
        statuses,
        [
            (mail.id, "delivered".to_owned(), 3),
            (dead.id, "failed".to_owned(), 3)
        ]
    );
    let attempts = support::attempts_to(&pool, mail.id).await;
    assert_eq!(
        attempts,
        [
            // The relay's refusals are not recorded as it said them.
            (1, None, false),
            (2, None, false),
            (3, Some(250), true)
        ]
    );
    let dead_errors = support::failures_with_reasons(&pool).await;
    assert_eq!(dead_errors, 3, "connection failures are logged with why");

    // Re-evaluation and redelivery of the snapshot mail nothing more.
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

    assert_eq!(sink.transactions(), 3, "two refused, one accepted");
    let accepted = sink.accepted();
    assert_eq!(accepted.len(), 1, "exactly one email arrived");
    let received = &accepted[0];
    assert_eq!(received.from, "odp@example.com");
    assert_eq!(received.to, ["oncall@example.com", "perf@example.com"]);
    let (explanation, fix): (String, String) =
        sqlx::query_as("select explanation, fix from rules where id = 'jvm-stringbuffer'")
            .fetch_one(&pool)
            .await
            .unwrap();
    let delivery_id: Uuid =
        sqlx::query_scalar("select id from alert_deliveries where channel_id = $1")
            .bind(mail.id)
            .fetch_one(&pool)
            .await
            .unwrap();
    let data = readable(&received.data);
    for expected in [
        "Subject: [ODP] java.lang.StringBuffer in payments on h-7: 25.0% of samples".to_owned(),
        format!("Message-ID: <{delivery_id}@odp.alerts>"),
        "Service:   payments".to_owned(),
        "Host:      h-7".to_owned(),
        "Rule:      java.lang.StringBuffer (jvm-stringbuffer)".to_owned(),
        "Share:     25.0% of samples (threshold 1.0%)".to_owned(),
        format!("View:      https://odp.example.com/#/profiles/{id}"),
        explanation,
        fix,
        "250 samples: main;work;java.lang.StringBuffer.append".to_owned(),
    ] {
        assert!(
            data.contains(&expected),
            "{expected:?} missing from\n{data}"
        );
    }

    pool.close().await;
    stack.stop().unwrap();
}
