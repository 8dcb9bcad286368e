//! A profile's windows over time: per snapshot its host, bounds, event,
//! samples and sampling frequency, so a UI can plot activity and pick a
//! time window for the flame graph.

use axum::Json;
use odp_api_types::TimelineJson;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::AppPath;
use crate::openapi::{CommonErrors, NotFound};
use crate::service::timeline;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(timeline))
}

/// A profile's windows in time order: host, bounds, event and samples.
#[utoipa::path(
    get,
    path = "/api/v1/profiles/{id}/timeline",
    operation_id = "timeline",
    tag = "queries",
    params(("id" = Uuid, Path, description = "Profile id")),
    responses(
        (status = 200, description = "The profile's windows", body = TimelineJson),
        NotFound,
        CommonErrors,
    ),
)]
async fn timeline(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<TimelineJson>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(timeline::of_profile(&state, id).await?))
}
