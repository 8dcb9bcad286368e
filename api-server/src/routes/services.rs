//! Services: admins define, change and delete them; viewers list them and
//! the live hosts that run each.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use odp_api_types::{
    CreateServiceRequest, Service, ServiceHostsResponse, ServicesResponse, TrendResponse,
    UpdateServiceRequest,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath, AppQuery};
use crate::openapi::{CommonErrors, NotFound};
use crate::service::services;
use crate::service::trend::{self, TrendParams};
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(describe, update, remove))
        .routes(routes!(hosts))
        .routes(routes!(trend))
}

/// Define a service (admin).
#[utoipa::path(
    post,
    path = "/api/v1/services",
    operation_id = "create_service",
    tag = "services",
    request_body = CreateServiceRequest,
    responses(
        (status = 201, description = "Created", body = Service,
            links(
                ("describe" = (operation_id = "describe_service", parameters(("name" = "$response.body#/name")))),
                ("hosts" = (operation_id = "service_hosts", parameters(("name" = "$response.body#/name")))),
            ),
        ),
        (status = 409, description = "A service of that name exists", body = crate::openapi::ErrorBody),
        CommonErrors,
    ),
)]
async fn create(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppJson(request): AppJson<CreateServiceRequest>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    let service = services::create(&state.pool, request, &caller.subject).await?;
    tracing::info!(service = %service.name, target = %service.target, by = %caller.subject, "service defined");
    Ok((StatusCode::CREATED, Json(service)))
}

/// Every service, by name.
#[utoipa::path(
    get,
    path = "/api/v1/services",
    operation_id = "list_services",
    tag = "services",
    responses(
        (status = 200, description = "The services", body = ServicesResponse),
        CommonErrors,
    ),
)]
async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
) -> Result<Json<ServicesResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(ServicesResponse {
        services: services::list(&state.pool).await?,
    }))
}

/// A service.
#[utoipa::path(
    get,
    path = "/api/v1/services/{name}",
    operation_id = "describe_service",
    tag = "services",
    params(("name" = String, Path, description = "Service name")),
    responses(
        (status = 200, description = "The service", body = Service),
        NotFound,
        CommonErrors,
    ),
)]
async fn describe(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(name): AppPath<String>,
) -> Result<Json<Service>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(services::get(&state.pool, &name).await?))
}

/// Change a service (admin); absent fields stay as they are.
#[utoipa::path(
    patch,
    path = "/api/v1/services/{name}",
    operation_id = "update_service",
    tag = "services",
    params(("name" = String, Path, description = "Service name")),
    request_body = UpdateServiceRequest,
    responses(
        (status = 200, description = "The changed service", body = Service),
        NotFound,
        CommonErrors,
    ),
)]
async fn update(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(name): AppPath<String>,
    AppJson(request): AppJson<UpdateServiceRequest>,
) -> Result<Json<Service>, ApiError> {
    caller.require(Role::Admin)?;
    let service = services::update(&state.pool, &name, request).await?;
    tracing::info!(service = %name, by = %caller.subject, "service changed");
    Ok(Json(service))
}

/// Delete a service (admin).
#[utoipa::path(
    delete,
    path = "/api/v1/services/{name}",
    operation_id = "delete_service",
    tag = "services",
    params(("name" = String, Path, description = "Service name")),
    responses(
        (status = 204, description = "Deleted"),
        NotFound,
        CommonErrors,
    ),
)]
async fn remove(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(name): AppPath<String>,
) -> Result<StatusCode, ApiError> {
    caller.require(Role::Admin)?;
    services::delete(&state.pool, &name).await?;
    tracing::info!(service = %name, by = %caller.subject, "service deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// The live hosts running a service, with their labels.
#[utoipa::path(
    get,
    path = "/api/v1/services/{name}/hosts",
    operation_id = "service_hosts",
    tag = "services",
    params(("name" = String, Path, description = "Service name")),
    responses(
        (status = 200, description = "The hosts", body = ServiceHostsResponse),
        NotFound,
        CommonErrors,
    ),
)]
async fn hosts(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(name): AppPath<String>,
) -> Result<Json<ServiceHostsResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    let live_within = state.control.live_within();
    Ok(Json(
        services::hosts(&state.pool, &name, live_within).await?,
    ))
}

/// A function's trend over the service's history: per step, its share of
/// the samples and the cores it keeps busy, each with its standard error.
#[utoipa::path(
    get,
    path = "/api/v1/services/{name}/trend",
    operation_id = "service_trend",
    tag = "services",
    params(("name" = String, Path, description = "Service name"), TrendParams),
    responses(
        (status = 200, description = "One point per step, gaps included", body = TrendResponse),
        CommonErrors,
    ),
)]
async fn trend(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(name): AppPath<String>,
    AppQuery(params): AppQuery<TrendParams>,
) -> Result<Json<TrendResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(trend::service_trend(&state, name, params).await?))
}
