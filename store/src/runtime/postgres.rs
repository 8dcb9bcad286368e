//! The runtime's fields of a `profile_started` event, in Postgres.

use sqlx::PgPool;
use uuid::Uuid;

use crate::Result;

/// The fields read of the latest `profile_started` event, as one object.
pub(super) async fn runtime_fields(
    pool: &PgPool,
    profile_id: Uuid,
) -> Result<Option<serde_json::Value>> {
    // Only the fields read, not the whole event.
    Ok(sqlx::query_scalar(
        "select jsonb_build_object('language', body->'language',
                                   'runtime_version', body->'runtime_version',
                                   'runtime', coalesce(body->'runtime', '{}'))
         from profile_events
         where profile_id = $1 and kind = 'profile_started'
         order by at desc, id desc
         limit 1",
    )
    .bind(profile_id)
    .fetch_optional(pool)
    .await?)
}
