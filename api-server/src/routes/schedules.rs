//! Profiling schedules: admins create, change and delete them; viewers
//! list and read them with their recent runs.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use chrono::Utc;
use odp_api_types::{
    NewScheduleRequest, RunView, Schedule, ScheduleWithRuns, SchedulesResponse,
    UpdateScheduleRequest,
};
use odp_store::Schedules;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath};
use crate::openapi::{CommonErrors, NotFound};
use crate::service::runs::defined_service;
use crate::service::schedules::{new_run_schedule, new_schedule, parse_create, schedule_patch};
use crate::AppState;

/// How many runs `GET /api/v1/schedules/{id}` shows, newest first.
const RUNS_SHOWN: i64 = 50;

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
    let new = match parse_create(body)? {
        NewScheduleRequest::Host(request) => new_schedule(request, &caller.subject, Utc::now())?,
        NewScheduleRequest::Run(request) => {
            crate::validate::validate_name("service", &request.service)?;
            let service = defined_service(&state, &request.service).await?;
            new_run_schedule(request, &service.target, &caller.subject, Utc::now())?
        }
    };
    let row = Schedules::new(state.pool.clone()).create(&new).await?;
    tracing::info!(schedule = %row.id, name = %row.name, by = %caller.subject, "schedule created");
    Ok((StatusCode::CREATED, Json(Schedule::from(row))))
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
    let schedules = Schedules::new(state.pool.clone()).list().await?;
    Ok(Json(SchedulesResponse {
        schedules: schedules.into_iter().map(Schedule::from).collect(),
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
    let schedules = Schedules::new(state.pool.clone());
    let schedule = schedules.get(id).await?.ok_or_else(|| no_schedule(id))?;
    let runs = schedules.runs(id, RUNS_SHOWN).await?;
    Ok(Json(ScheduleWithRuns {
        schedule: schedule.into(),
        runs: runs.into_iter().map(RunView::from).collect(),
    }))
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
    let schedules = Schedules::new(state.pool.clone());
    let current = schedules.get(id).await?.ok_or_else(|| no_schedule(id))?;
    let (patch, next_run_at) = schedule_patch(request, &current, Utc::now())?;
    let row = schedules
        .update(id, &patch, next_run_at)
        .await?
        .ok_or_else(|| no_schedule(id))?;
    tracing::info!(schedule = %id, by = %caller.subject, "schedule changed");
    Ok(Json(row.into()))
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
    if !Schedules::new(state.pool.clone()).delete(id).await? {
        return Err(no_schedule(id));
    }
    tracing::info!(schedule = %id, by = %caller.subject, "schedule deleted");
    Ok(StatusCode::NO_CONTENT)
}

fn no_schedule(id: Uuid) -> ApiError {
    ApiError::NotFound(format!("no schedule {id}"))
}
