//! Managing alert channels (created with [`crate::create_channel`]):
//! reading one, changing it, deleting it,
//! and the log of its deliveries with every attempt.
//!
//! Deleting a channel deletes its deliveries and their attempts with it
//! (the outbox's foreign keys cascade), pending ones included, so nothing
//! is sent to a channel once it is gone.

use chrono::{DateTime, Utc};
use odp_api_types::{Delivery, DeliveryAttempt, DeliveryStatus};
use sqlx::PgPool;
use uuid::Uuid;

use crate::alerts::CHANNEL_COLUMNS;
use crate::columns::Text;
use crate::{ChannelRow, Result};

/// A change to a channel; `None` fields stay as they are. The caller
/// checks that each field suits the channel's kind.
#[derive(Debug, Clone, Default)]
pub struct ChannelPatch {
    pub enabled: Option<bool>,
    pub service_pattern: Option<String>,
    /// The webhook's URL or the email channel's SMTP relay.
    pub url: Option<String>,
    pub secret: Option<String>,
    pub email_from: Option<String>,
    pub email_to: Option<Vec<String>>,
}

/// Which deliveries of a channel to list, newest first.
#[derive(Debug, Clone)]
pub struct DeliveryFilter {
    pub channel_id: Uuid,
    pub status: Option<DeliveryStatus>,
    /// Only deliveries queued before this one (the previous page's last).
    pub before: Option<Uuid>,
    pub limit: i64,
}

/// One alert of a rule about a profile to a channel, and how sending it
/// went.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryRow {
    pub id: Uuid,
    pub profile_id: Uuid,
    pub rule_id: String,
    pub rule_title: String,
    pub service: String,
    pub host: String,
    pub share: f64,
    pub threshold_pct: f64,
    pub detected_at: DateTime<Utc>,
    #[sqlx(try_from = "Text<DeliveryStatus>")]
    pub status: DeliveryStatus,
    pub attempts: i32,
    /// When a pending delivery is next tried; `None` once it ended.
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Every attempt, first first.
    #[sqlx(json)]
    pub attempt_log: Vec<DeliveryAttempt>,
}

impl From<DeliveryRow> for Delivery {
    fn from(row: DeliveryRow) -> Self {
        Delivery {
            id: row.id,
            profile_id: row.profile_id,
            rule_id: row.rule_id,
            rule_title: row.rule_title,
            service: row.service,
            host: row.host,
            share: row.share,
            threshold_pct: row.threshold_pct,
            detected_at: row.detected_at,
            status: row.status,
            attempts: row.attempts,
            next_attempt_at: row.next_attempt_at,
            created_at: row.created_at,
            finished_at: row.finished_at,
            attempt_log: row.attempt_log,
        }
    }
}

pub async fn get_channel(pool: &PgPool, id: Uuid) -> Result<Option<ChannelRow>> {
    Ok(sqlx::query_as(&format!(
        "select {CHANNEL_COLUMNS} from alert_channels where id = $1"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?)
}

/// Applies `patch`; `None` when there is no such channel.
pub async fn update_channel(
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

/// Deletes a channel with its deliveries and their attempts; `false` when
/// there was no such channel.
pub async fn delete_channel(pool: &PgPool, id: Uuid) -> Result<bool> {
    let done = sqlx::query("delete from alert_channels where id = $1")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// A page of the channel's deliveries, newest first (ties by id), each
/// with its rule's title and its attempts. `None` when `before` is not a
/// delivery of the channel.
pub async fn channel_deliveries(
    pool: &PgPool,
    filter: &DeliveryFilter,
) -> Result<Option<Vec<DeliveryRow>>> {
    // Deliveries queued by one detection share `created_at` (one
    // statement), so pages are cut on (created_at, id), not on time alone.
    let after: Option<(DateTime<Utc>, Uuid)> = match filter.before {
        None => None,
        Some(before) => {
            let position = sqlx::query_as(
                "select created_at, id from alert_deliveries where id = $1 and channel_id = $2",
            )
            .bind(before)
            .bind(filter.channel_id)
            .fetch_optional(pool)
            .await?;
            match position {
                None => return Ok(None),
                found => found,
            }
        }
    };
    let rows = sqlx::query_as(
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
    .await?;
    Ok(Some(rows))
}
