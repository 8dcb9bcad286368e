//! What profiles do differently in Postgres: `jsonb` containment and the
//! live target compared as `jsonb`.

use sqlx::types::Json;
use sqlx::PgPool;

use super::{push_filters, NewProfile, ProfileFilter, ProfileRow, LIVE};
use crate::Result;

/// The target's live profile of `p`'s mode, which a unique key just
/// refused `p` for.
pub(super) async fn live_profile_of(pool: &PgPool, p: &NewProfile) -> Result<Option<ProfileRow>> {
    Ok(sqlx::query_as::<_, ProfileRow>(
        "select * from profiles
         where host = $1 and mode = $3 and target = $2 and status = any($4)",
    )
    .bind(&p.host)
    .bind(Json(&p.target))
    .bind(p.mode.as_str())
    .bind(LIVE.map(|s| s.as_str()))
    .fetch_optional(pool)
    .await?)
}

pub(super) async fn list(pool: &PgPool, filter: &ProfileFilter) -> Result<Vec<ProfileRow>> {
    let mut q = sqlx::QueryBuilder::<sqlx::Postgres>::new("select * from profiles where true");
    push_filters(&mut q, filter, |q, labels| {
        q.push(" and labels @> ").push_bind(Json(labels));
    });
    Ok(q.build_query_as::<ProfileRow>().fetch_all(pool).await?)
}
