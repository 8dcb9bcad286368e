//! Alert channels and the outbox in Postgres.

use std::time::Duration;

use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{
    whole, AttemptOutcome, ChannelRow, DueRow, NewChannel, CHANNEL_COLUMNS, SERVICE_LIKE_PATTERN,
};
use crate::detections::AlertSubject;
use crate::Result;

/// The new channel, or `None` when its name is taken.
pub(super) async fn create_channel(
    pool: &PgPool,
    id: Uuid,
    channel: &NewChannel,
) -> Result<Option<ChannelRow>> {
    Ok(sqlx::query_as(&format!(
        "insert into alert_channels (id, name, kind, url, secret, service_pattern, enabled,
                                     email_from, email_to)
         values ($1, $2, $3, $4, coalesce($5, ''), $6, $7, $8, $9)
         on conflict (name) do nothing
         returning {CHANNEL_COLUMNS}"
    ))
    .bind(id)
    .bind(&channel.name)
    .bind(channel.kind.as_str())
    .bind(&channel.url)
    .bind(&channel.secret)
    .bind(&channel.service_pattern)
    .bind(channel.enabled)
    .bind(&channel.email_from)
    .bind(&channel.email_to)
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn list_channels(pool: &PgPool) -> Result<Vec<ChannelRow>> {
    Ok(sqlx::query_as(&format!(
        "select {CHANNEL_COLUMNS} from alert_channels order by name"
    ))
    .fetch_all(pool)
    .await?)
}

/// Queues one delivery per enabled channel whose pattern matches the
/// service, for each of `rule_ids` (whose detections the caller's
/// transaction just inserted).
pub(crate) async fn enqueue(
    tx: &mut PgConnection,
    profile_id: Uuid,
    subject: AlertSubject<'_>,
    rule_ids: &[String],
) -> Result<u64> {
    let queued = sqlx::query(&format!(
        "insert into alert_deliveries (id, profile_id, rule_id, channel_id, service, host,
                                       share, threshold_pct, stacks, detected_at)
         select gen_random_uuid(), d.profile_id, d.rule_id, c.id, $3, $4,
                d.share, d.threshold_pct, d.stacks, d.first_evaluated_at
         from detections d cross join alert_channels c
         where d.profile_id = $1 and d.rule_id = any($2) and c.enabled
           and $3 like {SERVICE_LIKE_PATTERN} escape '!'
         on conflict (profile_id, rule_id, channel_id) do nothing"
    ))
    .bind(profile_id)
    .bind(rule_ids)
    .bind(subject.service)
    .bind(subject.host)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if queued > 0 {
        tracing::debug!(%profile_id, queued, "alerts queued");
    }
    Ok(queued)
}

pub(super) async fn claim_due_rows(
    pool: &PgPool,
    limit: u32,
    lease: Duration,
) -> Result<Vec<DueRow>> {
    Ok(sqlx::query_as(
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
    .bind(whole(lease, Duration::from_millis(1)))
    .fetch_all(pool)
    .await?)
}

pub(super) async fn record_attempt(
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
    let retry_ms = outcome
        .retry_in
        .map_or(0, |d| whole(d, Duration::from_millis(1)));
    sqlx::query(
        "update alert_deliveries
         set attempts = greatest(attempts, $2), status = $3,
             next_attempt_at = now() + $4::float8 * interval '1 millisecond',
             finished_at = case when $3 = 'pending' then null else now() end
         where id = $1 and status = 'pending'",
    )
    .bind(delivery_id)
    .bind(attempt as i32)
    .bind(outcome.delivery_status())
    .bind(retry_ms)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}
