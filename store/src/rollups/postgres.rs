//! Service rollups in Postgres.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::Result;

/// Locks the pending blocks among `$1` that no other worker has locked:
/// (id, block, seconds since built).
pub(super) const LOCK_PENDING: &str =
    "select profile_id, block, extract(epoch from now() - built_at)::float8
     from profile_blocks where profile_id = any($1) and rollup = 'pending'
     for update skip locked";

/// Writes a rollup, replacing the one stored: `$1` service, `$2` hour,
/// `$3` windows, `$4` samples, `$5` block.
pub(super) const SAVE_ROLLUP: &str =
    "insert into service_rollups (service, hour, windows, samples, block)
     values ($1, $2, $3, $4, $5)
     on conflict (service, hour) do update set windows = excluded.windows,
         samples = excluded.samples, block = excluded.block, built_at = {now}";

/// Locks the rollups of the hours `$1`, in the key order in which
/// [`super::add_parts`] locks them: (service, hour, block).
pub(super) const LOCK_HOURS: &str =
    "select service, hour, block from service_rollups where hour = any($1)
     order by service, hour for update";

pub(super) async fn load(
    pool: &PgPool,
    service: &str,
    hours: &[DateTime<Utc>],
) -> Result<Vec<Vec<u8>>> {
    Ok(sqlx::query_scalar(
        "select block from service_rollups where service = $1 and hour = any($2) order by hour",
    )
    .bind(service)
    .bind(hours)
    .fetch_all(pool)
    .await?)
}
