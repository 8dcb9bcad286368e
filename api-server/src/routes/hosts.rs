//! Hosts, as their agents' heartbeats describe them, and deploying an
//! agent to a host or undeploying it; both are stored as requests.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use odp_api_types::{DeployResponse, HostsResponse, RequestLinks, UndeployResponse};
use odp_core::command::UndeployMode;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Caller, Role};
use crate::control::DeployOutcome;
use crate::error::ApiError;
use crate::extract::{AppPath, AppQuery};
use crate::openapi::{CommonErrors, ErrorBody};
use crate::service::hosts;
use crate::validate::validate_name;
use crate::views;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(deploy))
        .routes(routes!(undeploy))
}

/// The hosts' agents, from their heartbeats.
#[utoipa::path(
    get,
    path = "/api/v1/hosts",
    operation_id = "list_hosts",
    tag = "control",
    responses(
        (status = 200, description = "Every agent heard from", body = HostsResponse),
        CommonErrors,
    ),
)]
async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
) -> Result<Json<HostsResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(HostsResponse {
        agents: hosts::agents(&state).await?,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct UndeployQuery {
    /// `now`: stop running profiles, flush them and exit; `drain`: refuse
    /// new profiles and exit when the running ones end.
    #[param(value_type = UndeployMode)]
    mode: UndeployMode,
}

/// Make the host's agent exit, at once or once its profiles end.
#[utoipa::path(
    post,
    path = "/api/v1/hosts/{host}/undeploy",
    operation_id = "undeploy",
    tag = "control",
    params(("host" = String, Path, description = "Host id"), UndeployQuery),
    responses(
        (status = 202, description = "The undeploy command is sent", body = UndeployResponse),
        CommonErrors,
    ),
)]
async fn undeploy(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(host): AppPath<String>,
    AppQuery(query): AppQuery<UndeployQuery>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    validate_name("host", &host)?;
    let undeploy = hosts::undeploy(&state, host, query.mode, &caller.subject).await?;
    tracing::info!(host = %undeploy.host, mode = ?query.mode, by = %caller.subject, "undeploy requested");
    Ok((StatusCode::ACCEPTED, Json(undeploy)))
}

/// Deploy an agent to the host: 200 when an agent is live there already,
/// 202 while the deployer runs (follow the request until it ends), 409
/// when none is configured.
#[utoipa::path(
    post,
    path = "/api/v1/hosts/{host}/deploy",
    operation_id = "deploy",
    tag = "control",
    params(("host" = String, Path, description = "Host id")),
    responses(
        (status = 200, description = "An agent is live on the host already", body = DeployResponse),
        (status = 202, description = "The deployer runs", body = DeployResponse),
        (status = 409, description = "No deployer is configured", body = ErrorBody),
        CommonErrors,
    ),
)]
async fn deploy(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(host): AppPath<String>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    validate_name("host", &host)?;
    let (status, request) = match state.control.deploy(&host, &caller.subject).await? {
        DeployOutcome::AlreadyLive(request) => (StatusCode::OK, request),
        DeployOutcome::Started(request) | DeployOutcome::InFlight(request) => {
            (StatusCode::ACCEPTED, request)
        }
    };
    tracing::info!(%host, by = %caller.subject, status = %request.status, "deploy requested");
    let this = format!("/api/v1/requests/{}", request.id);
    Ok((
        status,
        Json(DeployResponse {
            request: views::control_request(request),
            links: RequestLinks { this },
        }),
    ))
}
