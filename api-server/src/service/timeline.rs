//! A profile's windows over time, as the API shows them.

use odp_api_types::TimelineJson;
use uuid::Uuid;

use crate::service::profiles;
use crate::service_error::ServiceError;
use crate::AppState;

/// Profile `id`'s windows in time order (not found when there is no such
/// profile).
pub(crate) async fn of_profile(state: &AppState, id: Uuid) -> Result<TimelineJson, ServiceError> {
    profiles::get(&state.profiles, id).await?;
    let windows = odp_store::profile_timeline(&state.pool, id).await?;
    Ok(TimelineJson {
        profile_id: id,
        windows,
    })
}
