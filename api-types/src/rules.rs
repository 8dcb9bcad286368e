//! Detection rules, their re-analyses of past profiles, and what they
//! found in a profile.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use odp_core::domain::ReanalysisStatus;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::enabled;

/// A rule as an admin writes it (`POST` carries the `id`; `PUT` takes it
/// from the path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RuleBody {
    /// Lower-case letters, digits, `.`, `-` and `_`; 1 to 63 characters.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 63, pattern = "^[a-z0-9][a-z0-9._-]*$")
    )]
    pub id: Option<String>,
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 200))]
    pub title: String,
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 4000))]
    pub explanation: String,
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 4000))]
    pub fix: String,
    /// An http(s) link to read more.
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 2000))]
    pub link: String,
    /// `stack_share`, `share_regression`, `library_version` or
    /// `runtime_option` (see rules/README.md).
    pub kind: String,
    /// The kind's parameters, e.g. `{"function": "regex", "leaf_only": true}`.
    #[cfg_attr(feature = "schema", schema(value_type = Object))]
    pub spec: serde_json::Value,
    #[cfg_attr(feature = "schema", schema(minimum = 0, maximum = 100))]
    pub threshold_pct: f64,
    /// Per-service overrides of `threshold_pct`.
    #[serde(default)]
    pub service_thresholds: BTreeMap<String, f64>,
    #[serde(default = "enabled")]
    pub enabled: bool,
}

/// `PATCH`: absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RulePatch {
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 0, maximum = 100))]
    pub threshold_pct: Option<f64>,
    /// Replaces all the per-service overrides.
    #[serde(default)]
    pub service_thresholds: Option<BTreeMap<String, f64>>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(value_type = Option<Object>))]
    pub spec: Option<serde_json::Value>,
}

/// A detection rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Rule {
    pub id: String,
    pub title: String,
    pub explanation: String,
    pub fix: String,
    pub link: String,
    pub kind: String,
    /// The rule kind's own parameters.
    #[cfg_attr(feature = "schema", schema(value_type = Object))]
    pub spec: serde_json::Value,
    pub threshold_pct: f64,
    pub service_thresholds: BTreeMap<String, f64>,
    pub enabled: bool,
    /// `seed` or `user`.
    pub source: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A rule with its latest re-analysis of past profiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RuleView {
    #[serde(flatten)]
    #[cfg_attr(feature = "schema", schema(inline))]
    pub rule: Rule,
    pub reanalysis: Option<Reanalysis>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RulesResponse {
    pub rules: Vec<Rule>,
}

/// A re-analysis of past profiles after a rule changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Reanalysis {
    pub id: Uuid,
    pub rule_id: String,
    pub requested_by: String,
    pub requested_at: DateTime<Utc>,
    pub status: ReanalysisStatus,
    /// Profiles to evaluate, known once the pipeline starts the job.
    pub profiles_total: Option<i64>,
    pub profiles_done: i64,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
}

/// A stack matching a detection rule, frames root first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct IssueStack {
    pub stack_id: Uuid,
    pub count: u64,
    pub frames: Vec<String>,
}

/// A detection with its rule's text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Issue {
    pub rule_id: String,
    pub kind: String,
    pub title: String,
    pub explanation: String,
    pub fix: String,
    pub link: String,
    pub share: f64,
    pub threshold_pct: f64,
    pub samples_matched: u64,
    pub samples_total: u64,
    pub stacks: Vec<IssueStack>,
    /// What the rule kind found beyond the share: for `share_regression`,
    /// `{runs_compared, functions: [{function, share_pct, baseline_pct,
    /// growth_points}], new_rules}`; `null` for the others.
    #[cfg_attr(feature = "schema", schema(value_type = Object, nullable))]
    pub detail: serde_json::Value,
    pub first_evaluated_at: DateTime<Utc>,
    pub last_evaluated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct IssuesResponse {
    pub profile_id: Uuid,
    /// Detections, largest share first, each with its rule's title,
    /// explanation, fix and link and its heaviest matching stacks.
    pub issues: Vec<Issue>,
}
