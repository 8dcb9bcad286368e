//! Alert channels and the outbox in MySQL and MariaDB: a taken name is
//! error 1062 rather than `on conflict do nothing`, and a claim is
//! select-for-update-skip-locked, update, re-select in one transaction
//! instead of one statement with data-modifying CTEs.

use std::time::Duration;

use sqlx::types::Json;
use sqlx::{MySql, MySqlConnection, MySqlPool, QueryBuilder};
use uuid::Uuid;

use super::{
    whole, AttemptOutcome, ChannelRow, DueRow, NewChannel, CHANNEL_COLUMNS, SERVICE_LIKE_PATTERN,
};
use crate::database::push_in_list;
use crate::detections::AlertSubject;
use crate::{Result, StoreError};

/// Whether `error` is a duplicate key (1062).
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// The new channel, or `None` when its name is taken.
pub(super) async fn create_channel(
    pool: &MySqlPool,
    id: Uuid,
    channel: &NewChannel,
) -> Result<Option<ChannelRow>> {
    let inserted = sqlx::query(
        "insert into alert_channels (id, name, kind, url, secret, service_pattern, enabled,
                                     email_from, email_to)
         values (?, ?, ?, ?, coalesce(?, ''), ?, ?, ?, ?)",
    )
    .bind(id)
    .bind(&channel.name)
    .bind(channel.kind.as_str())
    .bind(&channel.url)
    .bind(&channel.secret)
    .bind(&channel.service_pattern)
    .bind(channel.enabled)
    .bind(&channel.email_from)
    .bind(Json(&channel.email_to))
    .execute(pool)
    .await;
    match inserted {
        Ok(_) => {}
        // The id is fresh, so the only key that can collide is the name.
        Err(e) if is_unique_violation(&e) => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let row = crate::channels::mysql::get_channel(pool, id).await?;
    row.map(Some)
        .ok_or_else(|| StoreError::Corrupt(format!("alert channel {id} vanished")))
}

pub(super) async fn list_channels(pool: &MySqlPool) -> Result<Vec<ChannelRow>> {
    Ok(sqlx::query_as(&format!(
        "select {CHANNEL_COLUMNS} from alert_channels order by name"
    ))
    .fetch_all(pool)
    .await?)
}

/// Queues one delivery per enabled channel whose pattern matches the
/// service, for each of `rule_ids` (whose detections the caller's
/// transaction just inserted). A delivery queued before (the rule was
/// flagged, cleared, and flagged again) stays as it is: `id = id` is the
/// no-op update that stands for `on conflict do nothing` (qualified: the
/// select joins tables with an `id` too).
pub(crate) async fn enqueue(
    tx: &mut MySqlConnection,
    profile_id: Uuid,
    subject: AlertSubject<'_>,
    rule_ids: &[String],
) -> Result<u64> {
    let mut query = QueryBuilder::<MySql>::new(
        "insert into alert_deliveries (id, profile_id, rule_id, channel_id, service, host, \
         share, threshold_pct, stacks, detected_at) \
         select unhex(replace(uuid(), '-', '')), d.profile_id, d.rule_id, c.id, ",
    );
    query
        .push_bind(subject.service)
        .push(", ")
        .push_bind(subject.host)
        .push(
            ", d.share, d.threshold_pct, d.stacks, d.first_evaluated_at \
             from detections d cross join alert_channels c \
             where c.enabled and d.profile_id = ",
        )
        .push_bind(profile_id)
        .push(" and d.rule_id in ");
    push_in_list(&mut query, rule_ids.iter());
    query
        .push(" and ")
        .push_bind(subject.service)
        .push(format!(" like {SERVICE_LIKE_PATTERN} escape '!'"))
        .push(" on duplicate key update alert_deliveries.id = alert_deliveries.id");
    let queued = query.build().execute(&mut *tx).await?.rows_affected();
    if queued > 0 {
        tracing::debug!(%profile_id, queued, "alerts queued");
    }
    Ok(queued)
}

pub(super) async fn claim_due_rows(
    pool: &MySqlPool,
    limit: u32,
    lease: Duration,
) -> Result<Vec<DueRow>> {
    let mut tx = pool.begin().await?;
    let due: Vec<Uuid> = sqlx::query_scalar(
        "select id from alert_deliveries
         where status = 'pending' and next_attempt_at <= now(6)
         order by next_attempt_at
         limit ?
         for update skip locked",
    )
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await?;
    if due.is_empty() {
        tx.commit().await?;
        return Ok(Vec::new());
    }
    let mut lease_them = QueryBuilder::<MySql>::new(
        "update alert_deliveries set next_attempt_at = now(6) + interval ",
    );
    lease_them
        .push_bind(whole(lease, Duration::from_micros(1)))
        .push(" microsecond where id in ");
    push_in_list(&mut lease_them, due.iter());
    lease_them.build().execute(&mut *tx).await?;
    let mut claimed = QueryBuilder::<MySql>::new(
        "select a.id, a.attempts, a.channel_id, c.kind, c.url, c.secret, c.email_from, \
         c.email_to, a.profile_id, a.service, a.host, a.rule_id, r.title, r.explanation, \
         r.fix, r.link, a.share, a.threshold_pct, a.stacks, a.detected_at \
         from alert_deliveries a \
         join alert_channels c on c.id = a.channel_id \
         join rules r on r.id = a.rule_id \
         where a.id in ",
    );
    push_in_list(&mut claimed, due.iter());
    claimed.push(" order by a.next_attempt_at");
    let rows = claimed.build_query_as().fetch_all(&mut *tx).await?;
    tx.commit().await?;
    Ok(rows)
}

pub(super) async fn record_attempt(
    pool: &MySqlPool,
    delivery_id: Uuid,
    attempt: u32,
    outcome: &AttemptOutcome,
) -> Result<()> {
    let mut tx = pool.begin().await?;
    let logged = sqlx::query(
        "insert into alert_attempts (delivery_id, attempt, status_code, error, success)
         values (?, ?, ?, ?, ?)",
    )
    .bind(delivery_id)
    .bind(attempt as i32)
    .bind(outcome.status_code.map(i32::from))
    .bind(&outcome.error)
    .bind(outcome.success)
    .execute(&mut *tx)
    .await;
    match logged {
        // This attempt was logged already (a repeated call): keep the first.
        Err(e) if is_unique_violation(&e) => {}
        Err(e) => return Err(e.into()),
        Ok(_) => {}
    }
    let retry_us = outcome
        .retry_in
        .map_or(0, |d| whole(d, Duration::from_micros(1)));
    let status = outcome.delivery_status();
    sqlx::query(
        "update alert_deliveries
         set attempts = greatest(attempts, ?), status = ?,
             next_attempt_at = now(6) + interval ? microsecond,
             finished_at = case when ? = 'pending' then null else now(6) end
         where id = ? and status = 'pending'",
    )
    .bind(attempt as i32)
    .bind(status)
    .bind(retry_us)
    .bind(status)
    .bind(delivery_id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}
