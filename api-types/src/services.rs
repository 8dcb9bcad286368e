//! Services: defined once (name, target, owning team), and the live hosts
//! that run them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use odp_core::Target;
use serde::{Deserialize, Serialize};

/// `POST /api/v1/services`: a name and exactly one of `process_name`,
/// `cmdline` or `cgroup` (a pid names a process on one host, not a
/// service).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateServiceRequest {
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub name: String,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 255))]
    pub process_name: Option<String>,
    /// A regex over the full command line (see the start request).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 1000))]
    pub cmdline: Option<String>,
    /// A cgroup path or container id (see the start request).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 4096))]
    pub cgroup: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 255))]
    pub owner_team: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(max_length = 1000))]
    pub description: Option<String>,
}

/// `PATCH /api/v1/services/{name}`: what is given is replaced; a new
/// target is one of `process_name`, `cmdline` or `cgroup`. An empty
/// `owner_team` or `description` clears it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateServiceRequest {
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 255))]
    pub process_name: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 1000))]
    pub cmdline: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 4096))]
    pub cgroup: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(max_length = 255))]
    pub owner_team: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(max_length = 1000))]
    pub description: Option<String>,
}

/// A defined service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Service {
    pub name: String,
    /// The processes that are the service on each host.
    pub target: Target,
    pub owner_team: Option<String>,
    pub description: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// `GET /api/v1/services`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ServicesResponse {
    pub services: Vec<Service>,
}

/// A live host running a service: its agent heartbeated within the
/// liveness window and reported a process matching the service's target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ServiceHost {
    pub host: String,
    pub agent_id: String,
    /// The host's labels as its agent reports them: discovered (`kernel`,
    /// `cpu_model`, `cores`) and set by the operator (`zone`, `version`, …).
    pub labels: BTreeMap<String, String>,
    pub last_seen: DateTime<Utc>,
}

/// `GET /api/v1/services/{name}/hosts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ServiceHostsResponse {
    pub service: String,
    pub target: Target,
    /// A host counts as live while its last heartbeat is this recent.
    pub live_within_secs: u64,
    pub hosts: Vec<ServiceHost>,
}

/// `GET /api/v1/services/{name}/trend`: a function's share of the
/// service's samples and the CPU it takes, step by step, each with its
/// standard error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct TrendResponse {
    pub service: String,
    /// The regex a frame of a stack matches for its samples to count.
    pub function: String,
    /// The event the samples measure; absent when none were stored.
    pub event: Option<odp_core::EventKind>,
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub step_secs: u64,
    /// Only these hosts; every host when empty.
    pub hosts: Vec<String>,
    /// One per step, gaps included (no windows: no share).
    pub points: Vec<odp_core::trend::TrendPoint>,
}
