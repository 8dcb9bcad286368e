//! What a run's reads answer: its aggregate as a flame graph or a
//! functions table, its members' windows, and its hosts compared with
//! each other.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use odp_core::flamegraph::FlameNode;
use odp_core::run::outliers::{FunctionMove, OutlierOptions};
use odp_core::speedscope;
use odp_core::stats::FunctionShare;
use odp_core::{EventKind, ProfileStatus};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{HostSummary, SampleUnit, TimelineWindow};

/// A run's aggregate (all its members) as a flame graph tree
/// (`format=json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunFlameGraphJson {
    pub run_id: Uuid,
    pub service: String,
    pub event: Option<EventKind>,
    /// What one sample stands for: multiply counts by it for time.
    #[serde(flatten)]
    pub units: SampleUnit,
    pub profiles: u64,
    pub snapshots: i64,
    /// Every sample of every member (the root's count).
    pub samples: u64,
    pub hosts: Vec<HostSummary>,
    pub root: FlameNode,
}

/// A run's flame graph JSON answers: the tree or a speedscope file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum RunFlameGraphBody {
    Tree(RunFlameGraphJson),
    Speedscope(speedscope::File),
}

/// A run's hottest functions over all its members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunTopResponse {
    pub run_id: Uuid,
    pub service: String,
    pub event: Option<EventKind>,
    #[serde(flatten)]
    pub units: SampleUnit,
    pub samples: u64,
    /// Hosts with samples.
    pub hosts: usize,
    /// Hottest first by self samples.
    pub functions: Vec<FunctionShare>,
}

/// A run's members' windows, in time order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunTimelineJson {
    pub run_id: Uuid,
    pub windows: Vec<TimelineWindow>,
    /// The members' windows summed: what their targets earned, what the
    /// run holds, and what was lost and why.
    #[serde(default)]
    pub coverage: crate::SampleCoverage,
}

/// One of a host's hottest functions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct HostFunction {
    pub function: String,
    pub self_samples: u64,
    /// Of the host's samples.
    pub self_share: f64,
}

/// One chosen host of a run: its member, its samples, its hottest
/// functions and how far it is from the other hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunHost {
    pub host: String,
    /// The labels its agent reports (empty when it no longer reports the
    /// service).
    pub labels: BTreeMap<String, String>,
    /// Absent when the host's member could not be started.
    pub profile_id: Option<Uuid>,
    pub status: ProfileStatus,
    pub samples: u64,
    pub snapshots: i64,
    /// Its largest self shares, hottest first.
    pub top: Vec<HostFunction>,
    /// Chi-square statistic of its function counts against the other
    /// hosts pooled (0 when not tested).
    pub statistic: f64,
    /// Degrees of freedom (0 when not tested: no samples or no peers).
    pub df: usize,
    pub p_value: f64,
    /// Total variation distance of its shares from the others', 0 to 1.
    pub distance: f64,
    /// `p_value` is below `alpha / hosts`.
    pub outlier: bool,
    /// The function whose self share moved most from the others'.
    pub moved: Option<FunctionMove>,
}

/// `GET /api/v1/runs/{id}/hosts`: the per-host breakdown and the hosts
/// whose function mix differs most from the rest of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunHostsResponse {
    pub run_id: Uuid,
    pub service: String,
    pub event: Option<EventKind>,
    #[serde(flatten)]
    pub units: SampleUnit,
    pub samples: u64,
    /// How hosts were compared.
    pub options: OutlierOptions,
    /// `alpha / hosts`: p-values below it are flagged.
    pub threshold: f64,
    /// The run's top functions the test compares one by one.
    pub functions: Vec<String>,
    /// Every chosen host, most different first (by statistic).
    pub hosts: Vec<RunHost>,
    /// The flagged hosts, most different first.
    pub outliers: Vec<String>,
}

/// A host of a run and how much of its samples a finding's rule matched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunIssueHost {
    pub host: String,
    pub profile_id: Uuid,
    /// Percent of the host's samples (or the rule kind's score).
    pub share: f64,
    pub samples: u64,
}

/// A rule that flagged a run's merged samples: one finding (and one alert
/// per channel) for the whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunIssue {
    /// The finding on the merged samples of every member.
    #[serde(flatten)]
    pub issue: crate::Issue,
    /// The hosts where the rule measures most, highest first (at most 5).
    pub hosts: Vec<RunIssueHost>,
}

/// `GET /api/v1/runs/{id}/issues`: what the rules found in the run once it
/// ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunIssuesResponse {
    pub run_id: Uuid,
    /// When the rules judged the run; `null` while it runs and until the
    /// pipeline has evaluated it (about a second after it ended).
    pub evaluated_at: Option<DateTime<Utc>>,
    /// Largest share first.
    pub issues: Vec<RunIssue>,
}
