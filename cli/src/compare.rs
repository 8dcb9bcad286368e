//! Across profiles: `diff` compares two profiles (largest share changes, or
//! the differential flame graph), `aggregate` merges a service's profiles
//! over hosts and a time range (top functions, or a flame graph file).

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context as _};
use odp_client::types::{AggregateJson, DiffJson, SideSummary};
use odp_client::ApiClient;
use odp_core::stats::top_functions;
use odp_core::EventKind;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum CompareCommand {
    /// Compare two profiles, each normalized by its total samples: prints
    /// the functions whose share changed most, or writes the JSON or the
    /// differential flame graph (red grew, blue shrank).
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
    },
    /// A service's samples merged over its hosts and a time range: prints
    /// the top functions, or writes the flame graph as JSON, folded, SVG,
    /// pprof or speedscope.
    Aggregate {
        #[arg(long)]
        service: String,
        /// RFC 3339, e.g. 2026-11-21T10:00:00Z.
        #[arg(long)]
        since: String,
        #[arg(long)]
        until: String,
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
    },
}

pub(crate) async fn run(client: &ApiClient, command: CompareCommand) -> anyhow::Result<()> {
    match command {
        CompareCommand::Diff {
            baseline,
            target,
            format,
            output,
            limit,
        } => {
            for id in [&baseline, &target] {
                if !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                    bail!("{id:?} is not a profile id");
                }
            }
            let path = |format: &str| {
                format!("/api/v1/diff?baseline={baseline}&target={target}&format={format}")
            };
            match format {
                Some(format) => write_out(&client.get_bytes(&path(&format)).await?, output)?,
                None => {
                    let url = format!("{}&limit={limit}", path("json"));
                    let diff: DiffJson = client.get(&url).await?;
                    write_out(change_table(&diff).as_bytes(), output)?;
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
        } => {
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
            let path =
                |format: &str| format!("/api/v1/aggregate?{}&format={format}", query.join("&"));
            match format {
                Some(format) => write_out(&client.get_bytes(&path(&format)).await?, output)?,
                None => {
                    let aggregate: AggregateJson = client.get(&path("json")).await?;
                    write_out(top_table(&aggregate, limit).as_bytes(), output)?;
                }
            }
        }
    }
    Ok(())
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

fn change_table(diff: &DiffJson) -> String {
    let side = |side: &SideSummary| {
        format!(
            "{}: {} {} samples",
            side.label,
            side.samples,
            side.event.map_or("", EventKind::as_str)
        )
    };
    let mut out = format!(
        "baseline {}\ntarget   {}\n",
        side(&diff.baseline),
        side(&diff.target)
    );
    out.push_str(&format!(
        "{:<40} {:>10} {:>10} {:>10}\n",
        "function", "baseline", "target", "delta"
    ));
    for c in &diff.changes {
        out.push_str(&format!(
            "{:<40} {:>9.1}% {:>9.1}% {:>+9.1}pp\n",
            c.function,
            c.baseline_total_share * 100.0,
            c.target_total_share * 100.0,
            c.delta_total_points
        ));
    }
    out
}

/// The top functions of an aggregate, computed from its flame graph tree.
fn top_table(aggregate: &AggregateJson, limit: usize) -> String {
    let hosts: Vec<String> = aggregate
        .hosts
        .iter()
        .map(|h| format!("{} ({})", h.host, h.samples))
        .collect();
    let samples = aggregate.samples;
    let event = aggregate.event;
    let mut out = format!(
        "{samples} {} samples{} of {} profiles on {} hosts: {}\n",
        event.map_or("", EventKind::as_str),
        crate::units::time_of(&aggregate.units, event, samples),
        aggregate.profiles,
        hosts.len(),
        hosts.join(", ")
    );
    out.push_str(&format!(
        "{:<40} {:>16} {:>8}\n",
        "function", "self", "total"
    ));
    for f in top_functions(&aggregate.root.to_stacks(), limit) {
        out.push_str(&format!(
            "{:<40} {:>7.1}% ± {:<5.1} {:>7.1}%\n",
            f.function,
            f.self_share * 100.0,
            f.self_share_stderr * 100.0,
            f.total_share * 100.0
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_times_and_patterns() {
        assert_eq!(
            encode("2026-11-21T10:00:00+01:00"),
            "2026-11-21T10:00:00%2B01:00"
        );
        assert_eq!(encode("^a|b c&"), "%5Ea%7Cb%20c%26");
    }

    #[test]
    fn tables_show_shares_in_percent() {
        let side = |label: &str, samples: u64| {
            json!({"label": label, "event": "cpu-clock", "samples": samples, "profiles": 1,
                   "unit": "nanoseconds", "period": 10_101_010.1})
        };
        let diff = json!({
            "baseline": side("profile a", 100),
            "target": side("profile b", 200),
            "root": {"name": "all", "baseline_total": 100, "baseline_self": 0,
                     "target_total": 200, "target_self": 0, "baseline_share": 1.0,
                     "target_share": 1.0, "children": []},
            "changes": [{"function": "cool", "baseline_self_share": 0.0,
                         "target_self_share": 0.3, "baseline_total_share": 0.0,
                         "target_total_share": 0.3, "delta_total_points": 30.0,
                         "delta_self_points": 30.0}]
        });
        let table = change_table(&serde_json::from_value(diff).unwrap());
        assert!(
            table.contains("profile b: 200 cpu-clock samples"),
            "{table}"
        );
        assert!(
            table.contains("30.0%") && table.contains("+30.0pp"),
            "{table}"
        );

        let aggregate = json!({
            "service": "s", "since": "2026-11-21T10:00:00Z", "until": "2026-11-21T11:00:00Z",
            "samples": 10, "event": "cpu-clock", "profiles": 2, "snapshots": 2,
            "unit": "nanoseconds", "period": 10_101_010.1,
            "hosts": [{"host": "a", "samples": 6, "profiles": 1, "snapshots": 1},
                      {"host": "b", "samples": 4, "profiles": 1, "snapshots": 1}],
            "root": {"name": "all", "total": 10, "self_count": 0, "children": [
                {"name": "hot", "total": 6, "self_count": 6, "children": []},
                {"name": "warm", "total": 4, "self_count": 4, "children": []}]}
        });
        let table = top_table(&serde_json::from_value(aggregate).unwrap(), 5);
        assert!(table.contains("on 2 hosts: a (6), b (4)"), "{table}");
        let hot = table.lines().find(|l| l.starts_with("hot")).unwrap();
        assert!(hot.contains("60.0%"), "{table}");
    }
}
