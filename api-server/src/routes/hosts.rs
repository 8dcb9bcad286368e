//! Hosts, as their agents' heartbeats describe them, and undeploying an
//! agent from a host.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use odp_core::command::{CommandAction, UndeployMode};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppPath, AppQuery};
use crate::routes::profiles::validate_name;
use crate::AppState;

/// An agent is live while its heartbeats keep coming: agents beat every
/// few seconds (5 s by default), so three missed beats mean it is gone.
const LIVE_WITHIN_SECS: i64 = 30;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/hosts", get(list))
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
    let agents: Vec<AgentView> = odp_store::list_agents(&state.pool)
        .await?
        .into_iter()
        .map(|a| AgentView {
            live: (now - a.last_seen).num_seconds() <= LIVE_WITHIN_SECS,
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
    let command_id = state
        .dispatcher
        .send(&host, CommandAction::Undeploy { mode: query.mode })
        .await?;
    tracing::info!(%host, mode = ?query.mode, by = %caller.subject, "undeploy requested");
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::json!({ "host": host, "mode": query.mode, "command_id": command_id })),
    ))
}
