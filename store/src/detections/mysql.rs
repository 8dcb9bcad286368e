//! How MySQL and MariaDB replace a profile's detections (without `xmax`,
//! the rules a profile already had are read, and locked, before the
//! upsert; the new ones are the rest) and queue their alerts.

use std::collections::HashSet;

use odp_rules::Detection;
use sqlx::types::Json;
use sqlx::{MySql, MySqlConnection, QueryBuilder};
use uuid::Uuid;

use super::delete_cleared;
use super::queue::Dialect;
use crate::sql::Sql;
use crate::Result;

/// A no-op update stands for `on conflict do nothing`, qualified: the
/// insert's select joins tables with an `id` too.
pub(super) const QUEUE: Dialect = Dialect {
    new_id: "unhex(replace(uuid(), '-', ''))",
    keep_queued: "on duplicate key update alert_deliveries.id = alert_deliveries.id",
};

/// Writes `found` over the profile's detections; the rules newly flagged.
pub(super) async fn replace_detections(
    tx: &mut MySqlConnection,
    profile_id: Uuid,
    found: &[Detection],
) -> Result<Vec<String>> {
    // Locks the profile's rows so a concurrent evaluation waits, then sees
    // what this one wrote.
    let had: HashSet<String> =
        Sql::new("select rule_id from detections where profile_id = $1 for update")
            .bind(profile_id)
            .fetch_column(&mut *tx)
            .await?
            .into_iter()
            .collect();
    delete_cleared(profile_id, found).execute(&mut *tx).await?;
    if !found.is_empty() {
        let mut upsert = QueryBuilder::<MySql>::new(
            "insert into detections (profile_id, rule_id, share, threshold_pct, \
             samples_matched, samples_total, stacks, detail) ",
        );
        upsert.push_values(found, |mut row, d| {
            row.push_bind(profile_id)
                .push_bind(&d.rule_id)
                .push_bind(d.share)
                .push_bind(d.threshold_pct)
                .push_bind(i64::try_from(d.samples_matched).unwrap_or(i64::MAX))
                .push_bind(i64::try_from(d.samples_total).unwrap_or(i64::MAX))
                .push_bind(Json(&d.stacks))
                .push_bind(Json(&d.detail));
        });
        upsert.push(
            " on duplicate key update share = values(share), \
             threshold_pct = values(threshold_pct), samples_matched = values(samples_matched), \
             samples_total = values(samples_total), stacks = values(stacks), \
             detail = values(detail), last_evaluated_at = now(6)",
        );
        upsert.build().execute(&mut *tx).await?;
    }
    let mut new: Vec<String> = Vec::new();
    for d in found {
        if !had.contains(&d.rule_id) && !new.contains(&d.rule_id) {
            new.push(d.rule_id.clone());
        }
    }
    Ok(new)
}
