//! The runtime a profile's agent reported in its `profile_started` event
//! (kept whole in `profile_events`): the language, the runtime's version,
//! and its flags, libraries and executable, which rules on library
//! versions and runtime options read.

use odp_core::runtime::ProfileRuntime;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{Result, StoreError};

/// The runtime reported by the profile's latest `profile_started` event;
/// `None` when none was received (yet: the event and the first windows
/// travel on different topics).
pub async fn profile_runtime(pool: &PgPool, profile_id: Uuid) -> Result<Option<ProfileRuntime>> {
    // Only the fields read, not the whole event.
    let body: Option<serde_json::Value> = sqlx::query_scalar(
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
    .await?;
    body.map(|body| {
        serde_json::from_value(body).map_err(|e| {
            StoreError::Corrupt(format!("profile_started of profile {profile_id}: {e}"))
        })
    })
    .transpose()
}
