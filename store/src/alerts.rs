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
use sqlx::types::Json;
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use odp_api_types::ChannelKind;

use odp_rules::StackHit;

use crate::detections::{name_stacks, AlertSubject, IssueStack};
use crate::{Result, StoreError};

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
    pub email_to: Vec<String>,
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
pub async fn create_channel(pool: &PgPool, channel: &NewChannel) -> Result<ChannelRow> {
    let inserted: Option<ChannelRow> = sqlx::query_as(&format!(
        "insert into alert_channels (id, name, kind, url, secret, service_pattern, enabled,
                                     email_from, email_to)
         values ($1, $2, $3, $4, coalesce($5, ''), $6, $7, $8, $9)
         on conflict (name) do nothing
         returning {CHANNEL_COLUMNS}"
    ))
    .bind(Uuid::new_v4())
    .bind(&channel.name)
    .bind(channel.kind.as_str())
    .bind(&channel.url)
    .bind(&channel.secret)
    .bind(&channel.service_pattern)
    .bind(channel.enabled)
    .bind(&channel.email_from)
    .bind(&channel.email_to)
    .fetch_optional(pool)
    .await?;
    inserted.ok_or_else(|| {
        StoreError::Conflict(format!("alert channel {:?} already exists", channel.name))
    })
}

/// All channels, by name.
pub async fn list_channels(pool: &PgPool) -> Result<Vec<ChannelRow>> {
    Ok(sqlx::query_as(&format!(
        "select {CHANNEL_COLUMNS} from alert_channels order by name"
    ))
    .fetch_all(pool)
    .await?)
}

/// Queues one delivery per enabled channel whose pattern matches the
/// service, for each of `rule_ids` (whose detections `tx` just inserted).
pub(crate) async fn enqueue(
    tx: &mut Transaction<'_, Postgres>,
    profile_id: Uuid,
    subject: AlertSubject<'_>,
    rule_ids: &[String],
) -> Result<u64> {
    // The glob becomes a LIKE pattern: LIKE's own wildcards and escape are
    // escaped first, then `*` and `?` translated.
    let queued = sqlx::query(
        r"insert into alert_deliveries (id, profile_id, rule_id, channel_id, service, host,
                                        share, threshold_pct, stacks, detected_at)
          select gen_random_uuid(), d.profile_id, d.rule_id, c.id, $3, $4,
                 d.share, d.threshold_pct, d.stacks, d.first_evaluated_at
          from detections d cross join alert_channels c
          where d.profile_id = $1 and d.rule_id = any($2) and c.enabled
            and $3 like replace(replace(replace(replace(replace(c.service_pattern,
                    '\', '\\'), '%', '\%'), '_', '\_'), '*', '%'), '?', '_')
          on conflict (profile_id, rule_id, channel_id) do nothing",
    )
    .bind(profile_id)
    .bind(rule_ids)
    .bind(subject.service)
    .bind(subject.host)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    if queued > 0 {
        tracing::debug!(%profile_id, queued, "alerts queued");
    }
    Ok(queued)
}

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
struct DueRow {
    id: Uuid,
    attempts: i32,
    channel_id: Uuid,
    kind: String,
    url: String,
    secret: String,
    email_from: Option<String>,
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
    pool: &PgPool,
    limit: u32,
    lease: Duration,
) -> Result<Vec<DueDelivery>> {
    let rows: Vec<DueRow> = sqlx::query_as(
        "with due as (
             select id from alert_deliveries
             where status = 'pending' and next_attempt_at <= now()
             order by next_attempt_at
             limit $1
             for update skip locked
         ), claimed as (
             update alert_deliveries a
             set next_attempt_at = now() + $2::float8 * interval '1 millisecond'
             from due where a.id = due.id
             returning a.*
         )
         select a.id, a.attempts, a.channel_id, c.kind, c.url, c.secret, c.email_from,
                c.email_to, a.profile_id, a.service,
                a.host, a.rule_id, r.title, r.explanation, r.fix, r.link, a.share,
                a.threshold_pct, a.stacks, a.detected_at
         from claimed a
         join alert_channels c on c.id = a.channel_id
         join rules r on r.id = a.rule_id
         order by a.next_attempt_at",
    )
    .bind(i64::from(limit))
    .bind(lease.as_millis().min(i64::MAX as u128) as i64)
    .fetch_all(pool)
    .await?;
    let hits: Vec<&[StackHit]> = rows.iter().map(|r| &r.stacks[..]).collect();
    let named = name_stacks(pool, &hits).await?;
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
    pool: &PgPool,
    delivery_id: Uuid,
    attempt: u32,
    outcome: &AttemptOutcome,
) -> Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "insert into alert_attempts (delivery_id, attempt, status_code, error, success)
         values ($1, $2, $3, $4, $5)
         on conflict (delivery_id, attempt) do nothing",
    )
    .bind(delivery_id)
    .bind(attempt as i32)
    .bind(outcome.status_code.map(i32::from))
    .bind(&outcome.error)
    .bind(outcome.success)
    .execute(&mut *tx)
    .await?;
    let status = match (outcome.success, outcome.retry_in) {
        (true, _) => "delivered",
        (false, Some(_)) => "pending",
        (false, None) => "failed",
    };
    let retry_ms = outcome
        .retry_in
        .map_or(0, |d| d.as_millis().min(i64::MAX as u128) as i64);
    sqlx::query(
        "update alert_deliveries
         set attempts = greatest(attempts, $2), status = $3,
             next_attempt_at = now() + $4::float8 * interval '1 millisecond',
             finished_at = case when $3 = 'pending' then null else now() end
         where id = $1 and status = 'pending'",
    )
    .bind(delivery_id)
    .bind(attempt as i32)
    .bind(status)
    .bind(retry_ms)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}
