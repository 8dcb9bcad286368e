//! Managing alert channels in Postgres.

use chrono::{DateTime, Utc};
use odp_api_types::DeliveryStatus;
use sqlx::PgPool;
use uuid::Uuid;

use super::{ChannelPatch, DeliveryFilter, DeliveryRow};
use crate::alerts::CHANNEL_COLUMNS;
use crate::{ChannelRow, Result};

pub(super) async fn get_channel(pool: &PgPool, id: Uuid) -> Result<Option<ChannelRow>> {
    Ok(sqlx::query_as(&format!(
        "select {CHANNEL_COLUMNS} from alert_channels where id = $1"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn update_channel(
    pool: &PgPool,
    id: Uuid,
    patch: &ChannelPatch,
) -> Result<Option<ChannelRow>> {
    Ok(sqlx::query_as(&format!(
        "update alert_channels set
             enabled = coalesce($2, enabled),
             service_pattern = coalesce($3, service_pattern),
             url = coalesce($4, url),
             secret = coalesce($5, secret),
             email_from = coalesce($6, email_from),
             email_to = coalesce($7, email_to)
         where id = $1
         returning {CHANNEL_COLUMNS}"
    ))
    .bind(id)
    .bind(patch.enabled)
    .bind(&patch.service_pattern)
    .bind(&patch.url)
    .bind(&patch.secret)
    .bind(&patch.email_from)
    .bind(&patch.email_to)
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn delete_channel(pool: &PgPool, id: Uuid) -> Result<bool> {
    let done = sqlx::query("delete from alert_channels where id = $1")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Where delivery `id` sits in the channel's list, if it is the channel's.
pub(super) async fn delivery_position(
    pool: &PgPool,
    id: Uuid,
    channel_id: Uuid,
) -> Result<Option<(DateTime<Utc>, Uuid)>> {
    Ok(sqlx::query_as(
        "select created_at, id from alert_deliveries where id = $1 and channel_id = $2",
    )
    .bind(id)
    .bind(channel_id)
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn channel_deliveries(
    pool: &PgPool,
    filter: &DeliveryFilter,
    after: Option<(DateTime<Utc>, Uuid)>,
) -> Result<Vec<DeliveryRow>> {
    Ok(sqlx::query_as(
        "select d.id, d.profile_id, d.rule_id, r.title as rule_title, d.service, d.host,
                d.share, d.threshold_pct, d.detected_at, d.status, d.attempts,
                case when d.status = 'pending' then d.next_attempt_at end as next_attempt_at,
                d.created_at, d.finished_at,
                coalesce((select json_agg(json_build_object(
                              'attempt', a.attempt, 'attempted_at', a.attempted_at,
                              'status_code', a.status_code, 'error', a.error,
                              'success', a.success) order by a.attempt)
                          from alert_attempts a where a.delivery_id = d.id),
                         '[]'::json) as attempt_log
         from alert_deliveries d join rules r on r.id = d.rule_id
         where d.channel_id = $1
           and ($2::text is null or d.status = $2)
           and ($3::timestamptz is null or (d.created_at, d.id) < ($3, $4))
         order by d.created_at desc, d.id desc
         limit $5",
    )
    .bind(filter.channel_id)
    .bind(filter.status.map(DeliveryStatus::as_str))
    .bind(after.map(|(at, _)| at))
    .bind(after.map(|(_, id)| id))
    .bind(filter.limit)
    .fetch_all(pool)
    .await?)
}
