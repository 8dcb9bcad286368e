//! Managing alert channels (created with [`crate::create_channel`]):
//! reading one, changing it, deleting it,
//! and the log of its deliveries with every attempt.
//!
//! Deleting a channel deletes its deliveries and their attempts with it
//! (the outbox's foreign keys cascade), pending ones included, so nothing
//! is sent to a channel once it is gone.

use chrono::{DateTime, Utc};
use odp_api_types::{Delivery, DeliveryAttempt, DeliveryStatus};
use uuid::Uuid;

use crate::columns::Text;
use crate::database::{on_backend, Database};
use crate::{ChannelRow, Result};

pub(crate) mod mysql;
mod postgres;

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

/// The channel, if there is one with that id.
pub async fn get_channel(db: impl Into<Database>, id: Uuid) -> Result<Option<ChannelRow>> {
    let db = db.into();
    on_backend!(db, get_channel(id))
}

/// Applies `patch`; `None` when there is no such channel.
pub async fn update_channel(
    db: impl Into<Database>,
    id: Uuid,
    patch: &ChannelPatch,
) -> Result<Option<ChannelRow>> {
    let db = db.into();
    on_backend!(db, update_channel(id, patch))
}

/// Deletes a channel with its deliveries and their attempts; `false` when
/// there was no such channel.
pub async fn delete_channel(db: impl Into<Database>, id: Uuid) -> Result<bool> {
    let db = db.into();
    on_backend!(db, delete_channel(id))
}

/// A page of the channel's deliveries, newest first (ties by id), each
/// with its rule's title and its attempts. `None` when `before` is not a
/// delivery of the channel.
pub async fn channel_deliveries(
    db: impl Into<Database>,
    filter: &DeliveryFilter,
) -> Result<Option<Vec<DeliveryRow>>> {
    let db = db.into();
    // Deliveries queued by one detection share `created_at` (one
    // statement), so pages are cut on (created_at, id), not on time alone.
    let after: Option<(DateTime<Utc>, Uuid)> = match filter.before {
        None => None,
        Some(before) => match on_backend!(db, delivery_position(before, filter.channel_id))? {
            None => return Ok(None),
            found => found,
        },
    };
    let rows = on_backend!(db, channel_deliveries(filter, after))?;
    Ok(Some(rows))
}
