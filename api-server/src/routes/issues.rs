//! Common issue detection (ODP §3): what the rules found in a profile, and
//! the rules themselves. The pipeline evaluates; this only reads.

use axum::Json;
use odp_api_types::{IssuesResponse, RulesResponse};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::AppPath;
use crate::openapi::{CommonErrors, NotFound};
use crate::service::{issues, rules};
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(profile_issues))
        .routes(routes!(rules))
}

/// The common issues the detection rules found in a profile.
#[utoipa::path(
    get,
    path = "/api/v1/profiles/{id}/issues",
    operation_id = "profile_issues",
    tag = "queries",
    params(("id" = Uuid, Path, description = "Profile id")),
    responses(
        (status = 200, description = "The profile's detections", body = IssuesResponse),
        NotFound,
        CommonErrors,
    ),
)]
async fn profile_issues(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<IssuesResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(issues::of_profile(&state, id).await?))
}

/// The detection rules.
#[utoipa::path(
    get,
    path = "/api/v1/rules",
    operation_id = "list_rules",
    tag = "queries",
    responses(
        (status = 200, description = "Every rule, seed and user", body = RulesResponse),
        CommonErrors,
    ),
)]
async fn rules(
    state: axum::extract::State<AppState>,
    caller: Caller,
) -> Result<Json<RulesResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(RulesResponse {
        rules: rules::list(&state.pool).await?,
    }))
}
