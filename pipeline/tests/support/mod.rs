//! What the pipeline's integration tests share: crafted windows, counts,
//! reading how alert deliveries went, and agents the pipeline believes
//! (`signing`) sending to a worker (`harness`).
// Each test binary uses only some of it.
#![allow(dead_code)]

pub(crate) mod fleet;
pub(crate) mod harness;
pub(crate) mod signing;
pub(crate) mod smtp_sink;

use std::time::Duration;

use odp_core::{EventKind, Snapshot};
pub(crate) use odp_devstack::fixtures::{count, snapshot};
use sqlx::PgPool;
use uuid::Uuid;

/// A window with `string_buffer_pct`% of 1000 samples in
/// `java.lang.StringBuffer.append`, which a seed rule flags.
pub(crate) fn string_buffer_window(profile_id: Uuid, string_buffer_pct: u64) -> Snapshot {
    snapshot(
        profile_id,
        0,
        &[
            (
                &["main", "work", "java.lang.StringBuffer.append"],
                string_buffer_pct * 10,
            ),
            (&["main", "work"], 1000 - string_buffer_pct * 10),
        ],
    )
}

/// Waits until no alert delivery is pending (a hung test fails after 30 s).
pub(crate) async fn deliveries_settled(pool: &PgPool) {
    let pending = "select count(*) from alert_deliveries where status = 'pending'";
    for _ in 0..600 {
        if count(pool, pending).await == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("deliveries never settled");
}

/// Each delivery's channel, status and attempts, by status.
pub(crate) async fn delivery_statuses(pool: &PgPool) -> Vec<(Uuid, String, i32)> {
    sqlx::query_as("select channel_id, status, attempts from alert_deliveries order by status")
        .fetch_all(pool)
        .await
        .unwrap()
}

/// The attempts of the delivery to `channel_id`: number, status code (HTTP
/// or SMTP), success.
pub(crate) async fn attempts_to(pool: &PgPool, channel_id: Uuid) -> Vec<(i32, Option<i32>, bool)> {
    sqlx::query_as(
        "select a.attempt, a.status_code, a.success
         from alert_attempts a join alert_deliveries d on d.id = a.delivery_id
         where d.channel_id = $1 order by a.attempt",
    )
    .bind(channel_id)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// Failed attempts of failed deliveries that logged why (no status code).
pub(crate) async fn failures_with_reasons(pool: &PgPool) -> i64 {
    count(
        pool,
        "select count(*) from alert_attempts a join alert_deliveries d on d.id = a.delivery_id
         where d.status = 'failed' and a.status_code is null and coalesce(a.error, '') <> ''
           and not a.success",
    )
    .await
}

/// A webhook channel for every service whose deliveries go nowhere: new
/// detections then queue an alert each.
pub(crate) async fn add_catch_all_channel(pool: &PgPool) {
    sqlx::query(
        "insert into alert_channels (id, name, url, secret)
         values (gen_random_uuid(), 'all', 'http://127.0.0.1:9/', 's')",
    )
    .execute(pool)
    .await
    .unwrap();
}

/// The `profile_started` event an agent on `h-1` sends for a profile whose
/// runtime reports these flags and libraries, as (kind, name, version).
pub(crate) fn profile_started(
    profile_id: Uuid,
    language: odp_core::Language,
    runtime_version: &str,
    flags: &[&str],
    libraries: &[(odp_core::runtime::LibraryKind, &str, &str)],
) -> odp_core::event::AgentEvent {
    use odp_core::runtime::{Library, RuntimeInfo};
    odp_core::event::AgentEvent {
        host: "h-1".into(),
        agent_id: "agent".into(),
        at_ms: 1_700_000_000_000,
        kind: odp_core::event::AgentEventKind::ProfileStarted {
            profile_id,
            event: EventKind::CpuClock,
            frequency_hz: 99,
            pids: vec![7],
            language: Some(language),
            runtime_version: Some(runtime_version.into()),
            runtime: RuntimeInfo {
                flags: flags.iter().map(|f| f.to_string()).collect(),
                libraries: libraries
                    .iter()
                    .map(|(kind, name, version)| Library {
                        kind: *kind,
                        name: name.to_string(),
                        version: Some(version.to_string()),
                    })
                    .collect(),
                ..RuntimeInfo::default()
            },
        },
    }
}
