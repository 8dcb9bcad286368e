//! Continuous profiles: a service profiled always, at a low rate and
//! within a per-host CPU budget.

use chrono::{DateTime, Utc};
use odp_core::EventKind;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// `POST /api/v1/continuous`: profile a defined service always. Absent
/// fields take the defaults: `cpu-clock` at 19 Hz, 0.5 % of one core per
/// host, every host that runs the service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateContinuousRequest {
    /// A defined service (`POST /api/v1/services`).
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub service: String,
    /// `cpu-clock` (the default) or `wall`.
    #[serde(default)]
    pub event: Option<EventKind>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub frequency_hz: Option<u32>,
    /// CPU each host's agent may spend on it, in percent of one core; the
    /// rate is lowered to stay inside it.
    #[serde(default)]
    pub cpu_budget_percent: Option<f64>,
    /// Only these hosts profile it; absent: every host that runs it.
    #[serde(default)]
    pub hosts: Option<Vec<String>>,
}

/// `PATCH /api/v1/continuous/{id}`: what is given is replaced. An empty
/// `hosts` list means every host that runs the service; `enabled: false`
/// turns it off (its agents stop within seconds) and `true` on again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateContinuousRequest {
    #[serde(default)]
    pub event: Option<EventKind>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub frequency_hz: Option<u32>,
    #[serde(default)]
    pub cpu_budget_percent: Option<f64>,
    #[serde(default)]
    pub hosts: Option<Vec<String>>,
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// A service's continuous profile. Each host profiles it in hourly
/// segments, each an ordinary profile labelled `continuous=<id>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ContinuousProfile {
    pub id: Uuid,
    pub service: String,
    pub event: EventKind,
    pub frequency_hz: u32,
    pub cpu_budget_percent: f64,
    /// The hosts that profile it; absent: every host that runs the service.
    pub hosts: Option<Vec<String>>,
    pub enabled: bool,
    /// Seconds of one segment (one profile per host).
    pub segment_secs: i64,
    pub created_by: String,
    pub updated_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// `GET /api/v1/continuous`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ContinuousProfilesResponse {
    pub continuous: Vec<ContinuousProfile>,
}
