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
use odp_rules::run::HostShare;
use odp_rules::StackHit;
use sqlx::types::Json;
use uuid::Uuid;

use crate::columns::List;
use crate::database::Database;
use crate::detections::{name_stacks, IssueStack, RuleText};
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
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DueDelivery {
    pub id: Uuid,
    /// This attempt's number, from 1.
    #[sqlx(skip)]
    pub attempt: u32,
    pub channel_id: Uuid,
    /// `webhook` or `email`.
    pub kind: String,
    /// The webhook's URL, or the email channel's SMTP relay.
    pub url: String,
    pub secret: String,
    pub email_from: Option<String>,
    #[sqlx(try_from = "List<String>")]
    pub email_to: Vec<String>,
    pub profile_id: Uuid,
    pub service: String,
    pub host: String,
    pub rule_id: String,
    #[sqlx(flatten)]
    pub rule: RuleText,
    pub share: f64,
    pub threshold_pct: f64,
    #[sqlx(skip)]
    pub stacks: Vec<IssueStack>,
    pub detected_at: DateTime<Utc>,
    /// For a run's alert: the run, whose merged samples the share is of
    /// (`profile_id` and `host` are then the host's where it is highest).
    pub run_id: Option<Uuid>,
    /// For a run's alert: the hosts where the rule measures most.
    #[sqlx(json)]
    pub hosts: Vec<HostShare>,
    /// What the profile was compared with, for a rule that compares
    /// (`share_regression`: its most recent baseline profile), so the alert
    /// can link the diff.
    #[sqlx(skip)]
    pub compared_with: Option<Uuid>,
}

/// A due delivery as read: the attempts made so far, and the stacks as the
/// detection keeps them (their frames named after).
#[derive(sqlx::FromRow)]
struct DueRow {
    #[sqlx(flatten)]
    delivery: DueDelivery,
    attempts: i32,
    stacks: Json<Vec<StackHit>>,
    /// The detection's detail (absent for a run's alert).
    detail: Option<Json<serde_json::Value>>,
}

/// The most recent profile a detection compared its own with, from its
/// detail's `baseline_profiles`.
fn first_baseline(detail: &serde_json::Value) -> Option<Uuid> {
    detail["baseline_profiles"].get(0)?.as_str()?.parse().ok()
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
    let named = name_stacks(&db, rows, |row| &row.stacks).await?;
    Ok(named
        .into_iter()
        .map(|(row, stacks)| DueDelivery {
            attempt: row.attempts.max(0) as u32 + 1,
            stacks,
            compared_with: row.detail.as_ref().and_then(|d| first_baseline(&d.0)),
            ..row.delivery
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
                a.detected_at, a.run_id, a.hosts, d.detail
         from alert_deliveries a
         join alert_channels c on c.id = a.channel_id
         join rules r on r.id = a.rule_id
         left join detections d on d.profile_id = a.profile_id and d.rule_id = a.rule_id
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
