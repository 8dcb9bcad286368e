//! Attacks on the running stack: see issue 27. Replays: a real signed
//! command captured from `odp.commands` and produced again after the agent
//! restarted (over the same state directory) does not run again, and a
//! command signed to stay valid for ten years is refused and dead-lettered.

use std::time::Duration;

use base64::Engine as _;
use odp_client::types::ProfileStatus;
use odp_core::command::{Command, CommandAction, CommandSigner, StartProfile};
use odp_core::Target;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::{Headers, Message};
use serde_json::json;
use uuid::Uuid;

use crate::common::{self, Harness};

fn now_s() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A consumer of `topic` from its start, in a group of its own.
fn reader(h: &Harness, topic: &str) -> StreamConsumer {
    let consumer: StreamConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", h.stack.kafka_bootstrap())
        .set("group.id", format!("test-{}", Uuid::new_v4()))
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    consumer.subscribe(&[topic]).unwrap();
    consumer
}

/// A token's claims, read without checking its signature.
fn claims(token: &[u8]) -> Option<serde_json::Value> {
    let token = std::str::from_utf8(token).ok()?;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The first message of `consumer` that `wanted` picks, as (key, payload).
async fn find(
    h: &Harness,
    consumer: &StreamConsumer,
    what: &str,
    wanted: impl Fn(&[u8]) -> bool,
) -> (Vec<u8>, Vec<u8>, Option<String>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let message = tokio::time::timeout_at(deadline, consumer.recv())
            .await
            .unwrap_or_else(|_| panic!("no {what} found\n{}", h.platform.logs()))
            .unwrap();
        let payload = message.payload().unwrap_or_default();
        if wanted(payload) {
            let reason = message.headers().and_then(|headers| {
                headers
                    .iter()
                    .find(|h| h.key == "odp-reason")
                    .and_then(|h| h.value)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            });
            return (
                message.key().unwrap_or_default().to_vec(),
                payload.to_vec(),
                reason,
            );
        }
    }
}

/// The reasons of the `command_rejected` events naming `command_id`.
async fn rejections(pool: &sqlx::PgPool, command_id: Uuid) -> Vec<String> {
    let rows: Vec<(serde_json::Value,)> = sqlx::query_as(
        "select body from profile_events where kind = 'command_rejected'
         and body->>'command_id' = $1 order by id",
    )
    .bind(command_id.to_string())
    .fetch_all(pool)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(body,)| body["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn starts(pool: &sqlx::PgPool, profile_id: Uuid) -> i64 {
    let (n,): (i64,) = sqlx::query_as(
        "select count(*) from profile_events where profile_id = $1 and kind = 'profile_started'",
    )
    .bind(profile_id)
    .fetch_one(pool)
    .await
    .unwrap();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_replayed_after_the_agent_restarts_does_not_run_again() {
    let mut h = common::start_configured("replay", |options| {
        options.window_secs = 1;
        // Commands stay valid for ten minutes, so the replay below comes
        // well within the captured command's expiry.
        options.start_ack_timeout_secs = Some(600);
        let state = options.dir.join("replay-agent-state");
        options
            .agent_env
            .push(("ODP_STATE_DIR".into(), state.display().to_string()));
    })
    .await;
    let host = h.platform.host_id.clone();
    let pool = h.pool().await;

    // A real start, signed by the api-server, run by the agent.
    let client = h.platform.client();
    let profile_id = client
        .start_profile(&json!({"host": host, "pid": std::process::id(), "duration_secs": 1}))
        .await
        .unwrap()
        .id;
    let profile = client
        .wait_finished(profile_id, Duration::from_secs(60), |_| {})
        .await
        .unwrap();
    assert_eq!(
        profile.status,
        ProfileStatus::Finished,
        "{profile:?}\n{}",
        h.platform.logs()
    );
    assert_eq!(starts(&pool, profile_id).await, 1);

    // The command as it travelled, captured from the topic.
    let topics = h.stack.topics().clone();
    let commands = reader(&h, &topics.commands);
    let wanted = profile_id.to_string();
    let (key, token, _) = find(&h, &commands, "start command", |payload| {
        claims(payload).is_some_and(|c| c["cmd"]["profile_id"] == wanted.as_str())
    })
    .await;
    let command_id: Uuid = claims(&token).unwrap()["jti"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(key, host.as_bytes());

    // The agent restarts over the same state directory; the same bytes
    // are produced again, still within the command's expiry.
    let agent = h.platform.agent.as_mut().expect("the platform's agent");
    let status = agent.stop().unwrap();
    assert!(status.success(), "agent exit status {status}");
    agent.respawn().unwrap();
    let producer = common::producer(h.stack.kafka_bootstrap());
    common::send(&producer, &topics.commands, &host, &token).await;

    // The new agent reports it as a replay, or (before the fix) runs it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let reasons = loop {
        let reasons = rejections(&pool, command_id).await;
        if !reasons.is_empty() || starts(&pool, profile_id).await > 1 {
            break reasons;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the replayed command was neither refused nor run\n{}",
            h.platform.logs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(
        starts(&pool, profile_id).await,
        1,
        "the replayed start ran again\n{}",
        h.platform.logs()
    );
    assert!(
        reasons.iter().any(|r| r.contains("replay")),
        "{reasons:?}\n{}",
        h.platform.logs()
    );
    let log = h.platform.agent.as_ref().unwrap().log();
    assert!(
        log.contains("refused as replays"),
        "the restarted agent loaded the kept ids:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_valid_for_ten_years_is_refused_and_dead_lettered() {
    let h = common::start("replay-expiry", 1).await;
    let host = h.platform.host_id.clone();
    let key = std::fs::read_to_string(&h.platform.signing_key).unwrap();
    let signer = CommandSigner::from_private_pem(&key).unwrap();
    let now = now_s();
    let profile_id = Uuid::new_v4();
    let command = Command {
        id: Uuid::new_v4(),
        host: host.clone(),
        issued_at: now,
        expires_at: now + 10 * 365 * 24 * 3600,
        action: CommandAction::Start(StartProfile {
            profile_id,
            target: Target::Pid(std::process::id()),
            duration_ms: 1_000,
            frequency_hz: 99,
            window_ms: None,
            options: Default::default(),
        }),
    };
    let token = signer.sign(&command).unwrap();
    let topics = h.stack.topics().clone();
    let producer = common::producer(h.stack.kafka_bootstrap());
    common::send(&producer, &topics.commands, &host, token.as_bytes()).await;

    let pool = h.pool().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let reasons = loop {
        let reasons = rejections(&pool, command.id).await;
        if !reasons.is_empty() || starts(&pool, profile_id).await > 0 {
            break reasons;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the ten-year command was neither refused nor run\n{}",
            h.platform.logs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(
        starts(&pool, profile_id).await,
        0,
        "the ten-year command ran\n{}",
        h.platform.logs()
    );
    assert!(
        reasons.iter().any(|r| r.contains("more than the 3600 s")),
        "{reasons:?}"
    );

    // Dead-lettered as it came, with the reason.
    let dead = reader(&h, &topics.dead_letter);
    let (key, payload, reason) = find(&h, &dead, "dead letter", |p| p == token.as_bytes()).await;
    assert_eq!(key, host.as_bytes());
    assert_eq!(payload, token.as_bytes());
    let reason = reason.expect("a reason header");
    assert!(reason.contains("more than the 3600 s"), "{reason}");
}
