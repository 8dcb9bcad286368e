//! Schemas of the JSON shapes the API answers with whose Rust types live
//! in `odp-store` and `odp-core`, crates that know nothing of OpenAPI.
//! Each mirrors one serialized type field for field; the unit tests below
//! serialize the real types and compare their keys with these schemas,
//! and schemathesis checks live responses against them, so a field added
//! on one side and not the other fails the suite.
//!
//! These structs are never built: they exist for their `ToSchema` derive.
#![allow(dead_code)]

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// Which process(es) a profile samples (`odp_core::Target`).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case", tag = "by", content = "value")]
pub(crate) enum Target {
    /// One process by id.
    Pid(u32),
    /// Every process whose executable name equals this.
    ProcessName(String),
    /// Every process whose command line matches this regex.
    #[serde(rename = "cmdline")]
    CommandLine(String),
    /// Every process in this cgroup or below, or in this container.
    Cgroup(String),
    /// Samples uploaded from another tool's file in this format.
    Imported(String),
}

/// How an agent undeploys (`odp_core::command::UndeployMode`).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum UndeployMode {
    /// Stop running profiles, flush them and exit.
    Now,
    /// Refuse new profiles and exit once running ones finish.
    Drain,
}

/// A profile as the API shows it: the stored row plus links.
#[derive(Serialize, ToSchema)]
pub(crate) struct Profile {
    pub id: Uuid,
    pub host: String,
    pub service: String,
    pub target: Target,
    pub mode: String,
    pub duration_ms: i64,
    pub frequency_hz: i32,
    /// requested, dispatched, running, finished, stopped, failed or expired.
    pub status: String,
    pub status_reason: Option<String>,
    pub requested_by: String,
    pub event: Option<String>,
    pub agent_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub labels: BTreeMap<String, String>,
    /// The plugin, event and cost control the start asked for (the start
    /// request's `options`, as the agent received them); `{}` for the
    /// agent's defaults.
    #[schema(value_type = Object)]
    pub options: serde_json::Value,
    /// What the agent reported about the target once it started:
    /// `language`, `runtime_version` and `runtime` (`flags`, `libraries`
    /// of kind jar, python or shared with name and version, `executable`
    /// with path and build id). Only on `GET /api/v1/profiles/{id}`.
    #[schema(value_type = Option<Object>)]
    pub runtime: Option<serde_json::Value>,
    pub links: ProfileLinks,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct ProfileLinks {
    #[serde(rename = "self")]
    pub this: String,
    pub stop: String,
    pub flamegraph: String,
    pub flamegraph_svg: String,
    pub folded: String,
    pub top: String,
}

/// A deploy, undeploy or stop request and how it went.
#[derive(Serialize, ToSchema)]
pub(crate) struct ControlRequest {
    pub id: Uuid,
    /// deploy, undeploy or stop.
    pub kind: String,
    pub host: String,
    pub profile_id: Option<Uuid>,
    pub mode: Option<String>,
    pub requested_by: String,
    pub status: String,
    pub status_reason: Option<String>,
    pub command_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Serialize, ToSchema)]
pub(crate) struct Schedule {
    pub id: Uuid,
    pub name: String,
    pub service: String,
    pub host: String,
    pub target: Target,
    pub mode: String,
    pub duration_secs: i32,
    pub frequency_hz: i32,
    pub window_secs: Option<i32>,
    pub cron: String,
    pub timezone: String,
    pub enabled: bool,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub next_run_at: Option<DateTime<Utc>>,
    pub last_run_at: Option<DateTime<Utc>>,
    /// Plugin, event and cost control of every run (see `Profile`).
    #[schema(value_type = Object)]
    pub options: serde_json::Value,
}

/// A schedule with its latest runs, newest first.
#[derive(Serialize, ToSchema)]
pub(crate) struct ScheduleWithRuns {
    #[serde(flatten)]
    pub schedule: Schedule,
    pub runs: Vec<crate::routes::schedules::RunView>,
}

/// A stack matching a detection rule, frames root first.
#[derive(Serialize, ToSchema)]
pub(crate) struct IssueStack {
    pub stack_id: Uuid,
    pub count: u64,
    pub frames: Vec<String>,
}

/// A detection with its rule's text.
#[derive(Serialize, ToSchema)]
pub(crate) struct Issue {
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
    #[schema(value_type = Object, nullable)]
    pub detail: serde_json::Value,
    pub first_evaluated_at: DateTime<Utc>,
    pub last_evaluated_at: DateTime<Utc>,
}

/// A re-analysis of past profiles after a rule changed.
#[derive(Serialize, ToSchema)]
pub(crate) struct Reanalysis {
    pub id: Uuid,
    pub rule_id: String,
    pub requested_by: String,
    pub requested_at: DateTime<Utc>,
    /// `pending`, `running`, `finished` or `failed`.
    pub status: String,
    /// Profiles to evaluate, known once the pipeline starts the job.
    pub profiles_total: Option<i64>,
    pub profiles_done: i64,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
}

/// A detection rule.
#[derive(Serialize, ToSchema)]
pub(crate) struct Rule {
    pub id: String,
    pub title: String,
    pub explanation: String,
    pub fix: String,
    pub link: String,
    pub kind: String,
    /// The rule kind's own parameters.
    #[schema(value_type = Object)]
    pub spec: serde_json::Value,
    pub threshold_pct: f64,
    pub service_thresholds: BTreeMap<String, f64>,
    pub enabled: bool,
    /// `seed` or `user`.
    pub source: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// One alert to a channel (`odp_store::DeliveryRow`) and how sending it
/// went.
#[derive(Serialize, ToSchema)]
pub(crate) struct Delivery {
    pub id: Uuid,
    pub profile_id: Uuid,
    pub rule_id: String,
    pub rule_title: String,
    pub service: String,
    pub host: String,
    /// Matched samples, percent of the profile's samples.
    pub share: f64,
    pub threshold_pct: f64,
    pub detected_at: DateTime<Utc>,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    pub attempts: i32,
    /// When a pending delivery is next tried; `null` once it ended.
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Every attempt, first first.
    pub attempt_log: Vec<DeliveryAttempt>,
}

/// One try at sending a delivery (`odp_store::AttemptRow`).
#[derive(Serialize, ToSchema)]
pub(crate) struct DeliveryAttempt {
    pub attempt: i32,
    pub attempted_at: DateTime<Utc>,
    /// The HTTP status (webhook) or SMTP reply code (email), when the
    /// server answered.
    pub status_code: Option<i32>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    pub success: bool,
}

/// One window of a profile on one host.
#[derive(Serialize, ToSchema)]
pub(crate) struct TimelineWindow {
    pub host: String,
    pub window_start: DateTime<Utc>,
    pub window_end: DateTime<Utc>,
    pub event: String,
    pub samples: i64,
    pub frequency_hz: i32,
}

/// A flame graph node; the root is named `all`.
#[derive(Serialize, ToSchema)]
pub(crate) struct FlameNode {
    pub name: String,
    /// Samples in this node and everything it called.
    pub total: u64,
    /// Samples where this node was the leaf.
    pub self_count: u64,
    #[schema(no_recursion)]
    pub children: Vec<FlameNode>,
    /// Only on a node named `other` that stands for children cut by the
    /// node budget: how many (ask again with `focus` to open them).
    pub merged: Option<u32>,
}

/// A function's share of the samples, with one binomial standard error.
#[derive(Serialize, ToSchema)]
pub(crate) struct FunctionShare {
    pub function: String,
    pub self_samples: u64,
    pub total_samples: u64,
    pub self_share: f64,
    pub total_share: f64,
    pub self_share_stderr: f64,
}

/// A node of a differential flame graph.
#[derive(Serialize, ToSchema)]
pub(crate) struct DiffNode {
    pub name: String,
    pub baseline_total: u64,
    pub baseline_self: u64,
    pub target_total: u64,
    pub target_self: u64,
    pub baseline_share: f64,
    pub target_share: f64,
    #[schema(no_recursion)]
    pub children: Vec<DiffNode>,
}

/// How one function's share moved between baseline and target.
#[derive(Serialize, ToSchema)]
pub(crate) struct FunctionChange {
    pub function: String,
    pub baseline_self_share: f64,
    pub target_self_share: f64,
    pub baseline_total_share: f64,
    pub target_total_share: f64,
    pub delta_total_points: f64,
    pub delta_self_points: f64,
}

/// speedscope's file format (`format=speedscope`), as speedscope.app
/// reads it.
#[derive(Serialize, ToSchema)]
pub(crate) struct SpeedscopeFile {
    #[serde(rename = "$schema")]
    pub schema: String,
    #[schema(value_type = Object)]
    pub shared: serde_json::Value,
    #[schema(value_type = Vec<Object>)]
    pub profiles: Vec<serde_json::Value>,
    pub name: String,
    #[serde(rename = "activeProfileIndex")]
    pub active_profile_index: usize,
    pub exporter: String,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use odp_store::{ProfileRow, RequestRow, ScheduleRow};

    use super::*;
    use crate::service::profiles::ProfileView;

    /// The property names of component schema `name` in the document.
    fn documented_keys(name: &str) -> BTreeSet<String> {
        let document = serde_json::to_value(crate::openapi::document()).unwrap();
        let schema = &document["components"]["schemas"][name];
        let properties = schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("schema {name} has properties: {schema}"));
        properties.keys().cloned().collect()
    }

    fn keys(value: impl Serialize) -> BTreeSet<String> {
        let value = serde_json::to_value(value).unwrap();
        value.as_object().unwrap().keys().cloned().collect()
    }

    #[test]
    fn mirrors_have_the_fields_of_the_types_they_document() {
        let now = Utc::now();
        let profile = ProfileRow {
            id: Uuid::nil(),
            host: "h".into(),
            service: "s".into(),
            target: odp_core::Target::Pid(1),
            mode: "cpu".into(),
            duration_ms: 1,
            frequency_hz: 1,
            status: "running".into(),
            status_reason: None,
            requested_by: "me".into(),
            event: None,
            agent_id: None,
            created_at: now,
            updated_at: now,
            started_at: None,
            finished_at: None,
            labels: Default::default(),
            options: Default::default(),
        };
        let view = ProfileView {
            runtime: Some(Default::default()),
            ..ProfileView::from(profile)
        };
        assert_eq!(keys(view), documented_keys("Profile"));
        let request = RequestRow {
            id: Uuid::nil(),
            kind: "stop".into(),
            host: "h".into(),
            profile_id: None,
            mode: None,
            requested_by: "me".into(),
            status: "requested".into(),
            status_reason: None,
            command_id: None,
            created_at: now,
            updated_at: now,
        };
        assert_eq!(keys(request), documented_keys("ControlRequest"));
        let schedule = ScheduleRow {
            id: Uuid::nil(),
            name: "n".into(),
            service: "s".into(),
            host: "h".into(),
            target: odp_core::Target::ProcessName("p".into()),
            mode: "cpu".into(),
            duration_secs: 1,
            frequency_hz: 1,
            window_secs: None,
            cron: "* * * * *".into(),
            timezone: "UTC".into(),
            enabled: true,
            created_by: "me".into(),
            created_at: now,
            updated_at: now,
            next_run_at: None,
            last_run_at: None,
            options: Default::default(),
        };
        assert_eq!(keys(schedule), documented_keys("Schedule"));
        let rule = odp_store::RuleRow {
            rule: odp_rules::RuleDef {
                id: "r".into(),
                title: "t".into(),
                explanation: "e".into(),
                fix: "f".into(),
                link: "l".into(),
                kind: "stack_share".into(),
                spec: serde_json::json!({}),
                threshold_pct: 1.0,
                service_thresholds: Default::default(),
                enabled: true,
            },
            source: "seed".into(),
            created_at: now,
            updated_at: now,
        };
        assert_eq!(keys(rule), documented_keys("Rule"));
        let attempt = odp_store::AttemptRow {
            attempt: 1,
            attempted_at: now,
            status_code: Some(200),
            error: None,
            success: true,
        };
        assert_eq!(keys(&attempt), documented_keys("DeliveryAttempt"));
        let delivery = odp_store::DeliveryRow {
            id: Uuid::nil(),
            profile_id: Uuid::nil(),
            rule_id: "r".into(),
            rule_title: "t".into(),
            service: "s".into(),
            host: "h".into(),
            share: 1.0,
            threshold_pct: 1.0,
            detected_at: now,
            status: "delivered".into(),
            attempts: 1,
            next_attempt_at: None,
            created_at: now,
            finished_at: Some(now),
            attempt_log: vec![attempt],
        };
        assert_eq!(keys(delivery), documented_keys("Delivery"));
        let node = odp_core::flamegraph::FlameNode {
            merged: 1,
            ..odp_core::flamegraph::build(&[])
        };
        assert_eq!(keys(node), documented_keys("FlameNode"));
    }
}
