//! What a profile or a schedule may carry: its target (which processes)
//! and its start options (`"options"` of the start request: plugin, event
//! and cost control). The API checks the values; the CLI only shapes them.

use odp_client::types::{
    CreateScheduleRequest, DutyCycleOptions, FdaOptions, ProfileOptions, StartRequest,
};

/// Which processes to profile: exactly one of these (the API checks the
/// values, so the CLI only makes sure one is given).
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub(crate) struct TargetArgs {
    /// One process by id.
    #[arg(long)]
    pid: Option<u32>,
    /// Every process with this executable name (`/proc/PID/comm`).
    #[arg(long)]
    process_name: Option<String>,
    /// Every process whose command line matches this regex.
    #[arg(long, value_name = "REGEX")]
    cmdline: Option<String>,
    /// Every process in this cgroup (or below), or in this container id.
    #[arg(long, value_name = "PATH|ID")]
    cgroup: Option<String>,
}

impl TargetArgs {
    /// `request` aimed at the target given.
    pub(crate) fn start(self, request: StartRequest) -> StartRequest {
        StartRequest {
            pid: self.pid,
            process_name: self.process_name,
            cmdline: self.cmdline,
            cgroup: self.cgroup,
            ..request
        }
    }

    /// A schedule's `request` aimed at the target given.
    pub(crate) fn schedule(self, request: CreateScheduleRequest) -> CreateScheduleRequest {
        CreateScheduleRequest {
            pid: self.pid,
            process_name: self.process_name,
            cmdline: self.cmdline,
            cgroup: self.cgroup,
            ..request
        }
    }
}

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
    /// With --pid: profile the process's descendants too (those alive now
    /// and those it forks later), with all their threads.
    #[arg(long)]
    include_children: bool,
}

impl StartOptionArgs {
    /// The request's `options`, when any was given.
    pub(crate) fn into_options(self) -> Option<ProfileOptions> {
        let fda = match (self.fda, self.no_fda) {
            (_, true) => Some(FdaOptions {
                enabled: Some(false),
                ..FdaOptions::default()
            }),
            (Some(theta), false) => Some(FdaOptions {
                theta: Some(theta),
                ..FdaOptions::default()
            }),
            (None, false) => None,
        };
        let options = ProfileOptions {
            plugin: self.plugin,
            event: self.event,
            min_wait_us: self.min_wait_us,
            fsp_share: self.fsp_share,
            fda,
            duty_cycle: self
                .duty_cycle
                .map(|(on_secs, period_secs)| DutyCycleOptions {
                    on_secs,
                    period_secs,
                }),
            overhead_budget: self.overhead_budget,
            include_children: self.include_children,
        };
        (options != ProfileOptions::default()).then_some(options)
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
    use odp_client::types::StartRequest;
    use serde_json::{json, Value};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        options: StartOptionArgs,
    }

    /// The options as the request's JSON carries them.
    fn request(args: &[&str]) -> Result<Value, clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied()))?;
        let request = StartRequest {
            options: cli.options.into_options(),
            ..StartRequest::default()
        };
        let mut json = serde_json::to_value(request).unwrap();
        Ok(match json["options"].take() {
            Value::Null => json!({}),
            options => json!({"options": without_nulls(options)}),
        })
    }

    /// `value` without its null fields, as a client would leave them out.
    fn without_nulls(value: Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k, without_nulls(v)))
                    .collect(),
            ),
            other => other,
        }
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
        assert_eq!(
            request(&["--include-children"]).unwrap(),
            json!({"options": {"include_children": true}})
        );
        assert!(request(&["--fda", "0.1", "--no-fda"]).is_err());
        assert!(request(&["--duty-cycle", "2"]).is_err());
        assert!(request(&["--duty-cycle", "a/b"]).is_err());
    }
}
