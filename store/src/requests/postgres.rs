//! Resolving control requests in Postgres: `update … from`.

use sqlx::PgPool;

use crate::Result;

/// Ends the stop requests whose profile has ended.
pub(super) async fn finish_stopped(pool: &PgPool) -> Result<u64> {
    let done = sqlx::query(
        "update control_requests r
         set status = 'finished', status_reason = 'the profile ended ' || p.status,
             updated_at = now()
         from profiles p
         where r.kind = 'stop' and r.status = 'dispatched' and p.id = r.profile_id
           and p.status in ('finished', 'stopped', 'failed', 'expired')",
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}
