//! Setup shared by the detections, alerts and rules suites: the seed pack,
//! profiles, stored stacks, channels and detections as the pipeline makes
//! them.
#![allow(dead_code)] // not every suite needs every fixture

use odp_core::cost::StartOptions;
use odp_core::Target;
use odp_rules::seed::seed_rules;
use odp_rules::{Detection, RuleDef, StackHit};
use odp_store::ChannelKind;
use odp_store::{Database, Inserted, Labels, NewChannel, NewProfile, ProfileMode, Profiles};
use uuid::Uuid;

use crate::support::execute;

/// Installs the shipped seed pack and returns it.
pub(crate) async fn seed(db: &Database) -> Vec<RuleDef> {
    let pack = seed_rules().unwrap();
    odp_store::install_seed_rules(db, &pack).await.unwrap();
    pack
}

/// A live profile of `service` on `host` for the process `process`.
pub(crate) async fn profile(db: &Database, host: &str, service: &str, process: &str) -> Uuid {
    let new = NewProfile {
        id: Uuid::new_v4(),
        host: host.into(),
        service: service.into(),
        idempotency_key: None,
        target: Target::ProcessName(process.into()),
        duration_ms: 30_000,
        frequency_hz: 99,
        requested_by: "ci".into(),
        labels: Labels::new(),
        mode: ProfileMode::of(None),
        options: StartOptions::default(),
        run_id: None,
    };
    match Profiles::new(db).insert(&new).await.unwrap() {
        Inserted::Created(row) => row.id,
        other => panic!("profile not created: {other:?}"),
    }
}

/// `id` as a literal of the backend's uuid column.
pub(crate) fn uuid_sql(db: &Database, id: Uuid) -> String {
    match db {
        Database::Postgres(_) => format!("'{id}'::uuid"),
        Database::MySql(_) => format!("unhex('{}')", id.simple()),
    }
}

/// Stores a stack of `(function, module)` frames, root first, as ingest
/// does (frames rows, and the stack's frame ids concatenated).
pub(crate) async fn store_stack(db: &Database, frames: &[(&str, &str)]) -> Uuid {
    let mut bytes = String::new();
    for (function, module) in frames {
        let id = Uuid::new_v4();
        bytes.push_str(&id.simple().to_string());
        let sql = match db {
            Database::Postgres(_) => "insert into frames (id, function, module) values (",
            Database::MySql(_) => "insert into frames (id, `function`, module) values (",
        };
        execute(
            db,
            &format!("{sql}{}, ?, ?)", uuid_sql(db, id)),
            &[function, module],
        )
        .await;
    }
    let stack = Uuid::new_v4();
    let frame_ids = match db {
        Database::Postgres(_) => format!("decode('{bytes}', 'hex')"),
        Database::MySql(_) => format!("unhex('{bytes}')"),
    };
    execute(
        db,
        &format!(
            "insert into stacks (id, frame_ids) values ({}, {frame_ids})",
            uuid_sql(db, stack)
        ),
        &[],
    )
    .await;
    stack
}

/// A webhook channel for services matching `pattern`.
pub(crate) fn webhook(name: &str, pattern: &str, enabled: bool) -> NewChannel {
    NewChannel {
        name: name.into(),
        kind: ChannelKind::Webhook,
        url: format!("http://127.0.0.1:9/{name}"),
        secret: Some(format!("{name}-secret")),
        email_from: None,
        email_to: Vec::new(),
        service_pattern: pattern.into(),
        enabled,
    }
}

/// What a rule found: `matched` of 1000 samples, in `stacks`.
pub(crate) fn detection(rule_id: &str, matched: u64, stacks: Vec<StackHit>) -> Detection {
    Detection {
        rule_id: rule_id.into(),
        share: matched as f64 / 10.0,
        threshold_pct: 1.0,
        samples_matched: matched,
        samples_total: 1000,
        stacks,
        detail: serde_json::Value::Null,
    }
}
