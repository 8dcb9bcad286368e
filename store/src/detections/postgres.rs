//! How Postgres replaces a profile's detections (one upsert from a JSON
//! recordset, which tells the rows it inserted from those it updated by
//! `xmax = 0`) and queues their alerts.

use odp_rules::Detection;
use sqlx::PgConnection;
use uuid::Uuid;

use super::delete_cleared;
use super::queue::Dialect;
use crate::sql::{Arg, Sql};
use crate::Result;

pub(super) const QUEUE: Dialect = Dialect {
    new_id: "gen_random_uuid()",
    keep_queued: "on conflict (profile_id, rule_id, channel_id) do nothing",
};

/// Writes `found` over the profile's detections; the rules newly flagged.
pub(super) async fn replace_detections(
    tx: &mut PgConnection,
    profile_id: Uuid,
    found: &[Detection],
) -> Result<Vec<String>> {
    delete_cleared(profile_id, found).execute(&mut *tx).await?;
    let new: Vec<Option<String>> = Sql::new(
        "insert into detections (profile_id, rule_id, share, threshold_pct, samples_matched,
                                 samples_total, stacks, detail)
         select $1, rule_id, share, threshold_pct, samples_matched, samples_total, stacks,
                coalesce(detail, 'null')
         from jsonb_to_recordset($2) as d(rule_id text, share float8, threshold_pct float8,
             samples_matched bigint, samples_total bigint, stacks jsonb, detail jsonb)
         on conflict (profile_id, rule_id) do update set
             share = excluded.share, threshold_pct = excluded.threshold_pct,
             samples_matched = excluded.samples_matched, samples_total = excluded.samples_total,
             stacks = excluded.stacks, detail = excluded.detail, last_evaluated_at = now()
         returning case when xmax = 0 then rule_id end",
    )
    .bind(profile_id)
    .bind(Arg::json(found)?)
    .fetch_column(tx)
    .await?;
    Ok(new.into_iter().flatten().collect())
}
