//! Alert channels and the outbox of deliveries to them.
//!
//! A delivery is queued in the transaction that first stores a detection
//! (see [`crate::save_detections`]) and is unique per (profile, rule,
//! channel). Senders claim due deliveries with `for update skip locked`
//! and lease them by pushing `next_attempt_at` past the send's timeout, so
//! several senders never send one delivery at the same time and a crashed
//! sender's claim comes back once its lease runs out.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::error::BoxDynError;
use sqlx::types::Json;
use sqlx::{Decode, MySql, Postgres, Type};
use uuid::Uuid;

use odp_api_types::ChannelKind;

use odp_rules::StackHit;

use crate::database::{on_backend, Database};
use crate::detections::{name_stacks, IssueStack};
use crate::{Result, StoreError};

pub(crate) mod mysql;
pub(crate) mod postgres;

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
    /// `webhook` or `email`.
    pub kind: String,
    /// The webhook's URL, or the email channel's SMTP relay.
    pub url: String,
    pub secret: String,
    pub service_pattern: String,
    pub enabled: bool,
    pub created_at: DateTime<Utc>,
    pub email_from: Option<String>,
    #[sqlx(try_from = "TextList")]
    pub email_to: Vec<String>,
}

/// A list of texts: Postgres' `text[]`, MySQL's JSON array of strings.
pub(crate) struct TextList(Vec<String>);

impl From<TextList> for Vec<String> {
    fn from(list: TextList) -> Vec<String> {
        list.0
    }
}

impl Type<Postgres> for TextList {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        <Vec<String> as Type<Postgres>>::type_info()
    }

    fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
        <Vec<String> as Type<Postgres>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Postgres> for TextList {
    fn decode(value: sqlx::postgres::PgValueRef<'r>) -> std::result::Result<Self, BoxDynError> {
        Ok(TextList(<Vec<String> as Decode<Postgres>>::decode(value)?))
    }
}

impl Type<MySql> for TextList {
    fn type_info() -> sqlx::mysql::MySqlTypeInfo {
        <Json<Vec<String>> as Type<MySql>>::type_info()
    }

    fn compatible(ty: &sqlx::mysql::MySqlTypeInfo) -> bool {
        <Json<Vec<String>> as Type<MySql>>::compatible(ty)
    }
}

impl<'r> Decode<'r, MySql> for TextList {
    fn decode(value: sqlx::mysql::MySqlValueRef<'r>) -> std::result::Result<Self, BoxDynError> {
        let Json(list) = <Json<Vec<String>> as Decode<MySql>>::decode(value)?;
        Ok(TextList(list))
    }
}

/// The channel as the API shows it: its kind's fields, never the secret.
impl TryFrom<ChannelRow> for odp_api_types::Channel {
    type Error = StoreError;

    fn try_from(row: ChannelRow) -> Result<Self> {
        let kind = match row.kind.as_str() {
            "webhook" => ChannelKind::Webhook,
            "email" => ChannelKind::Email,
            other => {
                return Err(StoreError::Corrupt(format!(
                    "channel {} has unknown kind {other:?}",
                    row.id
                )))
            }
        };
        let (url, smtp_url) = match kind {
            ChannelKind::Webhook => (Some(row.url), None),
            ChannelKind::Email => (None, Some(row.url)),
        };
        Ok(odp_api_types::Channel {
            id: row.id,
            name: row.name,
            kind,
            url,
            smtp_url,
            from: row.email_from,
            to: row.email_to,
            service_pattern: row.service_pattern,
            enabled: row.enabled,
            created_at: row.created_at,
        })
    }
}

pub(crate) const CHANNEL_COLUMNS: &str =
    "id, name, kind, url, secret, service_pattern, enabled, created_at, email_from, email_to";

/// Creates a channel; a taken name is a [`StoreError::Conflict`].
pub async fn create_channel(db: impl Into<Database>, channel: &NewChannel) -> Result<ChannelRow> {
    let db = db.into();
    let inserted: Option<ChannelRow> = on_backend!(db, create_channel(Uuid::new_v4(), channel))?;
    inserted.ok_or_else(|| {
        StoreError::Conflict(format!("alert channel {:?} already exists", channel.name))
    })
}

/// All channels, by name.
pub async fn list_channels(db: impl Into<Database>) -> Result<Vec<ChannelRow>> {
    let db = db.into();
    on_backend!(db, list_channels())
}

/// The LIKE pattern (escaped with `!`) a channel's service glob
/// (`*`, `?`) stands for, as SQL over the column `c.service_pattern`:
/// LIKE's own wildcards and the escape are escaped first, then `*` and `?`
/// translated. `!` rather than `\` because MySQL string literals treat a
/// backslash as an escape of their own.
pub(crate) const SERVICE_LIKE_PATTERN: &str = "replace(replace(replace(replace(replace(\
     c.service_pattern, '!', '!!'), '%', '!%'), '_', '!_'), '*', '%'), '?', '_')";

/// A claimed delivery with everything its message says.
#[derive(Debug, Clone)]
pub struct DueDelivery {
    pub id: Uuid,
    /// This attempt's number, from 1.
    pub attempt: u32,
    pub channel_id: Uuid,
    /// `webhook` or `email`.
    pub kind: String,
    /// The webhook's URL, or the email channel's SMTP relay.
    pub url: String,
    pub secret: String,
    pub email_from: Option<String>,
    pub email_to: Vec<String>,
    pub profile_id: Uuid,
    pub service: String,
    pub host: String,
    pub rule_id: String,
    pub title: String,
    pub explanation: String,
    pub fix: String,
    pub link: String,
    pub share: f64,
    pub threshold_pct: f64,
    pub stacks: Vec<IssueStack>,
    pub detected_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
pub(crate) struct DueRow {
    id: Uuid,
    attempts: i32,
    channel_id: Uuid,
    kind: String,
    url: String,
    secret: String,
    email_from: Option<String>,
    #[sqlx(try_from = "TextList")]
    email_to: Vec<String>,
    profile_id: Uuid,
    service: String,
    host: String,
    rule_id: String,
    title: String,
    explanation: String,
    fix: String,
    link: String,
    share: f64,
    threshold_pct: f64,
    stacks: Json<Vec<StackHit>>,
    detected_at: DateTime<Utc>,
}

/// Claims up to `limit` due pending deliveries, leasing each for `lease`
/// (longer than a send may take). A claimed delivery must be finished
/// with [`record_attempt`].
pub async fn claim_due_deliveries(
    db: impl Into<Database>,
    limit: u32,
    lease: Duration,
) -> Result<Vec<DueDelivery>> {
    let db = db.into();
    let rows: Vec<DueRow> = on_backend!(db, claim_due_rows(limit, lease))?;
    let hits: Vec<&[StackHit]> = rows.iter().map(|r| &r.stacks[..]).collect();
    let named = name_stacks(&db, &hits).await?;
    Ok(rows
        .into_iter()
        .zip(named)
        .map(|(r, stacks)| DueDelivery {
            stacks,
            id: r.id,
            attempt: r.attempts.max(0) as u32 + 1,
            channel_id: r.channel_id,
            kind: r.kind,
            url: r.url,
            secret: r.secret,
            email_from: r.email_from,
            email_to: r.email_to,
            profile_id: r.profile_id,
            service: r.service,
            host: r.host,
            rule_id: r.rule_id,
            title: r.title,
            explanation: r.explanation,
            fix: r.fix,
            link: r.link,
            share: r.share,
            threshold_pct: r.threshold_pct,
            detected_at: r.detected_at,
        })
        .collect())
}

/// How one attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptOutcome {
    /// The HTTP status or SMTP reply code, when the server answered.
    pub status_code: Option<u16>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    pub success: bool,
    /// When a failed delivery is tried again; `None` gives up on it.
    pub retry_in: Option<Duration>,
}

/// Logs attempt `attempt` of a delivery and moves it on: delivered, due
/// again after `retry_in`, or failed for good. One transaction.
pub async fn record_attempt(
    db: impl Into<Database>,
    delivery_id: Uuid,
    attempt: u32,
    outcome: &AttemptOutcome,
) -> Result<()> {
    let db = db.into();
    on_backend!(db, record_attempt(delivery_id, attempt, outcome))
}

impl AttemptOutcome {
    /// The delivery's status after this attempt.
    fn delivery_status(&self) -> &'static str {
        match (self.success, self.retry_in) {
            (true, _) => "delivered",
            (false, Some(_)) => "pending",
            (false, None) => "failed",
        }
    }
}

/// A duration in whole units of `unit`, capped at `i64::MAX`.
fn whole(duration: Duration, unit: Duration) -> i64 {
    (duration.as_nanos() / unit.as_nanos()).min(i64::MAX as u128) as i64
}
