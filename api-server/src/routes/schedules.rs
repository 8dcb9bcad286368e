//! Profiling schedules: admins create, change and delete them; viewers
//! list and read them with their recent runs.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use odp_api_types::{
    NewScheduleRequest, Schedule, ScheduleWithRuns, SchedulesResponse, UpdateScheduleRequest,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath};
use crate::openapi::{CommonErrors, NotFound};
use crate::service::schedules;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(describe, update, remove))
}

/// Create a schedule (admin): of one host's target, or, with `run`, of a
/// run of a defined service on the hosts chosen each time it fires.
#[utoipa::path(
    post,
    path = "/api/v1/schedules",
    operation_id = "create_schedule",
    tag = "schedules",
    request_body = NewScheduleRequest,
    responses(
        (status = 201, description = "Created", body = Schedule,
            links(
                ("describe" = (operation_id = "describe_schedule", parameters(("id" = "$response.body#/id")))),
                ("update" = (operation_id = "update_schedule", parameters(("id" = "$response.body#/id")))),
                ("delete" = (operation_id = "delete_schedule", parameters(("id" = "$response.body#/id")))),
            ),
        ),
        (status = 409, description = "A schedule of that name exists", body = crate::openapi::ErrorBody),
        CommonErrors,
    ),
)]
async fn create(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppJson(body): AppJson<serde_json::Value>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    let schedule = schedules::create(&state.pool, body, &caller.subject).await?;
    tracing::info!(schedule = %schedule.id, name = %schedule.name, by = %caller.subject, "schedule created");
    Ok((StatusCode::CREATED, Json(schedule)))
}

/// Every schedule.
#[utoipa::path(
    get,
    path = "/api/v1/schedules",
    operation_id = "list_schedules",
    tag = "schedules",
    responses(
        (status = 200, description = "The schedules", body = SchedulesResponse),
        CommonErrors,
    ),
)]
async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
) -> Result<Json<SchedulesResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(SchedulesResponse {
        schedules: schedules::list(&state.pool).await?,
    }))
}

/// A schedule with its latest runs.
#[utoipa::path(
    get,
    path = "/api/v1/schedules/{id}",
    operation_id = "describe_schedule",
    tag = "schedules",
    params(("id" = Uuid, Path, description = "Schedule id")),
    responses(
        (status = 200, description = "The schedule", body = ScheduleWithRuns),
        NotFound,
        CommonErrors,
    ),
)]
async fn describe(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<ScheduleWithRuns>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(schedules::describe(&state.pool, id).await?))
}

/// Change a schedule (admin); absent fields stay as they are.
#[utoipa::path(
    patch,
    path = "/api/v1/schedules/{id}",
    operation_id = "update_schedule",
    tag = "schedules",
    params(("id" = Uuid, Path, description = "Schedule id")),
    request_body = UpdateScheduleRequest,
    responses(
        (status = 200, description = "The changed schedule", body = Schedule),
        NotFound,
        CommonErrors,
    ),
)]
async fn update(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppJson(request): AppJson<UpdateScheduleRequest>,
) -> Result<Json<Schedule>, ApiError> {
    caller.require(Role::Admin)?;
    let schedule = schedules::update(&state.pool, id, request).await?;
    tracing::info!(schedule = %id, by = %caller.subject, "schedule changed");
    Ok(Json(schedule))
}

/// Delete a schedule (admin).
#[utoipa::path(
    delete,
    path = "/api/v1/schedules/{id}",
    operation_id = "delete_schedule",
    tag = "schedules",
    params(("id" = Uuid, Path, description = "Schedule id")),
    responses(
        (status = 204, description = "Deleted"),
        NotFound,
        CommonErrors,
    ),
)]
async fn remove(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<StatusCode, ApiError> {
    caller.require(Role::Admin)?;
    schedules::delete(&state.pool, id).await?;
    tracing::info!(schedule = %id, by = %caller.subject, "schedule deleted");
    Ok(StatusCode::NO_CONTENT)
}
