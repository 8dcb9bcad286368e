//! Commands the agent must refuse: forged, expired, or for another host.
//! Each is reported on `odp.events` and nothing is sampled.

use odp_client::types::ProfileStatus;
use std::time::Duration;

use odp_core::command::{generate_keypair, Command, CommandAction, CommandSigner, StartProfile};
use odp_core::Target;
use serde_json::json;
use uuid::Uuid;

use crate::common;

fn start_command(host: &str, issued_at: i64, ttl: i64) -> (Command, Uuid) {
    let profile_id = Uuid::new_v4();
    let command = Command {
        id: Uuid::new_v4(),
        host: host.to_owned(),
        issued_at,
        expires_at: issued_at + ttl,
        action: CommandAction::Start(StartProfile {
            profile_id,
            target: Target::Pid(std::process::id()),
            duration_ms: 2_000,
            frequency_hz: 99,
            window_ms: None,
            options: Default::default(),
        }),
    };
    (command, profile_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_expired_and_misaddressed_commands_are_rejected() {
    let h = common::start("commands", 1).await;
    let host = h.platform.host_id.clone();
    let now = chrono_now();
    let real_key = std::fs::read_to_string(&h.platform.signing_key).unwrap();
    let real = CommandSigner::from_private_pem(&real_key).unwrap();
    let forger = CommandSigner::from_private_pem(&generate_keypair().unwrap().0).unwrap();

    let (forged, forged_profile) = start_command(&host, now, 60);
    let (expired, expired_profile) = start_command(&host, now - 600, 60);
    let (misaddressed, misaddressed_profile) = start_command("some-other-host", now, 60);
    let producer = common::producer(h.stack.kafka_bootstrap());
    let topic = &h.stack.topics().commands;
    // All keyed by this agent's host so they land in its partition.
    common::send(
        &producer,
        topic,
        &host,
        forger.sign(&forged).unwrap().as_bytes(),
    )
    .await;
    common::send(
        &producer,
        topic,
        &host,
        real.sign(&expired).unwrap().as_bytes(),
    )
    .await;
    common::send(
        &producer,
        topic,
        &host,
        real.sign(&misaddressed).unwrap().as_bytes(),
    )
    .await;
    common::send(&producer, topic, &host, b"not a token at all").await;

    let pool = h.pool().await;
    h.wait_count(
        &pool,
        "select count(*) from profile_events where kind = 'command_rejected' and host = $1",
        &host,
        4,
        Duration::from_secs(60),
    )
    .await;
    let reasons: Vec<(serde_json::Value,)> = sqlx::query_as(
        "select body from profile_events where kind = 'command_rejected' order by id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let text = format!("{reasons:?}");
    assert!(text.contains("expired"), "{text}");
    assert!(text.contains("some-other-host"), "{text}");
    assert!(
        text.contains(&forged.id.to_string()),
        "rejections name the command: {text}"
    );

    // A valid profile after them runs and is stored, so the pipeline has
    // caught up past the rejected commands: none of them sampled anything.
    let client = h.platform.client();
    let id = client
        .start_profile(&json!({"host": host, "pid": std::process::id(), "duration_secs": 1}))
        .await
        .unwrap()
        .id;
    let profile = client
        .wait_finished(id, Duration::from_secs(60), |_| {})
        .await
        .unwrap();
    assert_eq!(
        profile.status,
        ProfileStatus::Finished,
        "{profile:?}\n{}",
        h.platform.logs()
    );
    for rejected in [forged_profile, expired_profile, misaddressed_profile] {
        let (events, snapshots): (i64, i64) = sqlx::query_as(
            "select (select count(*) from profile_events where profile_id = $1 and kind <> 'command_rejected'),
                    (select count(*) from snapshots where profile_id = $1)",
        )
        .bind(rejected)
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(
            (events, snapshots),
            (0, 0),
            "rejected profile {rejected} must not run"
        );
    }
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}
