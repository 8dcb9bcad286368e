//! What the query endpoints answer in JSON: flame graphs, function
//! tables, aggregates across hosts, diffs and timelines.

use chrono::{DateTime, Utc};
use odp_core::diff::{DiffNode, FunctionChange};
use odp_core::flamegraph::FlameNode;
use odp_core::speedscope;
use odp_core::stats::FunctionShare;
use odp_core::timeline::TimelineWindow;
use odp_core::EventKind;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What one sample of an answer stands for: `period` units of `unit`
/// (a sample of a 99 Hz CPU profile is 10,101,010 nanoseconds). Views
/// multiply counts by it to show time (or bytes), so that a wall or
/// off-CPU profile reads in seconds, not samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct SampleUnit {
    /// `nanoseconds`, `bytes`, `cycles`, or `samples` when the event is
    /// unknown (an imported file that did not say).
    pub unit: String,
    /// Units per sample, when known.
    pub period: Option<f64>,
}

/// A profile's flame graph tree (`format=json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct FlameGraphJson {
    pub profile_id: Uuid,
    pub event: Option<EventKind>,
    /// What one sample stands for: multiply counts by it for time.
    #[serde(flatten)]
    pub units: SampleUnit,
    pub snapshots: i64,
    pub samples: u64,
    pub root: FlameNode,
}

/// The flame graph's JSON answers: the tree (`format=json`) or a
/// speedscope file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum FlameGraphBody {
    Tree(FlameGraphJson),
    Speedscope(speedscope::File),
}

/// A profile's hottest functions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct TopResponse {
    pub profile_id: Uuid,
    pub event: Option<EventKind>,
    #[serde(flatten)]
    pub units: SampleUnit,
    pub samples: u64,
    /// Hottest first by self samples.
    pub functions: Vec<FunctionShare>,
}

/// One host's part of an aggregate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct HostSummary {
    pub host: String,
    pub samples: u64,
    pub profiles: u64,
    pub snapshots: i64,
}

/// A service's flame graph across its hosts and a time range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct AggregateJson {
    pub service: String,
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub event: Option<EventKind>,
    /// What one sample stands for: multiply counts by it for time.
    #[serde(flatten)]
    pub units: SampleUnit,
    pub profiles: u64,
    pub snapshots: i64,
    pub samples: u64,
    pub hosts: Vec<HostSummary>,
    /// What the windows' targets earned, what was captured, and what was
    /// lost and why (before thread and stack filters).
    #[serde(default)]
    pub coverage: crate::SampleCoverage,
    pub root: FlameNode,
}

/// The aggregate's JSON answers: the merged tree (`format=json`) or a
/// speedscope file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum AggregateBody {
    Tree(Box<AggregateJson>),
    Speedscope(speedscope::File),
}

/// One side of a diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct SideSummary {
    pub label: String,
    pub event: Option<EventKind>,
    /// What one sample of this side stands for.
    #[serde(flatten)]
    pub units: SampleUnit,
    pub samples: u64,
    pub profiles: u64,
}

/// Two profiles or aggregates compared, each normalized by its own total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct DiffJson {
    pub baseline: SideSummary,
    pub target: SideSummary,
    pub root: DiffNode,
    /// Largest total-share changes first.
    pub changes: Vec<FunctionChange>,
}

/// A profile's windows in time order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct TimelineJson {
    pub profile_id: Uuid,
    pub windows: Vec<TimelineWindow>,
}
