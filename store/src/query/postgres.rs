//! Stacks and frames stored as rows, in Postgres.

use sqlx::PgPool;
use uuid::Uuid;

use crate::Result;

/// `(id, frame_ids)` of the stacks `ids`.
pub(super) async fn stacks(pool: &PgPool, ids: &[Uuid]) -> Result<Vec<(Uuid, Vec<u8>)>> {
    Ok(
        sqlx::query_as("select id, frame_ids from stacks where id = any($1)")
            .bind(ids)
            .fetch_all(pool)
            .await?,
    )
}

/// `(id, function, module)` of the frames `ids`.
pub(super) async fn frames(pool: &PgPool, ids: &[Uuid]) -> Result<Vec<(Uuid, String, String)>> {
    Ok(
        sqlx::query_as("select id, function, module from frames where id = any($1)")
            .bind(ids)
            .fetch_all(pool)
            .await?,
    )
}
