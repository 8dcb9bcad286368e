//! Runs: one on-demand profile of a service across the hosts chosen from
//! those that run it, ended early by a stop rule once its top shares are
//! known well enough.

use chrono::{DateTime, Utc};
use odp_core::run::{HostSelection, Selection, StopDecision, StopRule};
use odp_core::ProfileStatus;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::profiles::ProfileOptions;

/// `POST /api/v1/runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateRunRequest {
    /// A defined service (`POST /api/v1/services`).
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub service: String,
    /// Which of the live hosts running the service: `"all"` (default),
    /// `{"count": K}` or `{"percent": P}`, uniformly without replacement.
    #[serde(default = "all_hosts")]
    pub hosts: HostSelection,
    /// Host labels to stratify by (`["zone"]`): hosts are allocated to
    /// each combination in proportion, at least one each when K allows.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(max_items = 4))]
    pub stratify_by: Vec<String>,
    /// The same seed and hosts choose the same hosts; random when absent
    /// (the run records the one it used).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Refuse (422) rather than take every host when K exceeds them.
    #[serde(default)]
    pub strict: bool,
    /// The longest each member profiles.
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 3600))]
    pub duration_secs: u64,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub frequency_hz: Option<u32>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 300))]
    pub window_secs: Option<u64>,
    /// Ends the run early once the `top` largest self shares of its
    /// aggregate each have a standard error of at most `max_stderr`.
    #[serde(default)]
    pub stop_when: Option<StopRule>,
    #[serde(default)]
    pub options: Option<ProfileOptions>,
}

fn all_hosts() -> HostSelection {
    HostSelection::All
}

/// Where a run is: `dispatching` until a member runs, `running`, then
/// `finished`, `stopped` (on request), `precise` (its stop rule was met)
/// or `partial` (every member ended, and some chosen hosts have no
/// profile to show: not started, failed or expired; each member's `reason`
/// says why, and the rest of the run is kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Dispatching,
    Running,
    Finished,
    Stopped,
    Precise,
    Partial,
}

/// One chosen host's member profile, or why it has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunMember {
    pub host: String,
    /// Absent when no profile was recorded for the host (its target
    /// already had a live profile, or the start failed before recording
    /// one); a start the broker refused links its failed profile.
    pub profile_id: Option<Uuid>,
    /// `failed` for a member that was not started.
    pub status: ProfileStatus,
    /// Why a member failed, expired or was not started: a member not
    /// started says `not started: ...` (`the target already has a live
    /// profile <id>`, `the broker refused the start command: ...`).
    pub reason: Option<String>,
}

/// A run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Run {
    pub id: Uuid,
    pub service: String,
    pub status: RunStatus,
    pub status_reason: Option<String>,
    pub hosts: HostSelection,
    pub stratify_by: Vec<String>,
    pub seed: u64,
    /// The hosts chosen, from how many, and per stratum.
    pub selection: Selection,
    pub members: Vec<RunMember>,
    pub stop_when: Option<StopRule>,
    pub duration_secs: u64,
    /// The largest standard error among the top shares when last checked.
    pub reached_epsilon: Option<f64>,
    pub samples_used: Option<i64>,
    /// What ending at the stop rule saved of the maximum duration.
    pub saved_secs: Option<f64>,
    pub requested_by: String,
    pub created_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
}

/// `GET /api/v1/runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunsResponse {
    pub runs: Vec<Run>,
}

/// `GET /api/v1/runs/{id}/precision`: the run's aggregate's top shares
/// with their standard errors now, and whether its stop rule is met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunPrecision {
    pub run: Uuid,
    /// The rule evaluated (the run's own, or top 5 to ±1% without one).
    pub stop_when: StopRule,
    pub decision: StopDecision,
}
