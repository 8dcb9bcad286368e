//! The imported profile's row in MySQL and MariaDB: inserted, then read
//! back in the same transaction (no `returning`).

use sqlx::types::Json;
use sqlx::MySqlPool;

use super::ImportedProfile;
use crate::{ProfileRow, Result};

pub(super) async fn insert_finished(
    pool: &MySqlPool,
    p: &ImportedProfile<'_>,
) -> Result<ProfileRow> {
    let s = p.snapshot;
    let mut tx = pool.begin().await?;
    sqlx::query(
        "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                               requested_by, event, agent_id, started_at, finished_at)
         values (?, ?, ?, ?, ?, ?, 'finished', ?, ?, ?, ?, ?)",
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
    .execute(&mut *tx)
    .await?;
    let row = sqlx::query_as::<_, ProfileRow>("select * from profiles where id = ?")
        .bind(s.profile_id)
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(row)
}
