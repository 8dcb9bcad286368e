//! `odpctl trend SERVICE FUNCTION`: a function's share of a service's
//! samples and the cores it keeps busy, step by step over a time range,
//! each with its standard error, and a bar per step to see the shape.

use chrono::{DateTime, Utc};
use odp_client::types::TrendResponse;
use odp_client::ApiClient;

use crate::compare::encode;
use crate::names::checked_name;
use crate::table::Table;
use crate::when::{parse_span, parse_when, When};

#[derive(Debug, clap::Args)]
pub(crate) struct TrendArgs {
    service: String,
    /// A regex a frame of a stack matches (`^parse$`, `json\.`).
    function: String,
    /// The range's start: how long ago (`1h`, `2d`), `now` or an RFC 3339
    /// time.
    #[arg(long, default_value = "1h", value_parser = parse_when)]
    since: When,
    #[arg(long, default_value = "now", value_parser = parse_when)]
    until: When,
    /// Length of a step (`10s`, `5m`, `1h`); by default at most 120 steps.
    #[arg(long, value_parser = parse_span)]
    step: Option<chrono::Duration>,
    /// Only these hosts (repeat, or comma-separated).
    #[arg(long = "host", value_delimiter = ',')]
    hosts: Vec<String>,
    /// Only hosts whose agents report these labels (`zone:eu-1`; repeat,
    /// or comma-separated).
    #[arg(long = "label", value_delimiter = ',')]
    labels: Vec<String>,
    /// Only windows of this event (`cpu-clock`, `wall`, ...).
    #[arg(long)]
    event: Option<String>,
    /// Print the API's JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(client: &ApiClient, args: TrendArgs) -> anyhow::Result<()> {
    let now = Utc::now();
    let path = path(&args, args.since.at(now), args.until.at(now))?;
    let trend: TrendResponse = client.get(&path).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&trend)?);
    } else {
        print!("{}", table(&trend));
    }
    Ok(())
}

fn path(args: &TrendArgs, since: DateTime<Utc>, until: DateTime<Utc>) -> anyhow::Result<String> {
    let mut query = vec![
        format!("function={}", encode(&args.function)),
        format!("since={}", encode(&since.to_rfc3339())),
        format!("until={}", encode(&until.to_rfc3339())),
    ];
    if let Some(step) = args.step {
        query.push(format!("step_secs={}", step.num_seconds()));
    }
    if !args.hosts.is_empty() {
        query.push(format!("hosts={}", encode(&args.hosts.join(","))));
    }
    if !args.labels.is_empty() {
        query.push(format!("labels={}", encode(&args.labels.join(","))));
    }
    if let Some(event) = &args.event {
        query.push(format!("event={}", encode(event)));
    }
    Ok(format!(
        "/api/v1/services/{}/trend?{}",
        checked_name("service", &args.service)?,
        query.join("&")
    ))
}

/// Bar width for a share of 100 %.
const BAR: usize = 20;

fn table(trend: &TrendResponse) -> String {
    let mut out = format!(
        "{} in {}, {} .. {}, steps of {} s{}\n",
        trend.function,
        trend.service,
        trend.since.format("%Y-%m-%d %H:%M:%S"),
        trend.until.format("%Y-%m-%d %H:%M:%S"),
        trend.step_secs,
        if trend.hosts.is_empty() {
            String::new()
        } else {
            format!(", hosts {}", trend.hosts.join(","))
        }
    );
    if trend.event.is_none() {
        out.push_str("(nothing stored in this range)\n");
        return out;
    }
    let mut table = Table::new()
        .left("step")
        .right("share")
        .right("±")
        .right("cores")
        .right("±")
        .right("samples")
        .right("hosts")
        .left("");
    for point in &trend.points {
        let start = DateTime::<Utc>::from_timestamp_millis(point.start_ms).unwrap_or_default();
        let (share, share_err, bar) = match (point.share, point.share_stderr) {
            (Some(p), Some(e)) => (
                format!("{:.1}%", p * 100.0),
                format!("{:.1}", e * 100.0),
                "#".repeat((p * BAR as f64).round() as usize),
            ),
            _ => ("-".into(), "-".into(), String::new()),
        };
        let cores =
            |value: Option<f64>| value.map_or_else(|| "-".to_owned(), |c| format!("{c:.3}"));
        table.row([
            start.format("%m-%d %H:%M:%S").to_string(),
            share,
            share_err,
            cores(point.cores.filter(|_| point.samples > 0)),
            cores(point.cores_stderr.filter(|_| point.samples > 0)),
            point.samples.to_string(),
            point.hosts.to_string(),
            bar,
        ]);
    }
    out.push_str(&table.render());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use odp_core::trend::{trend, WindowCount};
    use odp_core::EventKind;

    fn response(
        points: Vec<odp_core::trend::TrendPoint>,
        event: Option<EventKind>,
    ) -> TrendResponse {
        TrendResponse {
            service: "checkout".into(),
            function: "^parse$".into(),
            event,
            since: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            until: DateTime::from_timestamp(1_800_000_030, 0).unwrap(),
            step_secs: 10,
            hosts: Vec::new(),
            points,
        }
    }

    #[test]
    fn each_step_shows_its_share_cores_and_bar_and_gaps_show_dashes() {
        let windows = [WindowCount {
            host: "web-1".into(),
            start_ms: 1_800_000_000_000,
            end_ms: 1_800_000_010_000,
            period: 10_101_010,
            samples: 990,
            matched: 495,
        }];
        let points = trend(
            &windows,
            EventKind::CpuClock,
            1_800_000_000_000,
            1_800_000_030_000,
            10_000,
        );
        let out = table(&response(points, Some(EventKind::CpuClock)));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 5, "{out}");
        assert!(
            lines[2].contains("50.0%") && lines[2].contains("0.500"),
            "{out}"
        );
        assert!(lines[2].ends_with(&"#".repeat(10)), "{out}");
        assert!(lines[3].contains(" - "), "a step without windows: {out}");
    }

    #[test]
    fn an_empty_range_says_so() {
        let out = table(&response(Vec::new(), None));
        assert!(out.contains("(nothing stored in this range)"), "{out}");
    }
}
