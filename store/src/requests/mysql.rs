//! Resolving control requests in MySQL and MariaDB: `update … join`.
//! MySQL assigns `set` clauses left to right, each seeing the ones before;
//! none of these reads a column its statement sets.

use sqlx::MySqlPool;

use crate::Result;

/// Ends the stop requests whose profile has ended.
pub(super) async fn finish_stopped(pool: &MySqlPool) -> Result<u64> {
    let done = sqlx::query(
        "update control_requests r join profiles p on p.id = r.profile_id
         set r.status = 'finished', r.status_reason = concat('the profile ended ', p.status),
             r.updated_at = now(6)
         where r.kind = 'stop' and r.status = 'dispatched'
           and p.status in ('finished', 'stopped', 'failed', 'expired')",
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}
