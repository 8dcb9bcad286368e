//! `GET /api/v1/profiles`: profiles filtered by service, host, status and
//! time range, newest first, paginated with an opaque cursor (keyset
//! pagination, so pages stay stable while new profiles arrive).

use axum::Json;
use odp_api_types::ProfilesPage;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::AppQuery;
use crate::openapi::CommonErrors;
use crate::service::profile_list::{self, ListQuery};
use crate::AppState;

/// Profiles, newest first, filtered and paginated.
#[utoipa::path(
    get,
    path = "/api/v1/profiles",
    operation_id = "list_profiles",
    tag = "profiles",
    params(ListQuery),
    responses(
        (status = 200, description = "One page of profiles", body = ProfilesPage),
        CommonErrors,
    ),
)]
pub(crate) async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Json<ProfilesPage>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(profile_list::page(&state.profiles, query).await?))
}
