//! What `diff` and `aggregate` print: the change table with each change's
//! error and whether it is significant, the aggregate's top functions, and
//! the one answer every format of an empty aggregate gets.

use odp_client::types::{AggregateJson, DiffJson, Profile, SideSummary};
use odp_core::diff::{is_significant, SIGNIFICANT_Z};
use odp_profile::top::top_functions;
use odp_profile::View;

use crate::profile_view::{percent, samples_line, samples_of, shares_table, TopRows};
use crate::table::Table;
use crate::text::{count, count_of, fields, runtime_line};

/// Hosts named in an aggregate's first line; the others are counted.
const HOSTS_NAMED: usize = 8;

/// What each side's profile ran on, when both are known, for the diff's
/// header.
pub(crate) struct Runtimes<'a> {
    pub(crate) baseline: &'a Profile,
    pub(crate) target: &'a Profile,
}

/// `diff`'s table: each function's total share on both sides, the change
/// in percentage points with its standard error, `*` on the significant
/// ones.
pub(crate) fn diff_text(
    diff: &DiffJson,
    runtimes: Option<Runtimes<'_>>,
    width: Option<usize>,
) -> String {
    let side = |side: &SideSummary| {
        format!(
            "{}: {}",
            side.label,
            samples_line(side.samples, side.event, &side.units)
        )
    };
    let mut header = vec![
        ("baseline", side(&diff.baseline)),
        ("target", side(&diff.target)),
    ];
    if let Some(Runtimes { baseline, target }) = runtimes {
        let line = |p: &Profile| p.runtime.as_ref().map(runtime_line);
        match (line(baseline), line(target)) {
            (Some(b), Some(t)) if b == t => header.push(("runtime", format!("{b} (both)"))),
            (b, t) => {
                let or_dash = |l: Option<String>| l.unwrap_or_else(|| "-".to_owned());
                header.push(("runtime", format!("{} → {}", or_dash(b), or_dash(t))));
            }
        }
    }
    let mut out = fields(&header);
    out.push('\n');
    let (nb, nt) = (diff.baseline.samples, diff.target.samples);
    let mut table = Table::new()
        .left("function")
        .flexible()
        .right("baseline")
        .right("target")
        .right("change")
        .left_close("")
        .left("");
    for c in &diff.changes {
        // A server before errors were reported leaves them to the client.
        let stderr = c
            .delta_total_stderr_points
            .or_else(|| c.total_stderr_points(nb, nt));
        let significant = c.significant || is_significant(c.delta_total_points, stderr);
        table.row([
            c.function.clone(),
            percent(c.baseline_total_share),
            percent(c.target_total_share),
            format!("{:+.1}", c.delta_total_points),
            stderr.map_or_else(|| "± -".to_owned(), |e| format!("± {e:.1}")),
            if significant { "*" } else { "" }.to_owned(),
        ]);
    }
    if table.is_empty() {
        out.push_str("no function's share changed\n");
        return out;
    }
    out.push_str(&table.fit(width).render());
    out.push_str(&format!(
        "\nbaseline, target: total share (samples with the function on the stack)\n\
         change: in percentage points ± one standard error; * significant (at least \
         {SIGNIFICANT_Z:.0} standard errors)\n"
    ));
    out
}

/// `aggregate`'s answer as a table: samples, profiles and hosts, then the
/// top functions of the merged tree.
pub(crate) fn aggregate_text(aggregate: &AggregateJson, rows: TopRows) -> String {
    let sampled: Vec<String> = aggregate
        .hosts
        .iter()
        .filter(|h| h.samples > 0)
        .map(|h| format!("{} ({})", h.host, h.samples))
        .collect();
    let mut named = sampled
        .iter()
        .take(HOSTS_NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if sampled.len() > HOSTS_NAMED {
        named.push_str(&format!(", and {} more", sampled.len() - HOSTS_NAMED));
    }
    let of = format!(
        " of {} on {}",
        count(aggregate.profiles, "profile"),
        count_of(sampled.len(), "host")
    );
    let mut out = format!(
        "{}: {named}\n",
        samples_of(aggregate.samples, aggregate.event, &aggregate.units, &of),
    );
    let functions = top_functions(&View::from_flame_graph(&aggregate.root), usize::MAX);
    out.push_str(&shares_table(&functions, rows));
    out
}

/// What an aggregate without samples says, in every format.
pub(crate) fn empty_aggregate(service: &str, since: &str, until: &str, filtered: bool) -> String {
    if filtered {
        format!("no samples of {service} between {since} and {until} match the filters")
    } else {
        format!("no profiles of {service} between {since} and {until}")
    }
}

/// Whether an exported aggregate holds no samples: an empty folded file,
/// a pprof profile without samples, a speedscope file whose profiles have
/// none, a JSON tree of zero samples.
pub(crate) fn is_empty_export(format: &str, body: &[u8]) -> bool {
    match format {
        "folded" => body.iter().all(u8::is_ascii_whitespace),
        "pprof" => odp_core::pprof::decode(body, None).is_ok_and(|p| p.stacks.is_empty()),
        "speedscope" => serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|file| {
            file["profiles"].as_array().is_some_and(|profiles| {
                profiles.iter().all(|p| {
                    let empty = |key: &str| p[key].as_array().is_none_or(Vec::is_empty);
                    empty("samples") && empty("events")
                })
            })
        }),
        "json" => serde_json::from_slice::<serde_json::Value>(body)
            .is_ok_and(|tree| tree["samples"].as_u64() == Some(0)),
        _ => false,
    }
}
