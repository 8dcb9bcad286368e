//! Across profiles: `diff` compares two profiles (largest share changes, or
//! the differential flame graph), `aggregate` merges a service's profiles
//! over hosts and a time range (top functions, or a flame graph file).

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use chrono::Utc;
use odp_client::types::{AggregateJson, DiffJson, Profile};
use odp_client::{ApiClient, ClientError};

use crate::compare_view::{aggregate_text, diff_text, empty_aggregate, is_empty_export, Runtimes};
use crate::exit::{usage, CliError};
use crate::names::{checked_name, parse_id};
use crate::profile_view::TopRows;
use crate::text::time;
use crate::when::{parse_when, When};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum CompareCommand {
    /// Compare two profiles, each normalized by its total samples: prints
    /// the functions whose share changed most, each change with its error
    /// and whether it is significant, or writes the JSON or the
    /// differential flame graph (red grew, blue shrank). Profiles of
    /// different runtimes or events are refused without `--force`.
    Diff {
        baseline: String,
        target: String,
        #[arg(long, value_parser = ["json", "svg"])]
        format: Option<String>,
        /// Output file; standard output when absent.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Rows of the change table.
        #[arg(long, default_value_t = 15)]
        limit: usize,
        /// Compare even profiles of different runtimes (their function
        /// names have nothing in common) or events (the API still refuses
        /// to add up samples of different events).
        #[arg(long)]
        force: bool,
    },
    /// A service's samples merged over its hosts and a time range: prints
    /// the top functions, or writes the flame graph as JSON, folded, SVG,
    /// pprof or speedscope. A range without samples is an error (exit 4)
    /// in every format.
    Aggregate {
        #[arg(long)]
        service: String,
        /// How long ago (`30m`, `1h`, `2d`, `1w`), or an RFC 3339 time
        /// like 2026-11-21T10:00:00Z.
        #[arg(long, value_parser = parse_when)]
        since: When,
        /// `now` (the default), how long ago, or an RFC 3339 time.
        #[arg(long, value_parser = parse_when, default_value = "now")]
        until: When,
        /// Only these hosts (repeatable).
        #[arg(long)]
        host: Vec<String>,
        /// Only threads with this name, or matching this regex.
        #[arg(long)]
        thread: Option<String>,
        /// Only stacks with a frame matching this regex.
        #[arg(long)]
        include: Option<String>,
        /// Without stacks with a frame matching this regex.
        #[arg(long)]
        exclude: Option<String>,
        /// Only profiles of this event (needed when the range holds
        /// several, e.g. cpu-clock and off-cpu).
        #[arg(long)]
        event: Option<String>,
        #[arg(long, value_parser = ["json", "folded", "svg", "pprof", "speedscope"])]
        format: Option<String>,
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Rows of the top-function table.
        #[arg(long, default_value_t = 15)]
        limit: usize,
        /// Also list the functions without self time (`main`, `_start`
        /// and the other callers).
        #[arg(long, alias = "all")]
        include_callers: bool,
    },
}

pub(crate) async fn run(
    client: &ApiClient,
    command: CompareCommand,
    width: Option<usize>,
) -> anyhow::Result<()> {
    match command {
        CompareCommand::Diff {
            baseline,
            target,
            format,
            output,
            limit,
            force,
        } => {
            let (baseline, target) = (
                parse_id("profile", &baseline)?,
                parse_id("profile", &target)?,
            );
            let sides = (
                client.profile(baseline).await?,
                client.profile(target).await?,
            );
            if let Err(why) = comparable(&sides.0, &sides.1) {
                if !force {
                    return Err(usage(format!("{why}; pass --force to compare them anyway")));
                }
                eprintln!("comparing anyway (--force): {why}");
            }
            let path = |format: &str| {
                format!("/api/v1/diff?baseline={baseline}&target={target}&format={format}")
            };
            match format {
                Some(format) => write_out(&client.get_bytes(&path(&format)).await?, output)?,
                None => {
                    let url = format!("{}&limit={limit}", path("json"));
                    let diff: DiffJson = client.get(&url).await?;
                    let runtimes = Runtimes {
                        baseline: &sides.0,
                        target: &sides.1,
                    };
                    write_out(diff_text(&diff, Some(runtimes), width).as_bytes(), output)?;
                }
            }
        }
        CompareCommand::Aggregate {
            service,
            since,
            until,
            host,
            thread,
            include,
            exclude,
            event,
            format,
            output,
            limit,
            include_callers,
        } => {
            checked_name("--service", &service)?;
            for h in &host {
                checked_name("--host", h)?;
            }
            let now = Utc::now();
            let (since, until) = (since.at(now), until.at(now));
            let (since, until, ordered) = (time(&since), time(&until), since < until);
            if !ordered {
                return Err(usage(format!(
                    "--since ({since}) must be before --until ({until})"
                )));
            }
            let filtered = !host.is_empty()
                || thread.is_some()
                || include.is_some()
                || exclude.is_some()
                || event.is_some();
            let mut query = vec![
                format!("service={}", encode(&service)),
                format!("since={}", encode(&since)),
                format!("until={}", encode(&until)),
            ];
            query.extend(host.iter().map(|h| format!("host={}", encode(h))));
            for (key, value) in [
                ("thread", thread),
                ("include", include),
                ("exclude", exclude),
                ("event", event),
            ] {
                if let Some(value) = value {
                    query.push(format!("{key}={}", encode(&value)));
                }
            }
            let empty = || CliError::NotFound(empty_aggregate(&service, &since, &until, filtered));
            let path =
                |format: &str| format!("/api/v1/aggregate?{}&format={format}", query.join("&"));
            match format {
                Some(format) => {
                    let body = match client.get_bytes(&path(&format)).await {
                        Err(e) if is_empty_svg(&format, &e) => return Err(empty().into()),
                        other => other?,
                    };
                    if is_empty_export(&format, &body) {
                        return Err(empty().into());
                    }
                    write_out(&body, output)?
                }
                None => {
                    let aggregate: AggregateJson = client.get(&path("json")).await?;
                    if aggregate.samples == 0 {
                        return Err(empty().into());
                    }
                    let rows = TopRows {
                        limit,
                        include_callers,
                        width,
                    };
                    write_out(aggregate_text(&aggregate, rows).as_bytes(), output)?;
                }
            }
        }
    }
    Ok(())
}

/// The API's answer to an SVG of no samples: a 404 saying so.
fn is_empty_svg(format: &str, error: &ClientError) -> bool {
    match error {
        ClientError::Status {
            status: 404,
            message,
            ..
        } => format == "svg" && message.contains("no samples"),
        _ => false,
    }
}

/// Whether two profiles can be compared: the same runtime (their function
/// names come from the same kind of program) and the same event (their
/// samples measure the same thing). What is unknown (a profile not
/// started, an imported file) is not held against them.
pub(crate) fn comparable(baseline: &Profile, target: &Profile) -> Result<(), String> {
    let language = |p: &Profile| p.runtime.as_ref().and_then(|r| r.language);
    let describe = |p: &Profile| {
        let runtime = language(p).map_or("unknown runtime", |l| l.as_str());
        let event = p.event.map_or("no event yet", |e| e.as_str());
        format!("profile {} ({runtime}, {event})", p.id)
    };
    let differ = |a: Option<&str>, b: Option<&str>| matches!((a, b), (Some(a), Some(b)) if a != b);
    let runtimes = differ(
        language(baseline).map(|l| l.as_str()),
        language(target).map(|l| l.as_str()),
    );
    let events = differ(
        baseline.event.map(|e| e.as_str()),
        target.event.map(|e| e.as_str()),
    );
    let what = match (runtimes, events) {
        (false, false) => return Ok(()),
        (true, false) => "different runtimes",
        (false, true) => "different events",
        (true, true) => "different runtimes and events",
    };
    Err(format!(
        "{} and {} are of {what}",
        describe(baseline),
        describe(target)
    ))
}

fn write_out(body: &[u8], output: Option<PathBuf>) -> anyhow::Result<()> {
    match output {
        Some(path) => {
            std::fs::write(&path, body).with_context(|| format!("writing {}", path.display()))
        }
        None => std::io::stdout()
            .write_all(body)
            .context("writing to standard output"),
    }
}

/// Percent-encodes a query value (times carry `+`, patterns anything).
pub(crate) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~' | b':') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_times_and_patterns() {
        assert_eq!(
            encode("2026-11-21T10:00:00+01:00"),
            "2026-11-21T10:00:00%2B01:00"
        );
        assert_eq!(encode("^a|b c&"), "%5Ea%7Cb%20c%26");
    }

    #[test]
    fn aggregate_takes_spans_and_now() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(subcommand)]
            command: CompareCommand,
        }
        let parse = |args: &[&str]| {
            Cli::try_parse_from(
                ["odpctl", "aggregate", "--service", "checkout"]
                    .iter()
                    .chain(args),
            )
            .map(|cli| cli.command)
        };
        for since in ["1h", "2d", "30m", "2026-11-21T10:00:00Z"] {
            let Ok(CompareCommand::Aggregate { until, .. }) = parse(&["--since", since]) else {
                panic!("--since {since}")
            };
            assert_eq!(
                until,
                When::Ago(chrono::Duration::zero()),
                "until now by default"
            );
        }
        assert!(parse(&["--since", "1h", "--until", "now"]).is_ok());
        let refused = parse(&["--since", "yesterday"]).err().unwrap();
        assert_eq!(refused.exit_code(), 2);
        assert!(parse(&["--since", "1h", "--all"]).is_ok());
    }
}
