//! Stacks and frames stored as rows, in MySQL and MariaDB (chunked
//! `in (?, …)` lists).

use sqlx::MySqlPool;
use uuid::Uuid;

use crate::blocks::mysql::fetch_in;
use crate::Result;

/// `(id, frame_ids)` of the stacks `ids`.
pub(super) async fn stacks(pool: &MySqlPool, ids: &[Uuid]) -> Result<Vec<(Uuid, Vec<u8>)>> {
    let mut conn = pool.acquire().await?;
    fetch_in(
        &mut conn,
        "select id, frame_ids from stacks where id in ",
        ids,
        "",
    )
    .await
}

/// `(id, function, module)` of the frames `ids`.
pub(super) async fn frames(pool: &MySqlPool, ids: &[Uuid]) -> Result<Vec<(Uuid, String, String)>> {
    let mut conn = pool.acquire().await?;
    fetch_in(
        &mut conn,
        "select id, `function`, module from frames where id in ",
        ids,
        "",
    )
    .await
}
