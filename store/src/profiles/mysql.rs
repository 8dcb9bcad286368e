//! What profiles do differently in MySQL and MariaDB: `json_contains`,
//! and the live target found through the generated key the unique index
//! is over (see docs/mysql-schema.md).

use sqlx::{MySql, MySqlPool, QueryBuilder};

use super::{push_filters, NewProfile, ProfileFilter, ProfileRow};
use crate::sql::{Arg, Sql};
use crate::Result;

/// The target's live profile of `p`'s mode, which a unique key just
/// refused `p` for.
pub(super) async fn live_profile_of(
    pool: &MySqlPool,
    p: &NewProfile,
) -> Result<Option<ProfileRow>> {
    // The same expression as the generated column the unique key is over,
    // so the target matches as the key compared it.
    Sql::new(
        "select * from profiles
         where host = $1 and mode = $2
           and live_target_key = unhex(sha2(json_extract($3, '$'), 256))",
    )
    .bind(&p.host)
    .bind(p.mode.as_str())
    .bind(Arg::json(&p.target)?)
    .fetch_optional(pool)
    .await
}

pub(super) async fn list(pool: &MySqlPool, filter: &ProfileFilter) -> Result<Vec<ProfileRow>> {
    let mut q = QueryBuilder::<MySql>::new("select * from profiles where true");
    push_filters(&mut q, filter, |q, labels| {
        q.push(" and json_contains(labels, ")
            .push_bind(sqlx::types::Json(labels))
            .push(")");
    });
    Ok(q.build_query_as::<ProfileRow>().fetch_all(pool).await?)
}
