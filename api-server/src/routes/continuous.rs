//! Continuous profiles: admins turn them on, change and turn them off;
//! viewers list them. Each change is logged with who made it and kept on
//! the configuration (`updated_by`).

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use odp_api_types::{
    ContinuousProfile, ContinuousProfilesResponse, CreateContinuousRequest, UpdateContinuousRequest,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath};
use crate::openapi::{CommonErrors, NotFound};
use crate::service::continuous;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(describe, update, remove))
}

/// Profile a service always (admin): every host that runs it, at a low
/// rate and within a CPU budget per host.
#[utoipa::path(
    post,
    path = "/api/v1/continuous",
    operation_id = "create_continuous",
    tag = "continuous",
    request_body = CreateContinuousRequest,
    responses(
        (status = 201, description = "Created", body = ContinuousProfile,
            links(
                ("describe" = (operation_id = "describe_continuous", parameters(("id" = "$response.body#/id")))),
            ),
        ),
        (status = 409, description = "The service, or another with the same target, is profiled continuously already", body = crate::openapi::ErrorBody),
        CommonErrors,
    ),
)]
async fn create(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppJson(request): AppJson<CreateContinuousRequest>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    let created = continuous::create(
        &state.pool,
        request,
        &state.continuous_limits,
        &caller.subject,
    )
    .await?;
    tracing::info!(id = %created.id, service = %created.service, frequency_hz = created.frequency_hz,
        cpu_budget_percent = created.cpu_budget_percent, by = %caller.subject,
        "continuous profile turned on");
    Ok((StatusCode::CREATED, Json(created)))
}

/// Every continuous profile, by service.
#[utoipa::path(
    get,
    path = "/api/v1/continuous",
    operation_id = "list_continuous",
    tag = "continuous",
    responses(
        (status = 200, description = "The continuous profiles", body = ContinuousProfilesResponse),
        CommonErrors,
    ),
)]
async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
) -> Result<Json<ContinuousProfilesResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(ContinuousProfilesResponse {
        continuous: continuous::list(&state.pool).await?,
    }))
}

/// A continuous profile.
#[utoipa::path(
    get,
    path = "/api/v1/continuous/{id}",
    operation_id = "describe_continuous",
    tag = "continuous",
    params(("id" = Uuid, Path, description = "Continuous profile id")),
    responses(
        (status = 200, description = "The continuous profile", body = ContinuousProfile),
        NotFound,
        CommonErrors,
    ),
)]
async fn describe(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<ContinuousProfile>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(continuous::get(&state.pool, id).await?))
}

/// Change a continuous profile's rate, budget, event or hosts, or turn it
/// off and on (admin); absent fields stay as they are.
#[utoipa::path(
    patch,
    path = "/api/v1/continuous/{id}",
    operation_id = "update_continuous",
    tag = "continuous",
    params(("id" = Uuid, Path, description = "Continuous profile id")),
    request_body = UpdateContinuousRequest,
    responses(
        (status = 200, description = "The changed continuous profile", body = ContinuousProfile),
        NotFound,
        CommonErrors,
    ),
)]
async fn update(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppJson(request): AppJson<UpdateContinuousRequest>,
) -> Result<Json<ContinuousProfile>, ApiError> {
    caller.require(Role::Admin)?;
    let changed = continuous::update(
        &state.pool,
        id,
        request,
        &state.continuous_limits,
        &caller.subject,
    )
    .await?;
    tracing::info!(%id, service = %changed.service, enabled = changed.enabled,
        frequency_hz = changed.frequency_hz, cpu_budget_percent = changed.cpu_budget_percent,
        by = %caller.subject, "continuous profile changed");
    Ok(Json(changed))
}

/// Delete a continuous profile (admin); its segments stay, as profiles.
#[utoipa::path(
    delete,
    path = "/api/v1/continuous/{id}",
    operation_id = "delete_continuous",
    tag = "continuous",
    params(("id" = Uuid, Path, description = "Continuous profile id")),
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
    continuous::delete(&state.pool, id).await?;
    tracing::info!(%id, by = %caller.subject, "continuous profile deleted");
    Ok(StatusCode::NO_CONTENT)
}
