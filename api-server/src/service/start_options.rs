//! The optional `options` of a start (and of a schedule's runs): which
//! plugin samples the target, what it measures, and the cost control of
//! ODP/Atys (FSP, FDA, duty cycle, overhead budget). They travel to the
//! agent inside the signed start command (`odp_core::cost::StartOptions`),
//! and are checked here by the same code the agent checks them with, so a
//! bad combination is a 422 now rather than a failed profile later.

use odp_api_types::{FdaOptions, ProfileOptions};
use odp_core::cost::{DutyCycle, FdaSettings, StartOptions};
use odp_core::{EventKind, Language};

use crate::service_error::ServiceError;

/// The options as the start command carries them, checked for a profile
/// at `frequency_hz`.
pub(crate) fn start_options(
    options: ProfileOptions,
    frequency_hz: u32,
) -> Result<StartOptions, ServiceError> {
    let invalid = |m: String| ServiceError::Invalid(format!("options: {m}"));
    let plugin =
        match options.plugin {
            Some(p) => Some(p.parse::<Language>().map_err(|_| {
                invalid(format!("`plugin` {p:?} is not one of native, python, jvm"))
            })?),
            None => None,
        };
    let event = options
        .event
        .map(|e| parse_event(&e).map_err(|m| invalid(m.to_string())))
        .transpose()?;
    let duty_cycle = match options.duty_cycle {
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
        fsp_share: options.fsp_share,
        fda: options.fda.map(fda_settings),
        duty_cycle,
        overhead_budget: options.overhead_budget,
        plugin,
        event,
        min_wait_us: options.min_wait_us,
        include_children: options.include_children,
    };
    options
        .check(frequency_hz)
        .map_err(|e| invalid(e.to_string()))?;
    Ok(options)
}

/// An `event` parameter, or a 422 naming the events there are.
pub(crate) fn parse_event(text: &str) -> Result<EventKind, ServiceError> {
    text.parse::<EventKind>().map_err(|_| {
        let known: Vec<&str> = EventKind::ALL.iter().map(|e| e.as_str()).collect();
        ServiceError::Invalid(format!(
            "`event` {text:?} is not one of {}",
            known.join(", ")
        ))
    })
}

fn fda_settings(fda: FdaOptions) -> FdaSettings {
    let d = FdaSettings::default();
    FdaSettings {
        enabled: fda.enabled.unwrap_or(d.enabled),
        theta: fda.theta.unwrap_or(d.theta),
        lambda: fda.lambda.unwrap_or(d.lambda),
        stable_windows: fda.stable_windows.unwrap_or(d.stable_windows),
        top_n: fda.top_n.unwrap_or(d.top_n),
        min_hz: fda.min_hz.unwrap_or(d.min_hz),
        max_hz: fda.max_hz.or(d.max_hz),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: serde_json::Value) -> Result<StartOptions, String> {
        let body: ProfileOptions = serde_json::from_value(json).map_err(|e| e.to_string())?;
        start_options(body, 99).map_err(|e| e.to_string())
    }

    #[test]
    fn options_become_the_command_options() {
        let options = check(serde_json::json!({
            "plugin": "jvm", "event": "alloc-bytes", "fsp_share": 0.95,
            "fda": {"theta": 0.1}, "duty_cycle": {"on_secs": 2, "period_secs": 10},
            "overhead_budget": 0.02, "include_children": true
        }))
        .unwrap();
        assert!(options.include_children);
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
