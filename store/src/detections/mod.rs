//! What the rules found in each profile: one row per (profile, rule),
//! rewritten by every evaluation so redelivery and re-evaluation never
//! duplicate it.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
pub use odp_api_types::{Issue, IssueStack};
use odp_rules::{Detection, ProfileIdentity, StackHit};
use sqlx::types::Json;
use uuid::Uuid;

use crate::database::{on_backend, Database};
use crate::Result;

pub(crate) mod mysql;
pub(crate) mod postgres;

/// Reads what a profile's service is derived from. Works for snapshots of
/// a profile the database has no request for (the host comes from them).
pub async fn profile_identity(
    db: impl Into<Database>,
    profile_id: Uuid,
) -> Result<ProfileIdentity> {
    let db = db.into();
    let (row, snapshot_host) = on_backend!(db, profile_identity_parts(profile_id))?;
    let text = |key: &str| {
        row.as_ref()
            .and_then(|r| r.get(key))
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Ok(ProfileIdentity {
        target: row
            .as_ref()
            .and_then(|r| r.get("target"))
            .and_then(|t| serde_json::from_value(t.clone()).ok()),
        ended: matches!(text("status").as_deref(), Some("finished" | "stopped")),
        host: text("host").or(snapshot_host),
        service: text("service"),
    })
}

/// Whom a profile's alerts are about: channels are matched on the service.
#[derive(Debug, Clone, Copy)]
pub struct AlertSubject<'a> {
    pub service: &'a str,
    pub host: &'a str,
}

/// Replaces a profile's detections with `found`: rows for rules still
/// flagged are updated in place (keeping when they were first found), the
/// others removed. For each rule flagged for the first time (the upsert
/// inserted its row), one alert per matching enabled channel is queued in
/// the same transaction; the queue is unique per (profile, rule, channel),
/// so re-evaluation and redelivery never queue one twice. Without a
/// subject nothing is queued: re-analysis of past profiles records what a
/// changed rule finds there without alerting on history. One transaction,
/// idempotent; returns the rules newly flagged.
pub async fn save_detections(
    db: impl Into<Database>,
    profile_id: Uuid,
    alert_subject: Option<AlertSubject<'_>>,
    found: &[Detection],
) -> Result<Vec<String>> {
    let db = db.into();
    on_backend!(db, save_detections(profile_id, alert_subject, found))
}

/// The profiles of the schedule run before `profile_id`'s, most recent
/// first, at most `limit`, that ended normally; empty when `profile_id` is
/// not a scheduled run.
pub async fn previous_schedule_runs(
    db: impl Into<Database>,
    profile_id: Uuid,
    limit: i64,
) -> Result<Vec<Uuid>> {
    let db = db.into();
    on_backend!(db, previous_schedule_runs(profile_id, limit))
}

/// The rules of kinds other than `except_kind` that flagged any of the
/// profiles.
pub async fn rules_hit(
    db: impl Into<Database>,
    profile_ids: &[Uuid],
    except_kind: &str,
) -> Result<std::collections::BTreeSet<String>> {
    let db = db.into();
    let ids: Vec<String> = on_backend!(db, rules_hit(profile_ids, except_kind))?;
    Ok(ids.into_iter().collect())
}

/// The frame names, root first, of each of `stack_ids` that exists.
pub(crate) async fn stack_names(
    db: &Database,
    stack_ids: &[Uuid],
) -> Result<HashMap<Uuid, Vec<String>>> {
    let mut stack_ids = stack_ids.to_vec();
    stack_ids.sort_unstable();
    stack_ids.dedup();
    let stacks = crate::query::stack_frame_ids(db, &stack_ids).await?;
    let mut frame_ids: Vec<Uuid> = stacks.values().flatten().copied().collect();
    frame_ids.sort_unstable();
    frame_ids.dedup();
    let names = crate::query::frame_names(db, &frame_ids).await?;
    Ok(stacks
        .into_iter()
        .map(|(id, frames)| {
            let frames = frames
                .iter()
                .map(|f| names.get(f).cloned().unwrap_or_else(|| "[unknown]".into()))
                .collect();
            (id, frames)
        })
        .collect())
}

/// Resolves each row's matching stacks to their frames' names, in one
/// round of queries for all rows.
pub(crate) async fn name_stacks(
    db: &Database,
    rows: &[&[StackHit]],
) -> Result<Vec<Vec<IssueStack>>> {
    let stack_ids: Vec<Uuid> = rows
        .iter()
        .flat_map(|hits| {
            hits.iter()
                .filter(|h| h.frames.is_empty())
                .map(|h| h.stack_id)
        })
        .collect();
    let names = stack_names(db, &stack_ids).await?;
    Ok(rows
        .iter()
        .map(|hits| {
            hits.iter()
                .map(|hit| IssueStack {
                    stack_id: hit.stack_id,
                    count: hit.count,
                    frames: if hit.frames.is_empty() {
                        names.get(&hit.stack_id).cloned().unwrap_or_default()
                    } else {
                        hit.frames.clone()
                    },
                })
                .collect()
        })
        .collect())
}

#[derive(sqlx::FromRow)]
pub(crate) struct IssueRow {
    rule_id: String,
    kind: String,
    title: String,
    explanation: String,
    fix: String,
    link: String,
    share: f64,
    threshold_pct: f64,
    samples_matched: i64,
    samples_total: i64,
    stacks: Json<Vec<StackHit>>,
    detail: serde_json::Value,
    first_evaluated_at: DateTime<Utc>,
    last_evaluated_at: DateTime<Utc>,
}

/// A profile's detections, largest share first, with their stacks'
/// frame names.
pub async fn profile_issues(db: impl Into<Database>, profile_id: Uuid) -> Result<Vec<Issue>> {
    let db = db.into();
    let rows: Vec<IssueRow> = on_backend!(db, issue_rows(profile_id))?;
    let hits: Vec<&[StackHit]> = rows.iter().map(|r| &r.stacks[..]).collect();
    let named = name_stacks(&db, &hits).await?;
    Ok(rows
        .into_iter()
        .zip(named)
        .map(|(r, stacks)| Issue {
            stacks,
            rule_id: r.rule_id,
            kind: r.kind,
            title: r.title,
            explanation: r.explanation,
            fix: r.fix,
            link: r.link,
            share: r.share,
            threshold_pct: r.threshold_pct,
            samples_matched: r.samples_matched.max(0) as u64,
            samples_total: r.samples_total.max(0) as u64,
            detail: r.detail,
            first_evaluated_at: r.first_evaluated_at,
            last_evaluated_at: r.last_evaluated_at,
        })
        .collect())
}
