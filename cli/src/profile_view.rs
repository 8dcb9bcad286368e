//! One profile as people read it: `status`'s summary (the API's body,
//! runtime libraries and all, is `--json`), `list`'s table and the top
//! functions table that `top`, `aggregate`, `start --wait` and `run top`
//! share.

use chrono::{DateTime, Utc};
use odp_client::types::{
    loss_in_words, FunctionShare, Profile, ProfilesPage, SampleCoverage, SampleUnit, TopResponse,
};
use odp_core::EventKind;

use crate::table::Table;
use crate::text::{count, count_of, fields, labels, options_line, runtime_line, span, time};

/// Which functions a top table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TopRows {
    /// At most this many rows.
    pub(crate) limit: usize,
    /// Also the functions without self time (callers such as `main`,
    /// `_start`), after those with.
    pub(crate) include_callers: bool,
    /// The width to fit, shortening function names in the middle.
    pub(crate) width: Option<usize>,
}

/// `578 cpu-clock samples (5.84 s of CPU time)`.
pub(crate) fn samples_line(samples: u64, event: Option<EventKind>, units: &SampleUnit) -> String {
    samples_of(samples, event, units, "")
}

/// `578 cpu-clock samples{of} (5.84 s of CPU time)`: the samples, what
/// they were taken of (` of 2 hosts`), and the time they stand for.
pub(crate) fn samples_of(
    samples: u64,
    event: Option<EventKind>,
    units: &SampleUnit,
    of: &str,
) -> String {
    let what = match event {
        Some(event) => count(samples, &format!("{} sample", event.as_str())),
        None => count(samples, "sample"),
    };
    format!("{what}{of}{}", crate::units::time_of(units, event, samples))
}

/// The functions as a table of self share ± its standard error and total
/// share: by default only those with self time, hottest first; with
/// `include_callers` the others follow. A last line says how many were
/// left out and how to see them.
pub(crate) fn shares_table(functions: &[FunctionShare], rows: TopRows) -> String {
    let mut shown: Vec<&FunctionShare> = functions
        .iter()
        .filter(|f| rows.include_callers || f.self_samples > 0)
        .collect();
    shown.sort_by(|a, b| {
        b.self_samples
            .cmp(&a.self_samples)
            .then(b.total_samples.cmp(&a.total_samples))
            .then_with(|| a.function.cmp(&b.function))
    });
    let callers_left_out = functions.len() - shown.len();
    shown.truncate(rows.limit);
    let mut table = Table::new()
        .left("function")
        .flexible()
        .right("self")
        .left_close("")
        .right("total")
        .fit(rows.width);
    for f in &shown {
        table.row([
            f.function.clone(),
            percent(f.self_share),
            format!("± {:.1}", f.self_share_stderr * 100.0),
            percent(f.total_share),
        ]);
    }
    let mut out = table.render();
    if callers_left_out > 0 {
        let noun = if callers_left_out == 1 {
            "caller"
        } else {
            "callers"
        };
        out.push_str(&format!(
            "({callers_left_out} {noun} without self time not shown; --include-callers shows {})\n",
            if callers_left_out == 1 { "it" } else { "them" }
        ));
    }
    out
}

/// A share as `62.8%`.
pub(crate) fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// `odpctl top`: the sample count, then the functions.
pub(crate) fn top_text(top: &TopResponse, rows: TopRows) -> String {
    format!(
        "{}\n{}",
        samples_line(top.samples, top.event, &top.units),
        shares_table(&top.functions, rows)
    )
}

/// `odpctl status`: the fields that say what was profiled, how and how
/// it went, one per line; the runtime's libraries and flags only counted
/// (`--json` lists them). `top`, when the profile has samples, adds their
/// count and the hottest function's share with its error.
pub(crate) fn profile_summary(
    profile: &Profile,
    top: Option<&TopResponse>,
    now: DateTime<Utc>,
) -> String {
    let mut lines: Vec<(&str, String)> = vec![
        ("id", profile.id.to_string()),
        ("service", profile.service.clone()),
        ("host", profile.host.clone()),
        ("target", profile.target.to_string()),
        (
            "event",
            match profile.event {
                Some(event) => event.as_str().to_owned(),
                None => format!("- ({} profile, not started)", profile.mode),
            },
        ),
        ("rate", format!("{} Hz", profile.frequency_hz)),
    ];
    let state = match &profile.status_reason {
        Some(reason) => format!("{} ({reason})", profile.status),
        None => profile.status.to_string(),
    };
    lines.push(("state", state));
    lines.push((
        "created",
        format!("{} by {}", time(&profile.created_at), profile.requested_by),
    ));
    if let Some(started) = &profile.started_at {
        lines.push(("started", time(started)));
    }
    if let Some(finished) = &profile.finished_at {
        lines.push(("finished", time(finished)));
    }
    lines.push(("duration", duration_text(profile, now)));
    if let Some(top) = top {
        let mut samples = samples_line(top.samples, top.event, &top.units);
        if let Some(hot) = top.functions.iter().find(|f| f.self_samples > 0) {
            samples.push_str(&format!(
                "; hottest {} {} ± {:.1}",
                hot.function,
                percent(hot.self_share),
                hot.self_share_stderr * 100.0
            ));
        }
        lines.push(("samples", samples));
    }
    if let Some(coverage) = profile.coverage.as_ref().and_then(coverage_line) {
        lines.push(("coverage", coverage));
    }
    if let Some(warning) = profile.coverage.as_ref().and_then(|c| c.warning.clone()) {
        lines.push(("warning", warning));
    }
    if let Some(runtime) = &profile.runtime {
        lines.push(("runtime", runtime_line(runtime)));
        if let Some(executable) = &runtime.runtime.executable {
            lines.push(("executable", executable.path.clone()));
        }
    }
    lines.push(("labels", labels(&profile.labels)));
    lines.push(("options", options_line(&profile.options)));
    if let Some(agent) = &profile.agent_id {
        lines.push(("agent", agent.clone()));
    }
    fields(&lines)
}

/// `1,007 of 1,006 expected from its CPU time (100.1%); lost: 12 paused
/// by cost control; 3 unaccounted`; nothing for a profile that neither
/// expected nor lost anything (the samples line says what it holds).
fn coverage_line(coverage: &SampleCoverage) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(expected) = coverage.expected {
        let share = match expected {
            0 => String::new(),
            e => format!(" ({})", percent(coverage.captured as f64 / e as f64)),
        };
        parts.push(format!(
            "{} of {} expected from its CPU time{share}",
            coverage.captured, expected
        ));
    }
    let lost: Vec<String> = coverage
        .lost
        .reasons()
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(reason, n)| format!("{n} {}", loss_in_words(reason)))
        .collect();
    if !lost.is_empty() {
        parts.push(format!("lost: {}", lost.join(", ")));
    }
    if let Some(unaccounted) = coverage.unaccounted.filter(|&n| n > 0) {
        parts.push(format!("{unaccounted} unaccounted"));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// How long the profile ran against what was asked: `6.1 s of 6 s`,
/// `3 s so far of 6 s`, `6 s asked` before it starts.
fn duration_text(profile: &Profile, now: DateTime<Utc>) -> String {
    let asked = span(profile.duration_ms as f64 / 1000.0);
    let Some(started) = profile.started_at else {
        return format!("{asked} asked");
    };
    let secs = |to: DateTime<Utc>| (to - started).num_milliseconds().max(0) as f64 / 1000.0;
    match profile.finished_at {
        Some(finished) => format!("{} of {asked}", span(secs(finished))),
        None if profile.status.is_terminal() => format!("{asked} asked"),
        None => format!("{} so far of {asked}", span(secs(now).floor())),
    }
}

/// `odpctl list`: one profile a row, newest first.
pub(crate) fn profiles_table(page: &ProfilesPage) -> String {
    let mut table = Table::new()
        .left("id")
        .left("status")
        .left("service")
        .left("host")
        .right("duration")
        .left("created");
    for p in &page.profiles {
        table.row([
            p.id.to_string(),
            p.status.to_string(),
            p.service.clone(),
            p.host.clone(),
            span(p.duration_ms as f64 / 1000.0),
            time(&p.created_at),
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no profiles)\n");
    } else if page.next_cursor.is_some() {
        out.push_str(&format!(
            "({} shown; more with a larger --limit)\n",
            count_of(page.profiles.len(), "profile")
        ));
    }
    out
}
