//! The outbox of deliveries to alert channels (see [`crate::channels`]).
//!
//! A delivery is queued in the transaction that first stores a detection
//! (by [`crate::save_detections`]) and is unique per (profile, rule,
//! channel). Senders claim due deliveries with `for update skip locked`
//! and lease them by pushing `next_attempt_at` past the send's timeout, so
//! several senders never send one delivery at the same time and a crashed
//! sender's claim comes back once its lease runs out.

use std::time::Duration;

use chrono::{DateTime, Utc};
use odp_rules::StackHit;
use sqlx::types::Json;
use uuid::Uuid;

use crate::channels::TextList;
use crate::database::Database;
use crate::detections::{name_stacks, IssueStack};
use crate::sql::{Sql, Tx};
use crate::Result;

mod mysql;
mod postgres;

/// Ends the insert of an attempt as `tx`'s backend writes it: one logged
/// before (a repeated call) stays as it is.
fn keep_logged(tx: &Tx) -> &'static str {
    match tx {
        Tx::Postgres(_) => postgres::KEEP_LOGGED,
        Tx::MySql(_) => mysql::KEEP_LOGGED,
    }
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
    let rows = claim_due_rows(&db, limit, lease).await?;
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

/// The due deliveries, locked, then leased, then read with their channel
/// and rule, in one transaction.
async fn claim_due_rows(db: &Database, limit: u32, lease: Duration) -> Result<Vec<DueRow>> {
    let mut tx = db.begin().await?;
    let due: Vec<Uuid> = Sql::new(
        "select id from alert_deliveries
         where status = 'pending' and next_attempt_at <= {now}
         order by next_attempt_at
         limit $1
         for update skip locked",
    )
    .bind(i64::from(limit))
    .fetch_column(&mut tx)
    .await?;
    if due.is_empty() {
        tx.commit().await?;
        return Ok(Vec::new());
    }
    Sql::new("update alert_deliveries set next_attempt_at = {now} + $1 where id in $2")
        .bind(lease)
        .bind_list(&due)
        .execute(&mut tx)
        .await?;
    let rows = Sql::new(
        "select a.id, a.attempts, a.channel_id, c.kind, c.url, c.secret, c.email_from,
                c.email_to, a.profile_id, a.service, a.host, a.rule_id, r.title,
                r.explanation, r.fix, r.link, a.share, a.threshold_pct, a.stacks,
                a.detected_at
         from alert_deliveries a
         join alert_channels c on c.id = a.channel_id
         join rules r on r.id = a.rule_id
         where a.id in $1
         order by a.next_attempt_at",
    )
    .bind_list(&due)
    .fetch_all(&mut tx)
    .await?;
    tx.commit().await?;
    Ok(rows)
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
    let mut tx = db.into().begin().await?;
    Sql::new(format!(
        "insert into alert_attempts (delivery_id, attempt, status_code, error, success)
         values ($1, $2, $3, $4, $5)
         {}",
        keep_logged(&tx),
    ))
    .bind(delivery_id)
    .bind(attempt as i32)
    .bind(outcome.status_code.map(i32::from))
    .bind(&outcome.error)
    .bind(outcome.success)
    .execute(&mut tx)
    .await?;
    Sql::new(
        "update alert_deliveries
         set attempts = greatest(attempts, $2), status = $3,
             next_attempt_at = {now} + $4,
             finished_at = case when $3 = 'pending' then null else {now} end
         where id = $1 and status = 'pending'",
    )
    .bind(delivery_id)
    .bind(attempt as i32)
    .bind(outcome.delivery_status())
    .bind(outcome.retry_in.unwrap_or(Duration::ZERO))
    .execute(&mut tx)
    .await?;
    tx.commit().await?;
    Ok(())
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
