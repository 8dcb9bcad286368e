//! Managing alert channels in MySQL and MariaDB: a read after the update
//! instead of `returning`, and each page's attempt logs read in a second
//! query (MySQL's `json_arrayagg` cannot order its elements).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use odp_api_types::DeliveryAttempt;
use sqlx::types::Json;
use sqlx::{MySql, MySqlPool, QueryBuilder};
use uuid::Uuid;

use super::{ChannelPatch, DeliveryFilter, DeliveryRow};
use crate::alerts::CHANNEL_COLUMNS;
use crate::database::push_in_list;
use crate::{ChannelRow, Result};

pub(crate) async fn get_channel(pool: &MySqlPool, id: Uuid) -> Result<Option<ChannelRow>> {
    Ok(sqlx::query_as(&format!(
        "select {CHANNEL_COLUMNS} from alert_channels where id = ?"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn update_channel(
    pool: &MySqlPool,
    id: Uuid,
    patch: &ChannelPatch,
) -> Result<Option<ChannelRow>> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "update alert_channels set
             enabled = coalesce(?, enabled),
             service_pattern = coalesce(?, service_pattern),
             url = coalesce(?, url),
             secret = coalesce(?, secret),
             email_from = coalesce(?, email_from),
             email_to = coalesce(?, email_to)
         where id = ?",
    )
    .bind(patch.enabled)
    .bind(&patch.service_pattern)
    .bind(&patch.url)
    .bind(&patch.secret)
    .bind(&patch.email_from)
    .bind(patch.email_to.as_ref().map(Json))
    .bind(id)
    .execute(&mut *tx)
    .await?;
    let row = sqlx::query_as(&format!(
        "select {CHANNEL_COLUMNS} from alert_channels where id = ?"
    ))
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row)
}

pub(super) async fn delete_channel(pool: &MySqlPool, id: Uuid) -> Result<bool> {
    let done = sqlx::query("delete from alert_channels where id = ?")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Where delivery `id` sits in the channel's list, if it is the channel's.
pub(super) async fn delivery_position(
    pool: &MySqlPool,
    id: Uuid,
    channel_id: Uuid,
) -> Result<Option<(DateTime<Utc>, Uuid)>> {
    Ok(sqlx::query_as(
        "select created_at, id from alert_deliveries where id = ? and channel_id = ?",
    )
    .bind(id)
    .bind(channel_id)
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn channel_deliveries(
    pool: &MySqlPool,
    filter: &DeliveryFilter,
    after: Option<(DateTime<Utc>, Uuid)>,
) -> Result<Vec<DeliveryRow>> {
    let mut query = QueryBuilder::<MySql>::new(
        "select d.id, d.profile_id, d.rule_id, r.title as rule_title, d.service, d.host, \
         d.share, d.threshold_pct, d.detected_at, d.status, d.attempts, \
         case when d.status = 'pending' then d.next_attempt_at end as next_attempt_at, \
         d.created_at, d.finished_at, '[]' as attempt_log \
         from alert_deliveries d join rules r on r.id = d.rule_id \
         where d.channel_id = ",
    );
    query.push_bind(filter.channel_id);
    if let Some(status) = filter.status {
        query.push(" and d.status = ").push_bind(status.as_str());
    }
    if let Some((at, id)) = after {
        // The row comparison spelled out, so the index is used.
        query
            .push(" and (d.created_at < ")
            .push_bind(at)
            .push(" or (d.created_at = ")
            .push_bind(at)
            .push(" and d.id < ")
            .push_bind(id)
            .push("))");
    }
    query
        .push(" order by d.created_at desc, d.id desc limit ")
        .push_bind(filter.limit);
    let mut rows: Vec<DeliveryRow> = query.build_query_as().fetch_all(pool).await?;
    let mut logs = attempt_logs(pool, rows.iter().map(|r| r.id)).await?;
    for row in &mut rows {
        row.attempt_log = logs.remove(&row.id).unwrap_or_default();
    }
    Ok(rows)
}

#[derive(sqlx::FromRow)]
struct AttemptRow {
    delivery_id: Uuid,
    attempt: i32,
    attempted_at: DateTime<Utc>,
    status_code: Option<i32>,
    error: Option<String>,
    success: bool,
}

/// The attempts of each of `deliveries`, first first.
async fn attempt_logs(
    pool: &MySqlPool,
    deliveries: impl Iterator<Item = Uuid>,
) -> Result<HashMap<Uuid, Vec<DeliveryAttempt>>> {
    let mut query = QueryBuilder::<MySql>::new(
        "select delivery_id, attempt, attempted_at, status_code, error, success \
         from alert_attempts where delivery_id in ",
    );
    push_in_list(&mut query, deliveries);
    query.push(" order by delivery_id, attempt");
    let rows: Vec<AttemptRow> = query.build_query_as().fetch_all(pool).await?;
    let mut logs: HashMap<Uuid, Vec<DeliveryAttempt>> = HashMap::new();
    for row in rows {
        logs.entry(row.delivery_id)
            .or_default()
            .push(DeliveryAttempt {
                attempt: row.attempt,
                attempted_at: row.attempted_at,
                status_code: row.status_code,
                error: row.error,
                success: row.success,
            });
    }
    Ok(logs)
}
