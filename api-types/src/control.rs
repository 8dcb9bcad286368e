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
