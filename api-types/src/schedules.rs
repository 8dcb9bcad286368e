//! Cron schedules of profiles.

use chrono::{DateTime, Utc};
use odp_core::cost::StartOptions;
use odp_core::domain::{ProfileMode, RunOutcome};
use odp_core::run::ScheduleRun;
use odp_core::Target;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::enabled;
use crate::profiles::ProfileOptions;

/// `POST /api/v1/schedules`: the target as for a start (one of `pid`,
/// `process_name`, `cmdline` or `cgroup`), and when to profile it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateScheduleRequest {
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub name: String,
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub service: Option<String>,
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub host: String,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub pid: Option<u32>,
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
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 3600))]
    pub duration_secs: u64,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 10000))]
    pub frequency_hz: Option<u32>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 300))]
    pub window_secs: Option<u64>,
    /// Five fields (minute hour day-of-month month day-of-week), or six
    /// with seconds first.
    pub cron: String,
    /// An IANA time zone the cron expression is read in; UTC when absent.
    #[serde(default = "utc")]
    pub timezone: String,
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// Plugin, event and cost control of every run (see the start request).
    #[serde(default)]
    pub options: Option<ProfileOptions>,
}

fn utc() -> String {
    "UTC".into()
}

/// `POST /api/v1/schedules` with `run`: a schedule that starts a run of a
/// defined service each time it fires, on the hosts chosen then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateRunScheduleRequest {
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub name: String,
    /// A defined service (`POST /api/v1/services`).
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub service: String,
    pub run: ScheduleRun,
    /// The longest each member profiles.
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 3600))]
    pub duration_secs: u64,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 10000))]
    pub frequency_hz: Option<u32>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 300))]
    pub window_secs: Option<u64>,
    /// As for a host schedule.
    pub cron: String,
    #[serde(default = "utc")]
    pub timezone: String,
    #[serde(default = "enabled")]
    pub enabled: bool,
    #[serde(default)]
    pub options: Option<ProfileOptions>,
}

/// `POST /api/v1/schedules`: a schedule of one host's target, or, with
/// `run`, of a run of a service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum NewScheduleRequest {
    Run(CreateRunScheduleRequest),
    Host(CreateScheduleRequest),
}

/// `PATCH /api/v1/schedules/{id}`: absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateScheduleRequest {
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub cron: Option<String>,
    #[serde(default)]
    pub timezone: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 3600))]
    pub duration_secs: Option<u64>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 10000))]
    pub frequency_hz: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Schedule {
    pub id: Uuid,
    pub name: String,
    pub service: String,
    pub host: String,
    pub target: Target,
    pub mode: ProfileMode,
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
    pub options: StartOptions,
    /// A run schedule's run: each firing starts a run of `service` on the
    /// hosts chosen then (`host` is then `*`, and `target` the service's
    /// when the schedule was made; the run profiles the service's target
    /// at the time). Absent for a schedule of one host's target.
    #[serde(default)]
    pub run: Option<ScheduleRun>,
}

/// A schedule with its latest runs, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ScheduleWithRuns {
    #[serde(flatten)]
    pub schedule: Schedule,
    pub runs: Vec<RunView>,
}

/// One firing of a schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunView {
    pub scheduled_for: DateTime<Utc>,
    pub fired_at: DateTime<Utc>,
    pub outcome: RunOutcome,
    pub profile_id: Option<Uuid>,
    /// The run a run schedule's firing started.
    #[serde(default)]
    pub run_id: Option<Uuid>,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct SchedulesResponse {
    pub schedules: Vec<Schedule>,
}
