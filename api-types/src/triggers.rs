//! Triggers: profile a service's host when a condition holds there (its
//! CPU above a threshold, or its memory growing), with a cooldown and a
//! fleet-wide cap on the profiles they start.

use chrono::{DateTime, Utc};
use odp_core::trigger::TriggerCondition;
use odp_core::EventKind;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// `POST /api/v1/triggers`. Absent fields take the defaults: a 30 s
/// `cpu-clock` profile at 99 Hz, a cooldown of 10 minutes per host, at most
/// 3 triggered profiles of it running at once across the fleet, on every
/// host that runs the service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateTriggerRequest {
    /// A defined service (`POST /api/v1/services`).
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub service: String,
    /// What must hold on a host, for how long: `{"kind": "cpu_above",
    /// "percent": 80, "for_secs": 30}` (percent of one core, summed over
    /// the service's processes) or `{"kind": "rss_growth", "mib_per_min":
    /// 50, "for_secs": 120}`.
    pub condition: TriggerCondition,
    /// How long each triggered profile runs.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub duration_secs: Option<u64>,
    #[serde(default)]
    pub event: Option<EventKind>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub frequency_hz: Option<u32>,
    /// After a firing on a host, the trigger does not fire there again for
    /// this long.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 10))]
    pub cooldown_secs: Option<u32>,
    /// Most profiles of this trigger running at once, across the fleet.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub max_concurrent: Option<u32>,
    /// Only these hosts watch it; absent: every host that runs the service.
    #[serde(default)]
    pub hosts: Option<Vec<String>>,
}

/// `PATCH /api/v1/triggers/{id}`: what is given is replaced. An empty
/// `hosts` list means every host; `enabled: false` turns it off.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateTriggerRequest {
    #[serde(default)]
    pub condition: Option<TriggerCondition>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub duration_secs: Option<u64>,
    #[serde(default)]
    pub event: Option<EventKind>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub frequency_hz: Option<u32>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 10))]
    pub cooldown_secs: Option<u32>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub max_concurrent: Option<u32>,
    #[serde(default)]
    pub hosts: Option<Vec<String>>,
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// A trigger, and what it did: its profiles are ordinary profiles
/// labelled `trigger=<id>` and `trigger_observed=<value and unit>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Trigger {
    pub id: Uuid,
    pub service: String,
    pub condition: TriggerCondition,
    pub duration_secs: u64,
    pub event: EventKind,
    pub frequency_hz: u32,
    pub cooldown_secs: u32,
    pub max_concurrent: u32,
    /// The hosts that watch it; absent: every host that runs the service.
    pub hosts: Option<Vec<String>>,
    pub enabled: bool,
    /// Firings that started a profile.
    pub fired: u64,
    /// Firings held back by the cooldown or the cap.
    pub held_back: u64,
    pub last_fired_at: Option<DateTime<Utc>>,
    /// Since when firings are held back, and why (cleared by the next
    /// profile it starts): reported once, not once per firing.
    pub held_back_since: Option<DateTime<Utc>>,
    pub held_back_reason: Option<String>,
    pub created_by: String,
    pub updated_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// `GET /api/v1/triggers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct TriggersResponse {
    pub triggers: Vec<Trigger>,
}

/// What became of a firing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FiringOutcome {
    /// A profile was started.
    Started,
    /// The host fired within its cooldown.
    Cooldown,
    /// The trigger's profiles already running reached `max_concurrent`.
    Capped,
    /// The host's target was being profiled already (that profile is
    /// named).
    Busy,
    /// The profile could not be started (the reason says why).
    Failed,
}

/// One firing: a host where the condition held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct TriggerFiring {
    pub id: Uuid,
    pub host: String,
    /// What the agent measured, in `unit`.
    pub observed: f64,
    pub unit: String,
    /// When the condition began to hold (the agent's clock).
    pub held_since: DateTime<Utc>,
    /// When the api-server received it.
    pub fired_at: DateTime<Utc>,
    pub outcome: FiringOutcome,
    pub reason: Option<String>,
    pub profile_id: Option<Uuid>,
}

/// `GET /api/v1/triggers/{id}/firings`: the latest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct TriggerFiringsResponse {
    pub firings: Vec<TriggerFiring>,
}
