//! What the detection rules found in a profile, as the API shows it.

use odp_api_types::IssuesResponse;
use uuid::Uuid;

use crate::service::profiles;
use crate::service_error::ServiceError;
use crate::views;
use crate::AppState;

/// The issues found in profile `id` (not found when there is no such
/// profile).
pub(crate) async fn of_profile(state: &AppState, id: Uuid) -> Result<IssuesResponse, ServiceError> {
    profiles::get(&state.profiles, id).await?;
    let issues = odp_store::profile_issues(&state.pool, id).await?;
    Ok(IssuesResponse {
        profile_id: id,
        issues: issues.into_iter().map(views::issue).collect(),
    })
}
