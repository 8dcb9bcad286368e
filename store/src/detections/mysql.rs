//! Detections in MySQL and MariaDB. Without `xmax`, the rules a profile
//! already had are read (and locked) before the upsert; the new ones are
//! the rest. Stack and frame lookups use `in (?, …)` lists here rather
//! than the Postgres-only helpers of `crate::query`.

use std::collections::HashSet;

use odp_rules::Detection;
use sqlx::types::Json;
use sqlx::{MySql, MySqlPool, QueryBuilder};
use uuid::Uuid;

use super::{AlertSubject, IssueRow};
use crate::database::push_in_list;
use crate::Result;

/// Ids per `in (…)` list, far below MySQL's 65,535 placeholders.
const IN_LIST_CHUNK: usize = 5_000;

/// The profile's identifying columns as a JSON object (the shape Postgres'
/// `to_jsonb(p)` gives) and the host of its first snapshot.
pub(super) async fn profile_identity_parts(
    pool: &MySqlPool,
    profile_id: Uuid,
) -> Result<(Option<serde_json::Value>, Option<String>)> {
    let row: Option<(Json<serde_json::Value>, String, String, String)> =
        sqlx::query_as("select target, status, host, service from profiles where id = ?")
            .bind(profile_id)
            .fetch_optional(pool)
            .await?;
    let snapshot_host: Option<String> =
        sqlx::query_scalar("select host from snapshots where profile_id = ? order by id limit 1")
            .bind(profile_id)
            .fetch_optional(pool)
            .await?;
    let row = row.map(|(Json(target), status, host, service)| {
        serde_json::json!({ "target": target, "status": status, "host": host, "service": service })
    });
    Ok((row, snapshot_host))
}

pub(super) async fn save_detections(
    pool: &MySqlPool,
    profile_id: Uuid,
    alert_subject: Option<AlertSubject<'_>>,
    found: &[Detection],
) -> Result<Vec<String>> {
    let mut tx = pool.begin().await?;
    // Locks the profile's rows so a concurrent evaluation waits, then sees
    // what this one wrote.
    let had: HashSet<String> =
        sqlx::query_scalar("select rule_id from detections where profile_id = ? for update")
            .bind(profile_id)
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .collect();
    let mut delete = QueryBuilder::<MySql>::new("delete from detections where profile_id = ");
    delete.push_bind(profile_id);
    // `not in (null)` matches nothing, so no detections at all means
    // deleting every row rather than an empty list.
    if !found.is_empty() {
        delete.push(" and rule_id not in ");
        push_in_list(&mut delete, found.iter().map(|d| d.rule_id.as_str()));
    }
    delete.build().execute(&mut *tx).await?;
    if !found.is_empty() {
        let mut upsert = QueryBuilder::<MySql>::new(
            "insert into detections (profile_id, rule_id, share, threshold_pct, \
             samples_matched, samples_total, stacks, detail) ",
        );
        upsert.push_values(found, |mut row, d| {
            row.push_bind(profile_id)
                .push_bind(&d.rule_id)
                .push_bind(d.share)
                .push_bind(d.threshold_pct)
                .push_bind(i64::try_from(d.samples_matched).unwrap_or(i64::MAX))
                .push_bind(i64::try_from(d.samples_total).unwrap_or(i64::MAX))
                .push_bind(Json(&d.stacks))
                .push_bind(Json(&d.detail));
        });
        upsert.push(
            " on duplicate key update share = values(share), \
             threshold_pct = values(threshold_pct), samples_matched = values(samples_matched), \
             samples_total = values(samples_total), stacks = values(stacks), \
             detail = values(detail), last_evaluated_at = now(6)",
        );
        upsert.build().execute(&mut *tx).await?;
    }
    let mut new: Vec<String> = Vec::new();
    for d in found {
        if !had.contains(&d.rule_id) && !new.contains(&d.rule_id) {
            new.push(d.rule_id.clone());
        }
    }
    if let Some(subject) = alert_subject.filter(|_| !new.is_empty()) {
        crate::alerts::mysql::enqueue(&mut tx, profile_id, subject, &new).await?;
    }
    tx.commit().await?;
    Ok(new)
}

pub(super) async fn previous_schedule_runs(
    pool: &MySqlPool,
    profile_id: Uuid,
    limit: i64,
) -> Result<Vec<Uuid>> {
    Ok(sqlx::query_scalar(
        "select earlier.profile_id
         from schedule_runs this
         join schedule_runs earlier on earlier.schedule_id = this.schedule_id
              and earlier.scheduled_for < this.scheduled_for
         join profiles p on p.id = earlier.profile_id
         where this.profile_id = ? and p.status in ('finished', 'stopped')
         order by earlier.scheduled_for desc
         limit ?",
    )
    .bind(profile_id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

pub(super) async fn rules_hit(
    pool: &MySqlPool,
    profile_ids: &[Uuid],
    except_kind: &str,
) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for chunk in profile_ids.chunks(IN_LIST_CHUNK) {
        let mut query = QueryBuilder::<MySql>::new(
            "select distinct d.rule_id from detections d join rules r on r.id = d.rule_id \
             where r.kind <> ",
        );
        query.push_bind(except_kind).push(" and d.profile_id in ");
        push_in_list(&mut query, chunk.iter());
        let found: Vec<String> = query.build_query_scalar().fetch_all(pool).await?;
        ids.extend(found);
    }
    Ok(ids)
}

pub(super) async fn issue_rows(pool: &MySqlPool, profile_id: Uuid) -> Result<Vec<IssueRow>> {
    Ok(sqlx::query_as(
        "select d.rule_id, r.kind, r.title, r.explanation, r.fix, r.link, d.share,
                d.threshold_pct, d.samples_matched, d.samples_total, d.stacks, d.detail,
                d.first_evaluated_at, d.last_evaluated_at
         from detections d join rules r on r.id = d.rule_id
         where d.profile_id = ?
         order by d.share desc, d.rule_id",
    )
    .bind(profile_id)
    .fetch_all(pool)
    .await?)
}
