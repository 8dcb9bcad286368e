//! Hosts, as their agents' heartbeats describe them, and deploying an
//! agent to a host or undeploying it; both are stored as requests.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use odp_core::command::{CommandAction, UndeployMode};
use odp_store::{NewRequest, RequestKind};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::control::DeployOutcome;
use crate::error::ApiError;
use crate::extract::{AppPath, AppQuery};
use crate::routes::profiles::validate_name;
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/hosts", get(list))
        .route("/api/v1/hosts/{host}/deploy", post(deploy))
        .route("/api/v1/hosts/{host}/undeploy", post(undeploy))
}

#[derive(Debug, Serialize)]
struct AgentView {
    host: String,
    agent_id: String,
    version: String,
    plugins: Vec<String>,
    running_profiles: Vec<Uuid>,
    last_seen: DateTime<Utc>,
    live: bool,
}

async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
) -> Result<Json<serde_json::Value>, ApiError> {
    caller.require(Role::Viewer)?;
    let now = Utc::now();
    let live_within_secs = state.control.live_within_secs();
    let agents: Vec<AgentView> = odp_store::list_agents(&state.pool)
        .await?
        .into_iter()
        .map(|a| AgentView {
            live: (now - a.last_seen).num_seconds() <= live_within_secs,
            host: a.host,
            agent_id: a.agent_id,
            version: a.version,
            plugins: a.plugins,
            running_profiles: a.running_profiles,
            last_seen: a.last_seen,
        })
        .collect();
    Ok(Json(serde_json::json!({ "agents": agents })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UndeployQuery {
    /// `now`: stop running profiles, flush them and exit; `drain`: refuse
    /// new profiles and exit when the running ones end.
    mode: UndeployMode,
}

async fn undeploy(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(host): AppPath<String>,
    AppQuery(query): AppQuery<UndeployQuery>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    validate_name("host", &host)?;
    let new = NewRequest {
        kind: RequestKind::Undeploy,
        host: host.clone(),
        profile_id: None,
        mode: Some(mode_name(query.mode).to_owned()),
        requested_by: caller.subject.clone(),
    };
    let action = CommandAction::Undeploy { mode: query.mode };
    let send = state.dispatcher.send(&host, action);
    let request = state.control.record_command(new, send).await?;
    tracing::info!(%host, mode = ?query.mode, by = %caller.subject, "undeploy requested");
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::json!({
            "host": host,
            "mode": query.mode,
            "command_id": request.command_id,
            "request": request,
        })),
    ))
}

fn mode_name(mode: UndeployMode) -> &'static str {
    match mode {
        UndeployMode::Now => "now",
        UndeployMode::Drain => "drain",
    }
}

/// `POST /api/v1/hosts/{host}/deploy`: 200 when an agent is live there
/// already, 202 while the deployer runs (follow the request until it
/// ends), 409 when none is configured.
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
    let link = format!("/api/v1/requests/{}", request.id);
    Ok((
        status,
        Json(serde_json::json!({ "request": request, "links": { "self": link } })),
    ))
}
