//! Cost control of a profile: the optional settings a start command may
//! carry, and the reports an agent publishes on `odp.events` about what it
//! adjusted.
//!
//! The settings travel as further optional fields of the start action's
//! JSON, next to those of [`StartProfile`](crate::command::StartProfile)
//! (`{"kind":"start", ..., "fsp_share":0.95, "fda":{"theta":0.05}}`): an
//! agent that does not know them ignores them, and a command without them
//! gets the agent's defaults. They are a separate type, read with
//! [`CommandVerifier::verify_with_options`](crate::command::CommandVerifier::verify_with_options),
//! so that code building `StartProfile` values keeps compiling.
//!
//! The reports travel on `odp.events` as
//! [`AgentEventKind::Cost`](crate::event::AgentEventKind::Cost), with the
//! same envelope and flat `type` tag as every other agent event.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::model::{EventKind, Language};

/// Per-profile cost-control settings; every field absent means "the
/// agent's default".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// start action the same way so `StartProfile` literals stay valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<Language>,
    /// What to measure when the plugin can measure several things (the
    /// `jvm` plugin: `cpu-clock`, or `alloc-bytes` from JFR allocation
    /// samples); the plugin's CPU event when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<EventKind>,
}

/// Frequency dynamic adjustment (Atys, Algorithm 1). Absent fields take
/// the defaults below.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
pub struct DutyCycle {
    pub on_ms: u64,
    pub period_ms: u64,
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
        /// Samples kept in the snapshot.
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
}

impl CostEventKind {
    pub fn profile_id(&self) -> Uuid {
        match self {
            CostEventKind::ProfileAdjusted { profile_id, .. }
            | CostEventKind::WindowStats { profile_id, .. } => *profile_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{
        generate_keypair, Command, CommandAction, CommandSigner, CommandVerifier, StartProfile,
    };
    use crate::event::{AgentEvent, AgentEventKind};
    use crate::Target;

    fn start() -> Command {
        Command {
            id: Uuid::new_v4(),
            host: "h".into(),
            issued_at: 100,
            expires_at: 200,
            action: CommandAction::Start(StartProfile {
                profile_id: Uuid::nil(),
                target: Target::Pid(1),
                duration_ms: 1000,
                frequency_hz: 99,
                window_ms: None,
            }),
        }
    }

    #[test]
    fn options_ride_in_the_signed_start_action() {
        let (private, public) = generate_keypair().unwrap();
        let signer = CommandSigner::from_private_pem(&private).unwrap();
        let options = StartOptions {
            fsp_share: Some(0.9),
            fda: Some(FdaSettings {
                theta: 0.1,
                ..FdaSettings::default()
            }),
            duty_cycle: Some(DutyCycle {
                on_ms: 1000,
                period_ms: 5000,
            }),
            overhead_budget: Some(0.02),
            plugin: Some(Language::Jvm),
            event: Some(EventKind::AllocBytes),
        };
        let command = start();
        let token = signer.sign_with_options(&command, &options).unwrap();
        let mut verifier = CommandVerifier::from_public_pem(&public, "h").unwrap();
        let (got, got_options) = verifier.verify_with_options(&token, 150).unwrap();
        assert_eq!((got, got_options), (command.clone(), options));

        // Without options: the old encoding, and every option absent.
        let other = Command {
            id: Uuid::new_v4(),
            ..command
        };
        let token = signer.sign(&other).unwrap();
        let (got, got_options) = verifier.verify_with_options(&token, 150).unwrap();
        assert_eq!((got, got_options), (other, StartOptions::default()));
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
        assert!(
            AgentEvent::from_json(br#"{"host":"h","agent_id":"a","at_ms":1,"type":"bogus"}"#)
                .is_err()
        );
    }
}
