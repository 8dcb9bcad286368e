//! What the rules found in each profile: one row per (profile, rule),
//! rewritten by every evaluation so redelivery and re-evaluation never
//! duplicate it.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use odp_rules::{Detection, ProfileIdentity, StackHit};
use sqlx::types::Json;
use uuid::Uuid;

use crate::database::Database;
use crate::sql::{Sql, Tx};
use crate::Result;

mod mysql;
mod postgres;
mod queue;
mod segment_baselines;

pub(crate) use queue::SERVICE_LIKE_PATTERN;
pub use segment_baselines::{segment_baselines, SegmentBaselines, SEGMENT_BASELINE_PERIOD};

/// Ids per `in (…)` list, far below MySQL's 65,535 placeholders.
const IN_LIST_CHUNK: usize = 5_000;

/// Reads what a profile's service is derived from. Works for snapshots of
/// a profile the database has no request for (the host comes from them).
pub async fn profile_identity(
    db: impl Into<Database>,
    profile_id: Uuid,
) -> Result<ProfileIdentity> {
    let row: IdentityRow = Sql::new(
        "select p.target, p.status, p.host, p.service, p.run_id,
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
        run: row.run_id,
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
    run_id: Option<Uuid>,
    snapshot_host: Option<String>,
}

/// Whom a profile's alerts are about: channels are matched on the service.
#[derive(Debug, Clone, Copy)]
pub struct AlertSubject<'a> {
    pub service: &'a str,
    pub host: &'a str,
    /// Rules whose alerts another evaluation raises: a run member's rules
    /// that its run judges, which alerts once for the whole run.
    pub except_rules: &'a [String],
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
    let new = match &mut tx {
        Tx::Postgres(conn) => postgres::replace_detections(conn, profile_id, found).await?,
        Tx::MySql(conn) => mysql::replace_detections(conn, profile_id, found).await?,
    };
    let queue = queue_dialect(&tx);
    if let Some(subject) = alert_subject {
        let alerting: Vec<String> = new
            .iter()
            .filter(|rule| !subject.except_rules.contains(rule))
            .cloned()
            .collect();
        if !alerting.is_empty() {
            queue::queue_alerts(&mut tx, queue, profile_id, subject, &alerting).await?;
        }
    }
    tx.commit().await?;
    Ok(new)
}

/// How `tx`'s backend writes the queuing of alerts.
pub(crate) fn queue_dialect(tx: &Tx) -> &'static queue::Dialect {
    match tx {
        Tx::Postgres(_) => &postgres::QUEUE,
        Tx::MySql(_) => &mysql::QUEUE,
    }
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

/// Each of `rows` with its matching stacks (`hits` of it), their frames
/// named, in one round of queries for all rows.
pub(crate) async fn name_stacks<R>(
    db: &Database,
    rows: Vec<R>,
    hits: impl Fn(&R) -> &[StackHit],
) -> Result<Vec<(R, Vec<IssueStack>)>> {
    let stack_ids: Vec<Uuid> = rows
        .iter()
        .flat_map(|row| {
            hits(row)
                .iter()
                .filter(|h| h.frames.is_empty())
                .map(|h| h.stack_id)
        })
        .collect();
    let names = stack_names(db, &stack_ids).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let stacks = hits(&row)
                .iter()
                .map(|hit| IssueStack {
                    stack_id: hit.stack_id,
                    count: hit.count,
                    frames: if hit.frames.is_empty() {
                        names.get(&hit.stack_id).cloned().unwrap_or_default()
                    } else {
                        hit.frames.clone()
                    },
                })
                .collect();
            (row, stacks)
        })
        .collect())
}

/// A stack matching a detection rule, frames root first.
#[derive(Debug, Clone, PartialEq)]
pub struct IssueStack {
    pub stack_id: Uuid,
    pub count: u64,
    pub frames: Vec<String>,
}

/// A rule's text as its reader sees it (the `rules` table's columns of
/// the same names), quoted by each issue and alert the rule raises.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct RuleText {
    pub title: String,
    pub explanation: String,
    pub fix: String,
    pub link: String,
}

/// A detection with its rule's text and its heaviest matching stacks.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Issue {
    pub rule_id: String,
    pub kind: String,
    #[sqlx(flatten)]
    pub rule: RuleText,
    /// Matched samples, percent of the profile's samples.
    pub share: f64,
    pub threshold_pct: f64,
    #[sqlx(try_from = "i64")]
    pub samples_matched: u64,
    #[sqlx(try_from = "i64")]
    pub samples_total: u64,
    /// The heaviest matching stacks, their frames named.
    #[sqlx(skip)]
    pub stacks: Vec<IssueStack>,
    /// What the rule kind found beyond the share (see `Detection::detail`).
    pub detail: serde_json::Value,
    pub first_evaluated_at: DateTime<Utc>,
    pub last_evaluated_at: DateTime<Utc>,
}

/// An issue as read: its stacks as the detection keeps them (their frames
/// named after).
#[derive(sqlx::FromRow)]
struct IssueRow {
    #[sqlx(flatten)]
    issue: Issue,
    stacks: Json<Vec<StackHit>>,
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
    let named = name_stacks(&db, rows, |row| &row.stacks).await?;
    Ok(named
        .into_iter()
        .map(|(row, stacks)| Issue {
            stacks,
            ..row.issue
        })
        .collect())
}
