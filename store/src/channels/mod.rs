//! Alert channels: creating, reading, changing and deleting them, and the
//! log of each one's deliveries with every attempt.
//!
//! Deleting a channel deletes its deliveries and their attempts with it
//! (the outbox's foreign keys cascade), pending ones included, so nothing
//! is sent to a channel once it is gone.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use odp_core::domain::{ChannelKind, DeliveryStatus};
use uuid::Uuid;

use crate::columns::{List, Text};
use crate::database::{Backend, Database};
use crate::sql::{Arg, Sql, Table};
use crate::{conflict_if_taken, written, Result};

mod mysql;
mod postgres;

/// A channel to create, of any kind: the notifier of its kind reads the
/// fields it needs (a webhook its URL and secret, email its relay, sender
/// and recipients), so a new kind needs no new store function.
#[derive(Debug, Clone)]
pub struct NewChannel {
    pub name: String,
    pub kind: ChannelKind,
    /// The webhook's URL, or the email channel's relay
    /// (`smtp://host[:port]`).
    pub url: String,
    /// A webhook's `X-ODP-Signature` key.
    pub secret: Option<String>,
    pub email_from: Option<String>,
    pub email_to: Vec<String>,
    /// Glob over services (`*` for all, `?` for one character).
    pub service_pattern: String,
    pub enabled: bool,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ChannelRow {
    pub id: Uuid,
    pub name: String,
    #[sqlx(try_from = "Text<ChannelKind>")]
    pub kind: ChannelKind,
    /// The webhook's URL, or the email channel's SMTP relay.
    pub url: String,
    pub secret: String,
    pub service_pattern: String,
    pub enabled: bool,
    pub created_at: DateTime<Utc>,
    pub email_from: Option<String>,
    #[sqlx(try_from = "List<String>")]
    pub email_to: Vec<String>,
}

/// `email_to`, bound as a JSON array (or null), as each backend stores it
/// from the parameter given: Postgres' `text[]`, MySQL's JSON.
fn email_list(backend: Backend, param: &str) -> String {
    match backend {
        Backend::Postgres => postgres::email_list(param),
        Backend::MySql => mysql::email_list(param),
    }
}

/// The table and the columns of [`ChannelRow`].
const CHANNELS: Table = Table {
    name: "alert_channels",
    columns: "id, name, kind, url, secret, service_pattern, enabled, created_at, email_from, \
              email_to",
};

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

/// Creates a channel; a taken name is a [`crate::StoreError::Conflict`].
pub async fn create_channel(db: impl Into<Database>, channel: &NewChannel) -> Result<ChannelRow> {
    let db = db.into();
    let id = Uuid::new_v4();
    let inserted = Sql::new(format!(
        "insert into alert_channels (id, name, kind, url, secret, service_pattern, enabled,
                                     email_from, email_to)
         values ($1, $2, $3, $4, coalesce($5, ''), $6, $7, $8, {email_to})",
        email_to = email_list(db.backend(), "$9"),
    ))
    .bind(id)
    .bind(&channel.name)
    .bind(channel.kind.as_str())
    .bind(&channel.url)
    .bind(&channel.secret)
    .bind(&channel.service_pattern)
    .bind(channel.enabled)
    .bind(&channel.email_from)
    .bind(Arg::json(&channel.email_to)?)
    .execute(&db)
    .await;
    // The id is fresh, so the only key that can collide is the name.
    conflict_if_taken(inserted, || {
        format!("alert channel {:?} already exists", channel.name)
    })?;
    written(get_channel(&db, id).await?, || {
        format!("alert channel {id}")
    })
}

/// All channels, by name.
pub async fn list_channels(db: impl Into<Database>) -> Result<Vec<ChannelRow>> {
    CHANNELS.list(&db.into(), "order by name").await
}

/// The channel, if there is one with that id.
pub async fn get_channel(db: impl Into<Database>, id: Uuid) -> Result<Option<ChannelRow>> {
    CHANNELS.get(&db.into(), id).await
}

/// Applies `patch`; `None` when there is no such channel. The update and
/// the read of its result share a transaction, so the row returned is the
/// one this update wrote.
pub async fn update_channel(
    db: impl Into<Database>,
    id: Uuid,
    patch: &ChannelPatch,
) -> Result<Option<ChannelRow>> {
    let db = db.into();
    let email_to = match &patch.email_to {
        Some(list) => Arg::json(list)?,
        None => Arg::Json(None),
    };
    let update = Sql::new(format!(
        "update alert_channels set
             enabled = coalesce($2, enabled),
             service_pattern = coalesce($3, service_pattern),
             url = coalesce($4, url),
             secret = coalesce($5, secret),
             email_from = coalesce($6, email_from),
             email_to = coalesce({email_to}, email_to)
         where id = $1",
        email_to = email_list(db.backend(), "$7"),
    ))
    .bind(id)
    .bind(patch.enabled)
    .bind(&patch.service_pattern)
    .bind(&patch.url)
    .bind(&patch.secret)
    .bind(&patch.email_from)
    .bind(email_to);
    CHANNELS.update(&db, update, id).await
}

/// Deletes a channel with its deliveries and their attempts; `false` when
/// there was no such channel.
pub async fn delete_channel(db: impl Into<Database>, id: Uuid) -> Result<bool> {
    CHANNELS.delete(&db.into(), id).await
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
    /// Every attempt, first first (read after the page).
    #[sqlx(skip)]
    pub attempt_log: Vec<DeliveryAttempt>,
}

/// The columns of a [`DeliveryRow`] but its attempts, over deliveries `d`
/// joined to their rules.
const DELIVERIES: &str = "select d.id, d.profile_id, d.rule_id, r.title as rule_title,
           d.service, d.host, d.share, d.threshold_pct, d.detected_at, d.status, d.attempts,
           case when d.status = 'pending' then d.next_attempt_at end as next_attempt_at,
           d.created_at, d.finished_at
    from alert_deliveries d join rules r on r.id = d.rule_id";

/// A page of the channel's deliveries, newest first (ties by id), each
/// with its rule's title and its attempts. `None` when `before` is not a
/// delivery of the channel.
pub async fn channel_deliveries(
    db: impl Into<Database>,
    filter: &DeliveryFilter,
) -> Result<Option<Vec<DeliveryRow>>> {
    let db = db.into();
    let status = filter.status.map(DeliveryStatus::as_str);
    let page = match filter.before {
        None => Sql::new(format!(
            "{DELIVERIES}
             where d.channel_id = $1 and ($2 is null or d.status = $2)
             order by d.created_at desc, d.id desc
             limit $3"
        ))
        .bind(filter.channel_id)
        .bind(status)
        .bind(filter.limit),
        // Deliveries queued by one detection share `created_at` (one
        // statement), so pages are cut on (created_at, id), not on time
        // alone; written so that both backends start the index scan at
        // the cut.
        Some(before) => {
            let cut: Option<(DateTime<Utc>, Uuid)> = Sql::new(
                "select created_at, id from alert_deliveries where id = $1 and channel_id = $2",
            )
            .bind(before)
            .bind(filter.channel_id)
            .fetch_optional(&db)
            .await?;
            let Some((at, id)) = cut else {
                return Ok(None);
            };
            Sql::new(format!(
                "{DELIVERIES}
                 where d.channel_id = $1 and ($2 is null or d.status = $2)
                   and d.created_at <= $3 and (d.created_at < $3 or d.id < $4)
                 order by d.created_at desc, d.id desc
                 limit $5"
            ))
            .bind(filter.channel_id)
            .bind(status)
            .bind(at)
            .bind(id)
            .bind(filter.limit)
        }
    };
    let mut rows: Vec<DeliveryRow> = page.fetch_all(&db).await?;
    let mut logs = attempt_logs(&db, rows.iter().map(|r| r.id)).await?;
    for row in &mut rows {
        row.attempt_log = logs.remove(&row.id).unwrap_or_default();
    }
    Ok(Some(rows))
}

/// One try at sending a delivery.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct DeliveryAttempt {
    pub attempt: i32,
    pub attempted_at: DateTime<Utc>,
    /// The HTTP status (webhook) or SMTP reply code (email), when the
    /// server answered.
    pub status_code: Option<i32>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    pub success: bool,
}

#[derive(sqlx::FromRow)]
struct AttemptRow {
    delivery_id: Uuid,
    #[sqlx(flatten)]
    attempt: DeliveryAttempt,
}

/// The attempts of each of `deliveries` (a page), first first.
async fn attempt_logs(
    db: &Database,
    deliveries: impl Iterator<Item = Uuid>,
) -> Result<HashMap<Uuid, Vec<DeliveryAttempt>>> {
    let rows: Vec<AttemptRow> = Sql::new(
        "select delivery_id, attempt, attempted_at, status_code, error, success
         from alert_attempts where delivery_id in $1
         order by delivery_id, attempt",
    )
    .bind_list(deliveries)
    .fetch_all(db)
    .await?;
    let mut logs: HashMap<Uuid, Vec<DeliveryAttempt>> = HashMap::new();
    for row in rows {
        logs.entry(row.delivery_id).or_default().push(row.attempt);
    }
    Ok(logs)
}
