//! What the rules found in each profile: one row per (profile, rule),
//! rewritten by every evaluation so redelivery and re-evaluation never
//! duplicate it.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
pub use odp_api_types::{Issue, IssueStack};
use odp_rules::{Detection, ProfileIdentity, StackHit};
use sqlx::types::Json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::query::{frame_names, stack_frame_ids};
use crate::Result;

/// Reads what a profile's service is derived from. Works for snapshots of
/// a profile the database has no request for (the host comes from them).
pub async fn profile_identity(pool: &PgPool, profile_id: Uuid) -> Result<ProfileIdentity> {
    // `to_jsonb(p)` reads whatever columns the profile row has, so this
    // does not depend on which later migration added `service`.
    let (row, snapshot_host): (Option<serde_json::Value>, Option<String>) = sqlx::query_as(
        "select (select to_jsonb(p) from profiles p where p.id = $1),
                (select host from snapshots where profile_id = $1 order by id limit 1)",
    )
    .bind(profile_id)
    .fetch_one(pool)
    .await?;
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
    pool: &PgPool,
    profile_id: Uuid,
    alert_subject: Option<AlertSubject<'_>>,
    found: &[Detection],
) -> Result<Vec<String>> {
    let mut tx = pool.begin().await?;
    let rule_ids: Vec<&str> = found.iter().map(|d| d.rule_id.as_str()).collect();
    sqlx::query("delete from detections where profile_id = $1 and not (rule_id = any($2))")
        .bind(profile_id)
        .bind(&rule_ids)
        .execute(&mut *tx)
        .await?;
    // `xmax = 0` holds for a row this statement inserted, not one it updated.
    let new: Vec<String> = sqlx::query_scalar::<_, Option<String>>(
        "insert into detections (profile_id, rule_id, share, threshold_pct, samples_matched,
                                 samples_total, stacks, detail)
         select $1, rule_id, share, threshold_pct, samples_matched, samples_total, stacks,
                coalesce(detail, 'null')
         from jsonb_to_recordset($2) as d(rule_id text, share float8, threshold_pct float8,
             samples_matched bigint, samples_total bigint, stacks jsonb, detail jsonb)
         on conflict (profile_id, rule_id) do update set
             share = excluded.share, threshold_pct = excluded.threshold_pct,
             samples_matched = excluded.samples_matched, samples_total = excluded.samples_total,
             stacks = excluded.stacks, detail = excluded.detail, last_evaluated_at = now()
         returning case when xmax = 0 then rule_id end",
    )
    .bind(profile_id)
    .bind(Json(found))
    .fetch_all(&mut *tx)
    .await?
    .into_iter()
    .flatten()
    .collect();
    if let Some(subject) = alert_subject.filter(|_| !new.is_empty()) {
        crate::alerts::enqueue(&mut tx, profile_id, subject, &new).await?;
    }
    tx.commit().await?;
    Ok(new)
}

/// The profiles of the schedule run before `profile_id`'s, most recent
/// first, at most `limit`, that ended normally; empty when `profile_id` is
/// not a scheduled run.
pub async fn previous_schedule_runs(
    pool: &PgPool,
    profile_id: Uuid,
    limit: i64,
) -> Result<Vec<Uuid>> {
    Ok(sqlx::query_scalar(
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
    .fetch_all(pool)
    .await?)
}

/// The rules of kinds other than `except_kind` that flagged any of the
/// profiles.
pub async fn rules_hit(
    pool: &PgPool,
    profile_ids: &[Uuid],
    except_kind: &str,
) -> Result<std::collections::BTreeSet<String>> {
    let ids: Vec<String> = sqlx::query_scalar(
        "select distinct d.rule_id from detections d join rules r on r.id = d.rule_id
         where d.profile_id = any($1) and r.kind <> $2",
    )
    .bind(profile_ids)
    .bind(except_kind)
    .fetch_all(pool)
    .await?;
    Ok(ids.into_iter().collect())
}

/// The frame names, root first, of each of `stack_ids` that exists.
pub(crate) async fn stack_names(
    pool: &PgPool,
    stack_ids: &[Uuid],
) -> Result<HashMap<Uuid, Vec<String>>> {
    let mut stack_ids = stack_ids.to_vec();
    stack_ids.sort_unstable();
    stack_ids.dedup();
    let stacks = stack_frame_ids(pool, &stack_ids).await?;
    let mut frame_ids: Vec<Uuid> = stacks.values().flatten().copied().collect();
    frame_ids.sort_unstable();
    frame_ids.dedup();
    let names = frame_names(pool, &frame_ids).await?;
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
    pool: &PgPool,
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
    let names = stack_names(pool, &stack_ids).await?;
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
pub async fn profile_issues(pool: &PgPool, profile_id: Uuid) -> Result<Vec<Issue>> {
    let rows: Vec<IssueRow> = sqlx::query_as(
        "select d.rule_id, r.kind, r.title, r.explanation, r.fix, r.link, d.share,
                d.threshold_pct, d.samples_matched, d.samples_total, d.stacks, d.detail,
                d.first_evaluated_at, d.last_evaluated_at
         from detections d join rules r on r.id = d.rule_id
         where d.profile_id = $1
         order by d.share desc, d.rule_id",
    )
    .bind(profile_id)
    .fetch_all(pool)
    .await?;
    let hits: Vec<&[StackHit]> = rows.iter().map(|r| &r.stacks[..]).collect();
    let named = name_stacks(pool, &hits).await?;
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
