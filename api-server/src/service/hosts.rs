//! Hosts, as their agents' heartbeats describe them, and undeploying an
//! agent, stored as a request.

use chrono::Utc;
use odp_api_types::{AgentView, UndeployResponse};
use odp_core::command::{CommandAction, UndeployMode};
use odp_store::{AgentRow, NewRequest, RequestKind};

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
            let measured = heartbeats.as_ref().and_then(|h| h.clock_offset_ms(&a.host));
            let live = (now - a.last_seen).num_seconds() <= live_within_secs;
            agent_view(a, live, measured)
        })
        .collect())
}

/// `agent`'s view. Its host's clock offset is measured from the live
/// agent's heartbeats, so a dead agent's row (an agent replaced on its
/// host, or a host gone) shows none: it would be another agent's reading,
/// or a stale one.
fn agent_view(agent: AgentRow, live: bool, measured_offset_ms: Option<i64>) -> AgentView {
    let clock_offset_ms = live
        .then(|| measured_offset_ms.or(agent.clock_offset_ms))
        .flatten();
    AgentView {
        clock_offset_ms,
        clock_corrected: clock_offset_ms
            .is_some_and(|o| o.abs() >= odp_store::CLOCK_CORRECTED_FROM_MS),
        live,
        host: agent.host,
        agent_id: agent.agent_id,
        version: agent.version,
        plugins: agent.plugins,
        running_profiles: agent.running_profiles,
        last_seen: agent.last_seen,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(offset_ms: Option<i64>) -> AgentRow {
        AgentRow {
            host: "web-1".into(),
            agent_id: "agent-a".into(),
            version: "0.1.0".into(),
            plugins: vec![],
            running_profiles: vec![],
            last_seen: Utc::now(),
            clock_offset_ms: offset_ms,
        }
    }

    #[test]
    fn only_a_live_agent_shows_its_hosts_clock() {
        let live = agent_view(row(Some(-7_200_000)), true, None);
        assert_eq!(live.clock_offset_ms, Some(-7_200_000));
        assert!(live.clock_corrected);
        let fresher = agent_view(row(Some(-7_200_000)), true, Some(-7_199_000));
        assert_eq!(
            fresher.clock_offset_ms,
            Some(-7_199_000),
            "this replica's reading"
        );
        let dead = agent_view(row(Some(-7_200_000)), false, Some(-7_199_000));
        assert_eq!(dead.clock_offset_ms, None);
        assert!(!dead.clock_corrected && !dead.live);
        let in_step = agent_view(row(Some(18)), true, None);
        assert!(!in_step.clock_corrected);
    }
}
