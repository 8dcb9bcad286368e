//! The runtime a profile's agent reported in its `profile_started` event
//! (kept whole in `profile_events`): the language, the runtime's version,
//! and its flags, libraries and executable, which rules on library
//! versions and runtime options read.

use odp_core::runtime::ProfileRuntime;
use uuid::Uuid;

use crate::database::{on_backend, Database};
use crate::{Result, StoreError};

mod mysql;
mod postgres;

/// The runtime reported by the profile's latest `profile_started` event;
/// `None` when none was received (yet: the event and the first windows
/// travel on different topics).
pub async fn profile_runtime(
    db: impl Into<Database>,
    profile_id: Uuid,
) -> Result<Option<ProfileRuntime>> {
    let db = db.into();
    let body: Option<serde_json::Value> = on_backend!(db, runtime_fields(profile_id))?;
    body.map(|body| {
        serde_json::from_value(body).map_err(|e| {
            StoreError::Corrupt(format!("profile_started of profile {profile_id}: {e}"))
        })
    })
    .transpose()
}
