//! The optional `options` of a start (and of a schedule's runs): which
//! plugin samples the target, what it measures, and the cost control of
//! ODP/Atys (FSP, FDA, duty cycle, overhead budget). They travel to the
//! agent inside the signed start command (`odp_core::cost::StartOptions`),
//! and are checked here by the same code the agent checks them with, so a
//! bad combination is a 422 now rather than a failed profile later.

use odp_core::cost::{DutyCycle, FdaSettings, StartOptions};
use odp_core::{EventKind, Language};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::error::ApiError;

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProfileOptions {
    /// `native`, `python` or `jvm`: overrides the agent's language
    /// detection (e.g. `native` on a Python process to see the
    /// interpreter's C frames).
    #[serde(default)]
    #[schema(example = "jvm")]
    pub plugin: Option<String>,
    /// `cpu-clock` (the default; `cycles` where a PMU exists); `off-cpu`
    /// (native: time threads spend switched out, at the stack where they
    /// blocked); `wall` (native and python: on and off CPU alike); for the
    /// JVM `alloc-bytes` (allocation samples), `heap-bytes` (one class
    /// histogram when the profile ends) or `lock` (time waiting for
    /// monitors and parked). Decides the profile's mode: a CPU and an
    /// off-CPU profile of one target may run at once.
    #[serde(default)]
    #[schema(example = "off-cpu")]
    pub event: Option<String>,
    /// `off-cpu` and `lock`: waits shorter than this many microseconds are
    /// not recorded (at most 10 s); every wait when absent.
    #[serde(default)]
    #[schema(maximum = 10000000)]
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
}

/// Atys' Algorithm 1; absent fields take the defaults shown.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FdaOptions {
    /// False turns FDA off even where the agent enables it by default.
    #[serde(default)]
    #[schema(default = true)]
    pub enabled: Option<bool>,
    /// Jensen-Shannon divergence in (0, 1] above which hot spots changed.
    #[serde(default)]
    #[schema(default = 0.05)]
    pub theta: Option<f64>,
    /// In (0, 1): up to f/λ on a change, down to f·λ when stable.
    #[serde(default)]
    #[schema(default = 0.8)]
    pub lambda: Option<f64>,
    /// Stable windows before the frequency is lowered.
    #[serde(default)]
    #[schema(default = 5, minimum = 1)]
    pub stable_windows: Option<u32>,
    /// Hottest functions compared.
    #[serde(default)]
    #[schema(default = 10, minimum = 1)]
    pub top_n: Option<u32>,
    #[serde(default)]
    #[schema(default = 19, minimum = 1)]
    pub min_hz: Option<u32>,
    /// The requested frequency when absent.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10000)]
    pub max_hz: Option<u32>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DutyCycleOptions {
    #[schema(minimum = 1, maximum = 3600)]
    pub on_secs: u64,
    #[schema(minimum = 1, maximum = 3600)]
    pub period_secs: u64,
}

impl ProfileOptions {
    /// The options as the start command carries them, checked for a
    /// profile at `frequency_hz`.
    pub(crate) fn validate(self, frequency_hz: u32) -> Result<StartOptions, ApiError> {
        let invalid = |m: String| ApiError::Unprocessable(format!("options: {m}"));
        let plugin = match self.plugin {
            Some(p) => Some(p.parse::<Language>().map_err(|_| {
                invalid(format!("`plugin` {p:?} is not one of native, python, jvm"))
            })?),
            None => None,
        };
        let event = self
            .event
            .map(|e| parse_event(&e).map_err(|m| invalid(m.to_string())))
            .transpose()?;
        let duty_cycle = match self.duty_cycle {
            Some(d) if !(1..=3600).contains(&d.on_secs) || !(1..=3600).contains(&d.period_secs) => {
                return Err(invalid(
                    "`duty_cycle` seconds must be between 1 and 3600".into(),
                ))
            }
            Some(d) => Some(DutyCycle {
                on_ms: d.on_secs * 1000,
                period_ms: d.period_secs * 1000,
            }),
            None => None,
        };
        let options = StartOptions {
            fsp_share: self.fsp_share,
            fda: self.fda.map(FdaOptions::settings),
            duty_cycle,
            overhead_budget: self.overhead_budget,
            plugin,
            event,
            min_wait_us: self.min_wait_us,
        };
        options.check(frequency_hz).map_err(invalid)?;
        Ok(options)
    }
}

/// An `event` parameter, or a 422 naming the events there are.
pub(crate) fn parse_event(text: &str) -> Result<EventKind, ApiError> {
    text.parse::<EventKind>().map_err(|_| {
        let known: Vec<&str> = EventKind::ALL.iter().map(|e| e.as_str()).collect();
        ApiError::Unprocessable(format!(
            "`event` {text:?} is not one of {}",
            known.join(", ")
        ))
    })
}

impl FdaOptions {
    fn settings(self) -> FdaSettings {
        let d = FdaSettings::default();
        FdaSettings {
            enabled: self.enabled.unwrap_or(d.enabled),
            theta: self.theta.unwrap_or(d.theta),
            lambda: self.lambda.unwrap_or(d.lambda),
            stable_windows: self.stable_windows.unwrap_or(d.stable_windows),
            top_n: self.top_n.unwrap_or(d.top_n),
            min_hz: self.min_hz.unwrap_or(d.min_hz),
            max_hz: self.max_hz.or(d.max_hz),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: serde_json::Value) -> Result<StartOptions, String> {
        let body: ProfileOptions = serde_json::from_value(json).map_err(|e| e.to_string())?;
        body.validate(99).map_err(|e| e.to_string())
    }

    #[test]
    fn options_become_the_command_options() {
        let options = check(serde_json::json!({
            "plugin": "jvm", "event": "alloc-bytes", "fsp_share": 0.95,
            "fda": {"theta": 0.1}, "duty_cycle": {"on_secs": 2, "period_secs": 10},
            "overhead_budget": 0.02
        }))
        .unwrap();
        assert_eq!(options.plugin, Some(Language::Jvm));
        assert_eq!(options.event, Some(EventKind::AllocBytes));
        assert_eq!(options.fda.as_ref().unwrap().theta, 0.1);
        assert_eq!(options.fda.unwrap().lambda, 0.8);
        assert_eq!(options.duty_cycle.unwrap().period_ms, 10_000);
        assert_eq!(
            check(serde_json::json!({})).unwrap(),
            StartOptions::default()
        );
    }

    #[test]
    fn bad_options_say_which_and_why() {
        for (json, expect) in [
            (serde_json::json!({"plugin": "ruby"}), "`plugin`"),
            (serde_json::json!({"event": "bytes"}), "`event`"),
            (
                serde_json::json!({"plugin": "python", "event": "heap-bytes"}),
                "cannot measure",
            ),
            (
                serde_json::json!({"plugin": "python", "event": "off-cpu"}),
                "python plugin cannot measure off-cpu",
            ),
            (
                serde_json::json!({"event": "cpu-clock", "min_wait_us": 10}),
                "min_wait_us applies to the off-cpu and lock events",
            ),
            (
                serde_json::json!({"event": "off-cpu", "min_wait_us": 20_000_000}),
                "min_wait_us",
            ),
            (serde_json::json!({"fsp_share": 1.5}), "fsp_share"),
            (serde_json::json!({"overhead_budget": 0}), "overhead_budget"),
            (serde_json::json!({"fda": {"lambda": 2.0}}), "lambda"),
            (
                serde_json::json!({"fda": {"min_hz": 500, "max_hz": 100}}),
                "bounds",
            ),
            (
                serde_json::json!({"duty_cycle": {"on_secs": 5, "period_secs": 2}}),
                "duty cycle",
            ),
            (
                serde_json::json!({"duty_cycle": {"on_secs": 0, "period_secs": 2}}),
                "between 1",
            ),
        ] {
            let err = check(json.clone()).unwrap_err();
            assert!(err.contains(expect), "{json}: {err}");
        }
        assert!(check(serde_json::json!({"fda": {"theta": 0.1, "x": 1}})).is_err());
    }
}
