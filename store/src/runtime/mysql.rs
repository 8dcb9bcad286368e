//! The runtime's fields of a `profile_started` event, in MySQL and
//! MariaDB. Each field is extracted on its own and the object built here:
//! MariaDB's JSON functions return text, which `json_object` would nest as
//! a string.

use sqlx::types::Json;
use sqlx::MySqlPool;
use uuid::Uuid;

use crate::Result;

type Field = Option<Json<serde_json::Value>>;

/// The fields read of the latest `profile_started` event, as one object.
pub(super) async fn runtime_fields(
    pool: &MySqlPool,
    profile_id: Uuid,
) -> Result<Option<serde_json::Value>> {
    // Only the fields read, not the whole event.
    let fields: Option<(Field, Field, Field)> = sqlx::query_as(
        "select json_extract(body, '$.language'), json_extract(body, '$.runtime_version'),
                json_extract(body, '$.runtime')
         from profile_events
         where profile_id = ? and kind = 'profile_started'
         order by `at` desc, id desc
         limit 1",
    )
    .bind(profile_id)
    .fetch_optional(pool)
    .await?;
    Ok(fields.map(|(language, runtime_version, runtime)| {
        let value = |field: Field| field.map_or(serde_json::Value::Null, |json| json.0);
        serde_json::json!({
            "language": value(language),
            "runtime_version": value(runtime_version),
            "runtime": runtime.map_or_else(|| serde_json::json!({}), |json| json.0),
        })
    }))
}
