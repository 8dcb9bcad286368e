//! Detections in Postgres.

use odp_rules::Detection;
use sqlx::types::Json;
use sqlx::PgPool;
use uuid::Uuid;

use super::{AlertSubject, IssueRow};
use crate::Result;

/// The profile's row as JSON (`to_jsonb(p)` reads whatever columns it has,
/// so this does not depend on which later migration added `service`) and
/// the host of its first snapshot.
pub(super) async fn profile_identity_parts(
    pool: &PgPool,
    profile_id: Uuid,
) -> Result<(Option<serde_json::Value>, Option<String>)> {
    Ok(sqlx::query_as(
        "select (select to_jsonb(p) from profiles p where p.id = $1),
                (select host from snapshots where profile_id = $1 order by id limit 1)",
    )
    .bind(profile_id)
    .fetch_one(pool)
    .await?)
}

pub(super) async fn save_detections(
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
        crate::alerts::postgres::enqueue(&mut tx, profile_id, subject, &new).await?;
    }
    tx.commit().await?;
    Ok(new)
}

pub(super) async fn previous_schedule_runs(
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

pub(super) async fn rules_hit(
    pool: &PgPool,
    profile_ids: &[Uuid],
    except_kind: &str,
) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "select distinct d.rule_id from detections d join rules r on r.id = d.rule_id
         where d.profile_id = any($1) and r.kind <> $2",
    )
    .bind(profile_ids)
    .bind(except_kind)
    .fetch_all(pool)
    .await?)
}

pub(super) async fn issue_rows(pool: &PgPool, profile_id: Uuid) -> Result<Vec<IssueRow>> {
    Ok(sqlx::query_as(
        "select d.rule_id, r.kind, r.title, r.explanation, r.fix, r.link, d.share,
                d.threshold_pct, d.samples_matched, d.samples_total, d.stacks, d.detail,
                d.first_evaluated_at, d.last_evaluated_at
         from detections d join rules r on r.id = d.rule_id
         where d.profile_id = $1
         order by d.share desc, d.rule_id",
    )
    .bind(profile_id)
    .fetch_all(pool)
    .await?)
}
