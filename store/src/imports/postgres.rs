//! The imported profile's row in Postgres.

use sqlx::types::Json;
use sqlx::PgPool;

use super::ImportedProfile;
use crate::{ProfileRow, Result};

pub(super) async fn insert_finished(pool: &PgPool, p: &ImportedProfile<'_>) -> Result<ProfileRow> {
    let s = p.snapshot;
    Ok(sqlx::query_as::<_, ProfileRow>(
        "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                               requested_by, event, agent_id, started_at, finished_at)
         values ($1, $2, $3, $4, $5, $6, 'finished', $7, $8, $9, $10, $11)
         returning *",
    )
    .bind(s.profile_id)
    .bind(&s.host)
    .bind(p.service)
    .bind(Json(&p.target))
    .bind(s.window_end_ms - s.window_start_ms)
    .bind(p.frequency_hz)
    .bind(p.requested_by)
    .bind(s.event.as_str())
    .bind(&s.agent_id)
    .bind(p.started)
    .bind(p.finished)
    .fetch_one(pool)
    .await?)
}
