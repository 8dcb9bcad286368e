//! What a run schedule starts each time it fires: kept with the schedule
//! (the store writes it as JSON) and shown by the API as it is.

use serde::{Deserialize, Serialize};

use super::{HostSelection, StopRule};

/// The run a run schedule starts each time it fires, as `POST
/// /api/v1/runs` would (the service, duration, frequency, window and
/// options are the schedule's own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ScheduleRun {
    /// Which of the live hosts running the service: `"all"` (default),
    /// `{"count": K}` or `{"percent": P}`, chosen anew at each firing.
    #[serde(default = "all_hosts")]
    pub hosts: HostSelection,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(max_items = 4))]
    pub stratify_by: Vec<String>,
    /// The same seed at every firing (random each time when absent).
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub strict: bool,
    #[serde(default)]
    pub stop_when: Option<StopRule>,
}

fn all_hosts() -> HostSelection {
    HostSelection::All
}
