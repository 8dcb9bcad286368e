//! The start options a profile or a schedule may carry (`"options"` of the
//! start request): plugin, event and cost control. The API checks the
//! values; the CLI only shapes them.

use serde_json::{json, Map, Value};

#[derive(Debug, Default, clap::Args)]
pub(crate) struct StartOptionArgs {
    /// Sample with this plugin instead of the detected one: native, python, jvm.
    #[arg(long)]
    plugin: Option<String>,
    /// What to measure: cpu-clock (default); off-cpu (native: time blocked,
    /// at the stack that blocked) or wall (native, python: on and off CPU);
    /// on the JVM alloc-bytes, heap-bytes (one class histogram at the end)
    /// or lock (time waiting for monitors and parked).
    #[arg(long)]
    event: Option<String>,
    /// off-cpu and lock: leave out waits shorter than this (microseconds).
    #[arg(long, value_name = "MICROS")]
    min_wait_us: Option<u64>,
    /// FSP: keep each window's busiest threads up to this share of its
    /// samples, in (0, 1]; 1 keeps every thread.
    #[arg(long, value_name = "SHARE")]
    fsp_share: Option<f64>,
    /// FDA: adapt the frequency to how fast hot spots change, with this
    /// divergence threshold θ (0.05 is the default).
    #[arg(long, value_name = "THETA", conflicts_with = "no_fda")]
    fda: Option<f64>,
    /// Turn FDA off for this profile.
    #[arg(long)]
    no_fda: bool,
    /// Sample ON seconds of every PERIOD seconds, as `ON/PERIOD`.
    #[arg(long, value_name = "ON/PERIOD", value_parser = parse_duty_cycle)]
    duty_cycle: Option<(u64, u64)>,
    /// CPU the agent may spend on the profile, share of one core (0.01 = 1%).
    #[arg(long, value_name = "SHARE")]
    overhead_budget: Option<f64>,
}

impl StartOptionArgs {
    /// Sets the request's `options` when any was given.
    pub(crate) fn insert_into(self, request: &mut Value) {
        let mut options = Map::new();
        let mut set = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                options.insert(key.to_owned(), value);
            }
        };
        set("plugin", self.plugin.map(Value::from));
        set("event", self.event.map(Value::from));
        set("min_wait_us", self.min_wait_us.map(Value::from));
        set("fsp_share", self.fsp_share.map(Value::from));
        set(
            "fda",
            match (self.fda, self.no_fda) {
                (_, true) => Some(json!({"enabled": false})),
                (Some(theta), false) => Some(json!({"theta": theta})),
                (None, false) => None,
            },
        );
        set(
            "duty_cycle",
            self.duty_cycle
                .map(|(on, period)| json!({"on_secs": on, "period_secs": period})),
        );
        set("overhead_budget", self.overhead_budget.map(Value::from));
        if !options.is_empty() {
            request["options"] = Value::Object(options);
        }
    }
}

fn parse_duty_cycle(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("{text:?} is not ON/PERIOD in seconds, e.g. 2/10");
    let (on, period) = text.split_once('/').ok_or_else(bad)?;
    Ok((
        on.trim().parse().map_err(|_| bad())?,
        period.trim().parse().map_err(|_| bad())?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        options: StartOptionArgs,
    }

    fn request(args: &[&str]) -> Result<Value, clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied()))?;
        let mut request = json!({});
        cli.options.insert_into(&mut request);
        Ok(request)
    }

    #[test]
    fn flags_become_the_options_object() {
        assert_eq!(request(&[]).unwrap(), json!({}));
        assert_eq!(
            request(&[
                "--plugin",
                "jvm",
                "--event",
                "alloc-bytes",
                "--fsp-share",
                "0.9",
                "--fda",
                "0.1",
                "--duty-cycle",
                "2/10",
                "--overhead-budget",
                "0.02"
            ])
            .unwrap(),
            json!({"options": {"plugin": "jvm", "event": "alloc-bytes", "fsp_share": 0.9,
                               "fda": {"theta": 0.1}, "duty_cycle": {"on_secs": 2, "period_secs": 10},
                               "overhead_budget": 0.02}})
        );
        assert_eq!(
            request(&["--no-fda"]).unwrap(),
            json!({"options": {"fda": {"enabled": false}}})
        );
        assert!(request(&["--fda", "0.1", "--no-fda"]).is_err());
        assert!(request(&["--duty-cycle", "2"]).is_err());
        assert!(request(&["--duty-cycle", "a/b"]).is_err());
    }
}
