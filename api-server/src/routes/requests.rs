//! `GET /api/v1/requests`: the control requests (deploy, undeploy, stop)
//! with who asked, when, and how each went; newest first.

use axum::Json;
use odp_api_types::{ControlRequest, RequestList};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppPath, AppQuery};
use crate::openapi::{CommonErrors, NotFound};
use crate::service::requests;
use crate::views;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(describe))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// deploy, undeploy or stop.
    kind: Option<String>,
    #[param(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    host: Option<String>,
    /// Only requests still under way.
    #[serde(default)]
    open: bool,
    /// How many; 50 when absent.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

/// Deploy, undeploy and stop requests, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/requests",
    operation_id = "list_requests",
    tag = "control",
    params(ListQuery),
    responses(
        (status = 200, description = "The requests", body = RequestList),
        CommonErrors,
    ),
)]
async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Json<RequestList>, ApiError> {
    caller.require(Role::Viewer)?;
    let requests = requests::list(
        &state,
        query.kind.as_deref(),
        query.host,
        query.open,
        query.limit,
    )
    .await?;
    Ok(Json(requests))
}

/// One request: who asked, when, and how it went.
#[utoipa::path(
    get,
    path = "/api/v1/requests/{id}",
    operation_id = "describe_request",
    tag = "control",
    params(("id" = Uuid, Path, description = "Request id")),
    responses(
        (status = 200, description = "The request", body = ControlRequest),
        NotFound,
        CommonErrors,
    ),
)]
async fn describe(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<ControlRequest>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(views::control_request(state.control.load(id).await?)))
}
