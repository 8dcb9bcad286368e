//! Cost control of a profile: the optional settings a start command may
//! carry, and the reports an agent publishes on `odp.events` about what it
//! adjusted.
//!
//! The settings travel as further optional fields of the start action's
//! JSON, next to those of [`StartProfile`](crate::command::StartProfile)
//! (`{"kind":"start", ..., "fsp_share":0.95, "fda":{"theta":0.05}}`): an
//! agent that does not know them ignores them, and a command without them
//! gets the agent's defaults. They are the start's
//! [`options`](crate::command::StartProfile::options) field, flattened
//! into it; the API and the store keep them on their own too.
//!
//! The reports travel on `odp.events` as
//! [`AgentEventKind::Cost`](crate::event::AgentEventKind::Cost), with the
//! same envelope and flat `type` tag as every other agent event.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::model::{EventKind, Language};
use crate::Target;

/// Per-profile cost-control settings; every field absent means "the
/// agent's default".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct StartOptions {
    /// FSP: keep the busiest threads up to this cumulative share of a
    /// window's samples, in (0, 1]; 1 keeps every thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsp_share: Option<f64>,
    /// FDA: adapt the sampling frequency to how fast hot spots change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fda: Option<FdaSettings>,
    /// Sample only `on_ms` of every `period_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duty_cycle: Option<DutyCycle>,
    /// CPU the agent may spend on this profile, as a share of one core
    /// (0.01 = 1 %); the frequency is lowered to stay inside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_budget: Option<f64>,
    /// The plugin that samples the target, overriding the agent's language
    /// detection (e.g. `native` for a Python process, to see the
    /// interpreter's own C frames). Not cost control, but it rides in the
    /// start action the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<Language>,
    /// What to measure when the plugin can measure several things (the
    /// `jvm` plugin: `cpu-clock`, or `alloc-bytes` from JFR allocation
    /// samples); the plugin's CPU event when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<EventKind>,
    /// For wait events (`off-cpu`, `lock`): waits shorter than this many
    /// microseconds are not recorded, which keeps the cost of a target
    /// that blocks very often for very short times down. Their time is
    /// missing from the profile, so the default records every wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_wait_us: Option<u64>,
    /// A pid target's descendants are profiled too: those alive at the
    /// start and those forked later, with every thread of each; for pid
    /// targets only. Left out when false, so commands and stored options
    /// without it read as before; an agent older than the option ignores
    /// it and profiles the pid alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_children: bool,
}

/// Longest [`StartOptions::min_wait_us`] accepted: 10 s.
pub const MAX_MIN_WAIT_US: u64 = 10_000_000;

/// Frequency dynamic adjustment (Atys, Algorithm 1). Absent fields take
/// the defaults below.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct FdaSettings {
    /// False turns FDA off for this profile even when the agent's default
    /// is on.
    pub enabled: bool,
    /// Jensen-Shannon divergence (bits, in [0, 1]) above which hot spots
    /// count as changed.
    pub theta: f64,
    /// Decay factor in (0, 1): up to f/λ on a change, down to f·λ when
    /// stable.
    pub lambda: f64,
    /// Consecutive stable windows before the frequency is lowered.
    pub stable_windows: u32,
    /// How many of the hottest leaf functions are compared.
    pub top_n: u32,
    pub min_hz: u32,
    /// Highest frequency; the requested one when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_hz: Option<u32>,
}

impl Default for FdaSettings {
    fn default() -> Self {
        FdaSettings {
            enabled: true,
            theta: 0.05,
            lambda: 0.8,
            stable_windows: 5,
            top_n: 10,
            min_hz: 19,
            max_hz: None,
        }
    }
}

/// Profile for `on_ms` at the start of every `period_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct DutyCycle {
    pub on_ms: u64,
    pub period_ms: u64,
}

/// The highest sampling frequency a profile may ask for.
pub const MAX_FREQUENCY_HZ: u32 = 10_000;

/// Why a profile's cost-control options cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionsError {
    #[error("{name} {value} is outside (0, {top}]")]
    ShareOutOfRange {
        name: &'static str,
        value: f64,
        top: f64,
    },
    #[error("fda.lambda {0} is outside (0, 1)")]
    FdaLambda(f64),
    #[error("fda.stable_windows and fda.top_n must be at least 1")]
    FdaCounts,
    #[error("fda bounds {min_hz}..={max_hz} Hz: need 1 <= min <= max <= {MAX_FREQUENCY_HZ}")]
    FdaBounds { min_hz: u32, max_hz: u32 },
    #[error("duty cycle on {on_ms} ms of every {period_ms} ms: need 0 < on <= period")]
    DutyCycle { on_ms: u64, period_ms: u64 },
    #[error("min_wait_us applies to the off-cpu and lock events only")]
    MinWaitWithoutWaits,
    #[error("min_wait_us {0} is above {MAX_MIN_WAIT_US} (10 s)")]
    MinWaitTooLong(u64),
    #[error("the {plugin} plugin cannot measure {event}; {}", Language::MEASURES)]
    PluginCannotMeasure { plugin: Language, event: EventKind },
    #[error("no plugin measures {event}; {}", Language::MEASURES)]
    NoPluginMeasures { event: EventKind },
    #[error("include_children applies to pid targets only, not to {0}")]
    ChildrenOfPidOnly(String),
}

/// `value` when it lies in (0, `top`], else why not.
pub fn check_share(name: &'static str, value: f64, top: f64) -> Result<f64, OptionsError> {
    if value > 0.0 && value <= top {
        Ok(value)
    } else {
        Err(OptionsError::ShareOutOfRange { name, value, top })
    }
}

impl StartOptions {
    /// Checks the options of a profile asking for `frequency_hz`, as both
    /// the API (before dispatching) and the agent (on receipt) do.
    pub fn check(&self, frequency_hz: u32) -> Result<(), OptionsError> {
        if let Some(share) = self.fsp_share {
            check_share("fsp_share", share, 1.0)?;
        }
        if let Some(budget) = self.overhead_budget {
            check_share("overhead_budget", budget, 1.0)?;
        }
        if let Some(duty) = &self.duty_cycle {
            duty.check()?;
        }
        if let Some(fda) = self.fda.as_ref().filter(|f| f.enabled) {
            fda.bounds(frequency_hz)?;
        }
        if let Some(min_wait) = self.min_wait_us {
            let waits = matches!(self.event, Some(EventKind::OffCpu | EventKind::Lock));
            if !waits {
                return Err(OptionsError::MinWaitWithoutWaits);
            }
            if min_wait > MAX_MIN_WAIT_US {
                return Err(OptionsError::MinWaitTooLong(min_wait));
            }
        }
        match (self.plugin, self.event) {
            (Some(plugin), Some(event)) if !plugin.measures(event) => {
                Err(OptionsError::PluginCannotMeasure { plugin, event })
            }
            (None, Some(event)) if !Language::ALL.iter().any(|l| l.measures(event)) => {
                Err(OptionsError::NoPluginMeasures { event })
            }
            _ => Ok(()),
        }
    }

    /// Checks the options against the profile's target: following
    /// children is defined for one process, whose descendants are its
    /// tree; a broad target already designates every process it wants.
    pub fn check_target(&self, target: &Target) -> Result<(), OptionsError> {
        match target {
            Target::Pid(_) => Ok(()),
            other if self.include_children => {
                Err(OptionsError::ChildrenOfPidOnly(other.to_string()))
            }
            _ => Ok(()),
        }
    }
}

impl FdaSettings {
    /// The frequency bounds for a profile asking for `frequency_hz`, after
    /// checking every parameter.
    pub fn bounds(&self, frequency_hz: u32) -> Result<(u32, u32), OptionsError> {
        check_share("fda.theta", self.theta, 1.0)?;
        if !(self.lambda > 0.0 && self.lambda < 1.0) {
            return Err(OptionsError::FdaLambda(self.lambda));
        }
        if self.stable_windows == 0 || self.top_n == 0 {
            return Err(OptionsError::FdaCounts);
        }
        let max_hz = self.max_hz.unwrap_or(frequency_hz);
        // The default floor never exceeds a low requested frequency.
        let min_hz = if self.max_hz.is_none() {
            self.min_hz.min(max_hz)
        } else {
            self.min_hz
        };
        if min_hz == 0 || min_hz > max_hz || max_hz > MAX_FREQUENCY_HZ {
            return Err(OptionsError::FdaBounds { min_hz, max_hz });
        }
        Ok((min_hz, max_hz))
    }
}

impl DutyCycle {
    pub fn check(&self) -> Result<(), OptionsError> {
        if self.on_ms == 0 || self.on_ms > self.period_ms {
            return Err(OptionsError::DutyCycle {
                on_ms: self.on_ms,
                period_ms: self.period_ms,
            });
        }
        Ok(())
    }
}

/// Why a profile's sampling frequency changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdjustReason {
    /// FDA: the hot functions changed (divergence above θ), sample more.
    HotspotsChanged,
    /// FDA: the hot functions were stable for K windows, sample less.
    HotspotsStable,
    /// The agent spent more CPU than its overhead budget.
    OverheadBudget,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum CostEventKind {
    /// The frequency of a profile changed from the window after `sequence`.
    ProfileAdjusted {
        profile_id: Uuid,
        sequence: u64,
        previous_hz: u32,
        frequency_hz: u32,
        reason: AdjustReason,
    },
    /// What cost control saw and did in one window.
    WindowStats {
        profile_id: Uuid,
        sequence: u64,
        /// The frequency the window was sampled at.
        frequency_hz: u32,
        /// Samples of the threads kept (the snapshot's total less
        /// `samples_pruned`, which it holds as one `[pruned threads]` stack).
        samples: u64,
        /// Threads kept in the snapshot.
        threads: u32,
        /// FSP: threads and samples dropped before the snapshot was built.
        threads_pruned: u32,
        samples_pruned: u64,
        /// FDA: divergence from the previous window, when compared.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        divergence: Option<f64>,
        /// The CPU the profile's sampling thread used, share of one core.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu_share: Option<f64>,
    },
    /// How an off-CPU or wall window sampled the target's waits: of its
    /// `switches` context switches out, 1 in `sampled_one_in` was kept, each
    /// kept wait weighing that many times its length.
    WaitsSampled {
        profile_id: Uuid,
        sequence: u64,
        switches: u64,
        sampled_one_in: u64,
    },
}

impl CostEventKind {
    pub fn profile_id(&self) -> Uuid {
        match self {
            CostEventKind::ProfileAdjusted { profile_id, .. }
            | CostEventKind::WindowStats { profile_id, .. }
            | CostEventKind::WaitsSampled { profile_id, .. } => *profile_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{AgentEvent, AgentEventKind};
    use crate::Target;

    #[test]
    fn options_are_checked_against_the_frequency_and_the_plugin() {
        let ok = StartOptions {
            fsp_share: Some(1.0),
            fda: Some(FdaSettings::default()),
            duty_cycle: Some(DutyCycle {
                on_ms: 1000,
                period_ms: 1000,
            }),
            overhead_budget: Some(0.01),
            plugin: Some(Language::Jvm),
            event: Some(EventKind::HeapBytes),
            min_wait_us: None,
            include_children: false,
        };
        assert_eq!(ok.check(99), Ok(()));
        let bad = |options: StartOptions| options.check(99).unwrap_err().to_string();
        let waits = |event, min_wait_us| StartOptions {
            plugin: Some(Language::Native),
            event: Some(event),
            min_wait_us,
            ..ok.clone()
        };
        assert_eq!(waits(EventKind::OffCpu, Some(100)).check(99), Ok(()));
        assert!(bad(waits(EventKind::CpuClock, Some(100))).contains("min_wait_us applies"));
        assert!(bad(waits(EventKind::OffCpu, Some(MAX_MIN_WAIT_US + 1))).contains("10 s"));
        assert!(bad(waits(EventKind::Lock, None)).contains("native plugin cannot measure lock"));
        assert!(bad(StartOptions {
            fsp_share: Some(0.0),
            ..ok.clone()
        })
        .contains("fsp_share"));
        assert!(bad(StartOptions {
            overhead_budget: Some(1.5),
            ..ok.clone()
        })
        .contains("overhead_budget"));
        assert!(bad(StartOptions {
            duty_cycle: Some(DutyCycle {
                on_ms: 2000,
                period_ms: 1000
            }),
            ..ok.clone()
        })
        .contains("duty cycle"));
        let fda = |f: FdaSettings| StartOptions {
            fda: Some(f),
            ..ok.clone()
        };
        assert!(bad(fda(FdaSettings {
            lambda: 1.0,
            ..FdaSettings::default()
        }))
        .contains("lambda"));
        assert!(bad(fda(FdaSettings {
            min_hz: 200,
            max_hz: Some(100),
            ..FdaSettings::default()
        }))
        .contains("bounds"));
        // A disabled FDA's parameters do not matter.
        assert_eq!(
            fda(FdaSettings {
                enabled: false,
                lambda: 7.0,
                ..FdaSettings::default()
            })
            .check(99),
            Ok(())
        );
        // The default floor (19 Hz) follows a lower requested frequency.
        assert_eq!(FdaSettings::default().bounds(5), Ok((5, 5)));
        assert!(bad(StartOptions {
            plugin: Some(Language::Python),
            ..ok.clone()
        })
        .contains("python plugin cannot measure heap-bytes"));
        assert!(bad(StartOptions {
            plugin: Some(Language::Python),
            event: Some(EventKind::OffCpu),
            ..ok.clone()
        })
        .contains("python plugin cannot measure off-cpu"));
    }

    #[test]
    fn children_are_followed_for_pid_targets_only_and_absent_when_not() {
        let children = StartOptions {
            include_children: true,
            ..StartOptions::default()
        };
        assert_eq!(children.check_target(&Target::Pid(7)), Ok(()));
        let err = children
            .check_target(&Target::ProcessName("sh".into()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("include_children applies to pid targets only"),
            "{err}"
        );
        assert!(err.contains("process \"sh\""), "{err}");
        let cgroup = Target::Cgroup("/system.slice".into());
        assert_eq!(StartOptions::default().check_target(&cgroup), Ok(()));
        // Off, the field is left out: a command or a stored row reads as
        // before the option existed.
        let json = serde_json::to_value(StartOptions::default()).unwrap();
        assert_eq!(json, serde_json::json!({}));
        let json = serde_json::to_value(&children).unwrap();
        assert_eq!(json, serde_json::json!({"include_children": true}));
    }

    #[test]
    fn partial_fda_settings_take_defaults() {
        let options: StartOptions =
            serde_json::from_str(r#"{"kind":"start","fda":{"lambda":0.5},"other":1}"#).unwrap();
        let fda = options.fda.unwrap();
        assert_eq!(fda.lambda, 0.5);
        assert_eq!(fda.theta, 0.05);
        assert_eq!((fda.stable_windows, fda.top_n, fda.min_hz), (5, 10, 19));
        assert!(fda.enabled && fda.max_hz.is_none());
        assert!(serde_json::from_str::<StartOptions>(r#"{"fsp_share":"x"}"#).is_err());
    }

    #[test]
    fn cost_reports_travel_as_flat_tagged_agent_events() {
        let event = AgentEvent {
            host: "h".into(),
            agent_id: "a".into(),
            at_ms: 5,
            kind: AgentEventKind::Cost(CostEventKind::ProfileAdjusted {
                profile_id: Uuid::nil(),
                sequence: 3,
                previous_hz: 99,
                frequency_hz: 79,
                reason: AdjustReason::HotspotsStable,
            }),
        };
        let json: serde_json::Value = serde_json::from_slice(&event.to_json()).unwrap();
        assert_eq!(json["type"], "profile_adjusted");
        assert_eq!(json["reason"], "hotspots_stable");
        assert_eq!(json["host"], "h");
        assert_eq!(AgentEvent::from_json(&event.to_json()).unwrap(), event);
        assert_eq!(event.profile_id(), Some(Uuid::nil()));

        let stats = AgentEvent {
            kind: AgentEventKind::Cost(CostEventKind::WindowStats {
                profile_id: Uuid::nil(),
                sequence: 0,
                frequency_hz: 99,
                samples: 10,
                threads: 2,
                threads_pruned: 5,
                samples_pruned: 1,
                divergence: None,
                cpu_share: Some(0.004),
            }),
            ..event
        };
        let json: serde_json::Value = serde_json::from_slice(&stats.to_json()).unwrap();
        assert_eq!(json["type"], "window_stats");
        assert!(json.get("divergence").is_none());
        assert_eq!(AgentEvent::from_json(&stats.to_json()).unwrap(), stats);
        let waits = AgentEvent {
            kind: AgentEventKind::Cost(CostEventKind::WaitsSampled {
                profile_id: Uuid::nil(),
                sequence: 4,
                switches: 12_000,
                sampled_one_in: 8,
            }),
            ..stats
        };
        let json: serde_json::Value = serde_json::from_slice(&waits.to_json()).unwrap();
        assert_eq!(json["type"], "waits_sampled");
        assert_eq!(json["sampled_one_in"], 8);
        assert_eq!(AgentEvent::from_json(&waits.to_json()).unwrap(), waits);
        assert!(
            AgentEvent::from_json(br#"{"host":"h","agent_id":"a","at_ms":1,"type":"bogus"}"#)
                .is_err()
        );
    }
}
