//! What the rules found in each profile: one row per (profile, rule),
//! rewritten by every evaluation so redelivery and re-evaluation never
//! duplicate it.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
pub use odp_api_types::{Issue, IssueStack};
use odp_rules::{Detection, ProfileIdentity, StackHit};
use sqlx::types::Json;
use uuid::Uuid;

use crate::database::Database;
use crate::sql::{Sql, Tx};
use crate::Result;

mod mysql;
mod postgres;
mod queue;

/// Ids per `in (…)` list, far below MySQL's 65,535 placeholders.
const IN_LIST_CHUNK: usize = 5_000;

/// Reads what a profile's service is derived from. Works for snapshots of
/// a profile the database has no request for (the host comes from them).
pub async fn profile_identity(
    db: impl Into<Database>,
    profile_id: Uuid,
) -> Result<ProfileIdentity> {
    let row: IdentityRow = Sql::new(
        "select p.target, p.status, p.host, p.service,
                (select host from snapshots where profile_id = $1 order by id limit 1)
                    as snapshot_host
         from (select 1 as one) as one left join profiles p on p.id = $1",
    )
    .bind(profile_id)
    .fetch_one(&db.into())
    .await?;
    let text = |column: Option<String>| column.filter(|s| !s.is_empty());
    Ok(ProfileIdentity {
        target: row
            .target
            .and_then(|Json(target)| serde_json::from_value(target).ok()),
        ended: matches!(text(row.status).as_deref(), Some("finished" | "stopped")),
        host: text(row.host).or(row.snapshot_host),
        service: text(row.service),
    })
}

/// What a profile's identity is read from: its row, when there is one, and
/// the host of its first snapshot.
#[derive(sqlx::FromRow)]
struct IdentityRow {
    target: Option<Json<serde_json::Value>>,
    status: Option<String>,
    host: Option<String>,
    service: Option<String>,
    snapshot_host: Option<String>,
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
    let mut tx = db.into().begin().await?;
    let (new, queue) = match &mut tx {
        Tx::Postgres(conn) => (
            postgres::replace_detections(conn, profile_id, found).await?,
            &postgres::QUEUE,
        ),
        Tx::MySql(conn) => (
            mysql::replace_detections(conn, profile_id, found).await?,
            &mysql::QUEUE,
        ),
    };
    if let Some(subject) = alert_subject.filter(|_| !new.is_empty()) {
        queue::queue_alerts(&mut tx, queue, profile_id, subject, &new).await?;
    }
    tx.commit().await?;
    Ok(new)
}

/// Deletes the profile's detections of rules `found` does not flag.
fn delete_cleared(profile_id: Uuid, found: &[Detection]) -> Sql {
    // `not in (null)` matches nothing, so no detections at all means
    // deleting every row rather than an empty list.
    if found.is_empty() {
        return Sql::new("delete from detections where profile_id = $1").bind(profile_id);
    }
    Sql::new("delete from detections where profile_id = $1 and rule_id not in $2")
        .bind(profile_id)
        .bind_list(found.iter().map(|d| d.rule_id.as_str()))
}

/// The profiles of the schedule run before `profile_id`'s, most recent
/// first, at most `limit`, that ended normally; empty when `profile_id` is
/// not a scheduled run.
pub async fn previous_schedule_runs(
    db: impl Into<Database>,
    profile_id: Uuid,
    limit: i64,
) -> Result<Vec<Uuid>> {
    Sql::new(
        "select earlier.profile_id
         from schedule_runs this
         join schedule_runs earlier on earlier.schedule_id = this.schedule_id
              and earlier.scheduled_for < this.scheduled_for
         join profiles p on p.id = earlier.profile_id
         where this.profile_id = $1 and p.status in ('finished', 'stopped')
         order by earlier.scheduled_for desc
         limit $2",
    )
    .bind(profile_id)
    .bind(limit)
    .fetch_column(&db.into())
    .await
}

/// The rules of kinds other than `except_kind` that flagged any of the
/// profiles.
pub async fn rules_hit(
    db: impl Into<Database>,
    profile_ids: &[Uuid],
    except_kind: &str,
) -> Result<std::collections::BTreeSet<String>> {
    let db = db.into();
    let mut hit = std::collections::BTreeSet::new();
    for chunk in profile_ids.chunks(IN_LIST_CHUNK) {
        let rules: Vec<String> = Sql::new(
            "select distinct d.rule_id from detections d join rules r on r.id = d.rule_id
             where d.profile_id in $1 and r.kind <> $2",
        )
        .bind_list(chunk)
        .bind(except_kind)
        .fetch_column(&db)
        .await?;
        hit.extend(rules);
    }
    Ok(hit)
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
struct IssueRow {
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
    let rows: Vec<IssueRow> = Sql::new(
        "select d.rule_id, r.kind, r.title, r.explanation, r.fix, r.link, d.share,
                d.threshold_pct, d.samples_matched, d.samples_total, d.stacks, d.detail,
                d.first_evaluated_at, d.last_evaluated_at
         from detections d join rules r on r.id = d.rule_id
         where d.profile_id = $1
         order by d.share desc, d.rule_id",
    )
    .bind(profile_id)
    .fetch_all(&db)
    .await?;
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
