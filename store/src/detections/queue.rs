//! Alerts about newly flagged rules: one delivery per enabled channel
//! whose service pattern matches, queued in the transaction that stores
//! the detections. The outbox's senders are `crate::alerts`.

use uuid::Uuid;

use super::AlertSubject;
use crate::sql::{Sql, Tx};
use crate::Result;

/// What the backends write differently in queuing deliveries.
pub(crate) struct Dialect {
    /// A new random uuid.
    pub(crate) new_id: &'static str,
    /// Ends the insert: a delivery queued before (the rule was flagged,
    /// cleared, and flagged again) stays as it is.
    pub(crate) keep_queued: &'static str,
}

/// The LIKE pattern (escaped with `!`) a channel's service glob
/// (`*`, `?`) stands for, as SQL over the column `c.service_pattern`:
/// LIKE's own wildcards and the escape are escaped first, then `*` and `?`
/// translated. `!` rather than `\` because MySQL string literals treat a
/// backslash as an escape of their own.
pub(crate) const SERVICE_LIKE_PATTERN: &str = "replace(replace(replace(replace(replace(\
     c.service_pattern, '!', '!!'), '%', '!%'), '_', '!_'), '*', '%'), '?', '_')";

/// Queues one delivery per enabled channel whose pattern matches the
/// service, for each of `rule_ids` (whose detections `tx` just inserted),
/// as `dialect` (`tx`'s backend's) writes it.
pub(super) async fn queue_alerts(
    tx: &mut Tx,
    dialect: &Dialect,
    profile_id: Uuid,
    subject: AlertSubject<'_>,
    rule_ids: &[String],
) -> Result<u64> {
    let queued = Sql::new(format!(
        "insert into alert_deliveries (id, profile_id, rule_id, channel_id, service, host,
                                       share, threshold_pct, stacks, detected_at)
         select {new_id}, d.profile_id, d.rule_id, c.id, $3, $4,
                d.share, d.threshold_pct, d.stacks, d.first_evaluated_at
         from detections d cross join alert_channels c
         where d.profile_id = $1 and d.rule_id in $2 and c.enabled
           and $3 like {SERVICE_LIKE_PATTERN} escape '!'
         {keep_queued}",
        new_id = dialect.new_id,
        keep_queued = dialect.keep_queued,
    ))
    .bind(profile_id)
    .bind_list(rule_ids)
    .bind(subject.service)
    .bind(subject.host)
    .execute(tx)
    .await?;
    if queued > 0 {
        tracing::debug!(%profile_id, queued, "alerts queued");
    }
    Ok(queued)
}
