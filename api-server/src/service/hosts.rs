//! Hosts, as their agents' heartbeats describe them, and undeploying an
//! agent, stored as a request.

use chrono::Utc;
use odp_api_types::{AgentView, UndeployResponse};
use odp_core::command::{CommandAction, UndeployMode};
use odp_store::{NewRequest, RequestKind};

use crate::service_error::ServiceError;
use crate::views;
use crate::AppState;

/// Every agent heard from, live when its last heartbeat is recent.
pub(crate) async fn agents(state: &AppState) -> Result<Vec<AgentView>, ServiceError> {
    let now = Utc::now();
    let live_within_secs = state.control.live_within_secs();
    let heartbeats = state.control.heartbeats();
    Ok(odp_store::list_agents(&state.pool)
        .await?
        .into_iter()
        .map(|a| {
            // This replica's own reading is the freshest; the store's is
            // any replica's, as last recorded.
            let clock_offset_ms = heartbeats
                .as_ref()
                .and_then(|h| h.clock_offset_ms(&a.host))
                .or(a.clock_offset_ms);
            AgentView {
                clock_offset_ms,
                clock_corrected: clock_offset_ms
                    .is_some_and(|o| o.abs() >= odp_store::CLOCK_CORRECTED_FROM_MS),
                live: (now - a.last_seen).num_seconds() <= live_within_secs,
                host: a.host,
                agent_id: a.agent_id,
                version: a.version,
                plugins: a.plugins,
                running_profiles: a.running_profiles,
                last_seen: a.last_seen,
            }
        })
        .collect())
}

/// Sends `host`'s agent the undeploy command and records the request
/// `by` made.
pub(crate) async fn undeploy(
    state: &AppState,
    host: String,
    mode: UndeployMode,
    by: &str,
) -> Result<UndeployResponse, ServiceError> {
    let new = NewRequest {
        kind: RequestKind::Undeploy,
        host: host.clone(),
        profile_id: None,
        mode: Some(mode),
        requested_by: by.to_owned(),
    };
    let action = CommandAction::Undeploy { mode };
    let send = state.dispatcher.send(&host, action);
    let request = state.control.record_command(new, send).await?;
    Ok(UndeployResponse {
        host,
        mode,
        command_id: request.command_id,
        request: views::control_request(request),
    })
}
