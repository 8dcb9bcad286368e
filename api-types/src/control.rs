//! Hosts, agent deploys and control requests.

use chrono::{DateTime, Utc};
use odp_core::command::UndeployMode;
use odp_core::domain::{RequestKind, RequestStatus};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A deploy, undeploy or stop request and how it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ControlRequest {
    pub id: Uuid,
    pub kind: RequestKind,
    pub host: String,
    pub profile_id: Option<Uuid>,
    /// How an undeploy stops the agent.
    pub mode: Option<UndeployMode>,
    pub requested_by: String,
    pub status: RequestStatus,
    pub status_reason: Option<String>,
    pub command_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RequestList {
    pub requests: Vec<ControlRequest>,
}

/// An agent as its latest heartbeat describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct AgentView {
    pub host: String,
    pub agent_id: String,
    pub version: String,
    pub plugins: Vec<String>,
    pub running_profiles: Vec<Uuid>,
    pub last_seen: DateTime<Utc>,
    /// Heard from recently enough to take commands.
    pub live: bool,
    /// How far ahead of the api-server the host's clock runs, in ms
    /// (negative: behind), as measured from its heartbeats; absent until
    /// measured, and on the rows of agents no longer live. From 10 s either way, the pipeline moves the host's
    /// windows by it, so its samples are placed when they happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset_ms: Option<i64>,
    /// Whether that offset is large enough that the host's times are
    /// corrected by it (10 s, a window, or more either way).
    #[serde(default)]
    pub clock_corrected: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct HostsResponse {
    pub agents: Vec<AgentView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct UndeployResponse {
    pub host: String,
    pub mode: UndeployMode,
    pub command_id: Option<Uuid>,
    pub request: ControlRequest,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct DeployResponse {
    pub request: ControlRequest,
    pub links: RequestLinks,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RequestLinks {
    /// The request, to follow until it ends.
    #[serde(rename = "self")]
    pub this: String,
}
