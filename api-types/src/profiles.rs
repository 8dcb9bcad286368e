//! Starting, finding and reading profiles.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use odp_core::cost::StartOptions;
use odp_core::domain::ProfileMode;
use odp_core::runtime::ProfileRuntime;
use odp_core::{EventKind, ProfileStatus, Target};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// `POST /api/v1/profiles`: profile processes on a host, given by exactly
/// one of `pid`, `process_name`, `cmdline` or `cgroup`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StartRequest {
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub host: String,
    /// The service the target belongs to; defaults to `process_name`, or
    /// the host when profiling by pid. Required with `cmdline` and `cgroup`,
    /// which name no program to default to. Token `services` patterns
    /// apply to it.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub service: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub pid: Option<u32>,
    /// The executable name (`/proc/PID/comm`), without `/`.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 255))]
    pub process_name: Option<String>,
    /// A regex (unanchored) over the full command line, arguments joined
    /// by spaces: every matching process is profiled.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 1000))]
    pub cmdline: Option<String>,
    /// A cgroup path (`/system.slice/x.service`; processes in it and below
    /// it) or a container id (12 to 64 hex digits).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 4096))]
    pub cgroup: Option<String>,
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 3600))]
    pub duration_secs: u64,
    /// Samples per second; 99 when absent.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 10000))]
    pub frequency_hz: Option<u32>,
    /// Aggregation window; the agent's default (10 s) when absent.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 300))]
    pub window_secs: Option<u64>,
    /// Free-form labels to find the profile by (`{"env": "prod"}`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Plugin, event and cost control; the agent's defaults when absent.
    #[serde(default)]
    pub options: Option<ProfileOptions>,
}

/// Plugin, event and cost control of a start or of a schedule's runs;
/// absent fields take the agent's defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ProfileOptions {
    /// `native`, `python` or `jvm`: overrides the agent's language
    /// detection (e.g. `native` on a Python process to see the
    /// interpreter's C frames).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(example = "jvm"))]
    pub plugin: Option<String>,
    /// `cpu-clock` (the default; `cycles` where a PMU exists); `off-cpu`
    /// (native: time threads spend switched out, at the stack where they
    /// blocked); `wall` (native and python: on and off CPU alike); for the
    /// JVM `alloc-bytes` (allocation samples), `heap-bytes` (one class
    /// histogram when the profile ends) or `lock` (time waiting for
    /// monitors and parked). Decides the profile's mode: a CPU and an
    /// off-CPU profile of one target may run at once.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(example = "off-cpu"))]
    pub event: Option<String>,
    /// `off-cpu` and `lock`: waits shorter than this many microseconds are
    /// not recorded (at most 10 s); every wait when absent.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(maximum = 10000000))]
    pub min_wait_us: Option<u64>,
    /// FSP: keep each window's busiest threads up to this cumulative share
    /// of its samples, in (0, 1]; the agent's default (0.99) when absent.
    #[serde(default)]
    pub fsp_share: Option<f64>,
    /// FDA: adapt the frequency to how fast the hot functions change.
    #[serde(default)]
    pub fda: Option<FdaOptions>,
    /// Sample `on_secs` out of every `period_secs`.
    #[serde(default)]
    pub duty_cycle: Option<DutyCycleOptions>,
    /// CPU the agent may spend on the profile, share of one core in
    /// (0, 1]; the agent's default (0.01) when absent.
    #[serde(default)]
    pub overhead_budget: Option<f64>,
    /// `pid` targets only: profile the process's descendants too (those
    /// alive at the start and those it forks later) and every thread of
    /// each; false when absent. Per CPU, a child is sampled from its first
    /// sample; where the agent samples per thread, descendants and threads
    /// are found by rescans (once a second), missing what lives shorter.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_children: bool,
}

/// Atys' Algorithm 1; absent fields take the defaults shown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FdaOptions {
    /// False turns FDA off even where the agent enables it by default.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(default = true))]
    pub enabled: Option<bool>,
    /// Jensen-Shannon divergence in (0, 1] above which hot spots changed.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(default = 0.05))]
    pub theta: Option<f64>,
    /// In (0, 1): up to f/λ on a change, down to f·λ when stable.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(default = 0.8))]
    pub lambda: Option<f64>,
    /// Stable windows before the frequency is lowered.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(default = 5, minimum = 1))]
    pub stable_windows: Option<u32>,
    /// Hottest functions compared.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(default = 10, minimum = 1))]
    pub top_n: Option<u32>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(default = 19, minimum = 1))]
    pub min_hz: Option<u32>,
    /// The requested frequency when absent.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 10000))]
    pub max_hz: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DutyCycleOptions {
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 3600))]
    pub on_secs: u64,
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 3600))]
    pub period_secs: u64,
}

/// A profile as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Profile {
    pub id: Uuid,
    pub host: String,
    pub service: String,
    pub target: Target,
    /// One live profile per mode and target.
    pub mode: ProfileMode,
    pub duration_ms: i64,
    pub frequency_hz: i32,
    pub status: ProfileStatus,
    pub status_reason: Option<String>,
    pub requested_by: String,
    /// What the agent measures, once it started (`cycles` or, without a
    /// PMU, `cpu-clock` for a CPU profile).
    pub event: Option<EventKind>,
    pub agent_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub labels: BTreeMap<String, String>,
    /// The plugin, event and cost control the start asked for (the start
    /// request's `options`, as the agent received them); `{}` for the
    /// agent's defaults.
    pub options: StartOptions,
    /// What the agent reported about the target once it started. Only on
    /// `GET /api/v1/profiles/{id}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<ProfileRuntime>,
    /// What the target earned against what the profile holds, and what
    /// was lost and why. Only on `GET /api/v1/profiles/{id}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<crate::SampleCoverage>,
    pub links: ProfileLinks,
}

/// Where to act on a profile and read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ProfileLinks {
    #[serde(rename = "self")]
    pub this: String,
    pub stop: String,
    pub flamegraph: String,
    pub flamegraph_svg: String,
    pub folded: String,
    pub top: String,
}

impl ProfileLinks {
    /// The links of profile `id`.
    pub fn of(id: Uuid) -> ProfileLinks {
        let base = format!("/api/v1/profiles/{id}");
        ProfileLinks {
            stop: format!("{base}/stop"),
            flamegraph: format!("{base}/flamegraph"),
            flamegraph_svg: format!("{base}/flamegraph?format=svg"),
            folded: format!("{base}/flamegraph?format=folded"),
            top: format!("{base}/top"),
            this: base,
        }
    }
}

/// A page of profiles, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ProfilesPage {
    pub profiles: Vec<Profile>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// What Pyroscope's `/ingest` stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct IngestedProfiles {
    /// The profiles stored, one per event the body measures (the same
    /// ones again for a retry); none for a body without samples.
    pub profiles: Vec<Uuid>,
}

/// A refused start: the target already has a live profile of this mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct DuplicateStart {
    pub error: crate::ErrorDetail,
    /// The live profile.
    pub profile: Profile,
}
