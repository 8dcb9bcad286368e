//! Runs: a service profiled on the hosts chosen from those that run it,
//! with one status, one stop and the precision of its aggregate.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use odp_api_types::{CreateRunRequest, Run, RunPrecision, RunsResponse};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath, AppQuery};
use crate::openapi::{CommonErrors, NotFound};
use crate::service::profiles::StartedBy;
use crate::service::{run_precision, runs};
use crate::validate::validate_name;
use crate::AppState;

mod reads;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(describe))
        .routes(routes!(stop))
        .routes(routes!(precision))
        .merge(reads::router())
}

/// Start a run: one profile per chosen host of a service (profiler of
/// that service).
#[utoipa::path(
    post,
    path = "/api/v1/runs",
    operation_id = "create_run",
    tag = "runs",
    request_body = CreateRunRequest,
    responses(
        (status = 202, description = "Started", body = Run,
            links(
                ("describe" = (operation_id = "describe_run", parameters(("id" = "$response.body#/id")))),
                ("stop" = (operation_id = "stop_run", parameters(("id" = "$response.body#/id")))),
            ),
        ),
        CommonErrors,
    ),
)]
async fn create(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppJson(request): AppJson<CreateRunRequest>,
) -> Result<impl IntoResponse, ApiError> {
    validate_name("service", &request.service)?;
    caller.require_profiling(&request.service)?;
    let run = runs::create(&state, request, &StartedBy::caller(&caller)).await?;
    Ok((StatusCode::ACCEPTED, Json(run)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only runs of this service.
    #[param(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    service: Option<String>,
    /// At most this many, newest first (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

/// Runs, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/runs",
    operation_id = "list_runs",
    tag = "runs",
    params(ListParams),
    responses(
        (status = 200, description = "The runs", body = RunsResponse),
        CommonErrors,
    ),
)]
async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppQuery(params): AppQuery<ListParams>,
) -> Result<Json<RunsResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    if let Some(service) = &params.service {
        validate_name("service", service)?;
    }
    let limit = params.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::Unprocessable(
            "`limit` must be between 1 and 500".into(),
        ));
    }
    Ok(Json(RunsResponse {
        runs: runs::list(&state, params.service.as_deref(), limit).await?,
    }))
}

/// A run, its members and how far it got.
#[utoipa::path(
    get,
    path = "/api/v1/runs/{id}",
    operation_id = "describe_run",
    tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    responses(
        (status = 200, description = "The run", body = Run),
        NotFound,
        CommonErrors,
    ),
)]
async fn describe(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<Run>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(runs::describe(&state, id).await?))
}

/// Stop a run: every member still profiling stops (profiler of its
/// service).
#[utoipa::path(
    post,
    path = "/api/v1/runs/{id}/stop",
    operation_id = "stop_run",
    tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    responses(
        (status = 202, description = "Stopping", body = Run),
        (status = 409, description = "The run has ended", body = crate::openapi::ErrorBody),
        NotFound,
        CommonErrors,
    ),
)]
async fn stop(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Profiler)?;
    let run = runs::describe(&state, id).await?;
    caller.require_profiling(&run.service)?;
    let run = runs::stop(&state, id, &caller.subject).await?;
    Ok((StatusCode::ACCEPTED, Json(run)))
}

/// The run's top shares now, each with its standard error, and whether
/// its stop rule holds.
#[utoipa::path(
    get,
    path = "/api/v1/runs/{id}/precision",
    operation_id = "run_precision",
    tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    responses(
        (status = 200, description = "The precision", body = RunPrecision),
        NotFound,
        CommonErrors,
    ),
)]
async fn precision(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<RunPrecision>, ApiError> {
    caller.require(Role::Viewer)?;
    let row = runs::row(&state, id).await?;
    let (stop_when, decision) = run_precision::decide(&state.pool, &row).await?;
    Ok(Json(RunPrecision {
        run: id,
        stop_when,
        decision,
    }))
}
