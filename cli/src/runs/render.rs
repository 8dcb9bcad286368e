//! `odpctl run show`, `list`, `hosts` and `top`: a run's summary and
//! tables.

use chrono::{DateTime, SecondsFormat, Utc};
use odp_client::types::{
    Run, RunHost, RunHostsResponse, RunPrecision, RunTopResponse, RunsResponse,
};
use odp_core::run::{HostSelection, StderrMethod};
use odp_core::EventKind;

use super::wait::{epsilon, precision_text, status_name};

/// How a run ended, in one line.
pub(super) fn outcome(run: &Run) -> String {
    let mut line = format!("run {} {}", run.id, status_name(run.status));
    if let Some(reason) = &run.status_reason {
        line.push_str(&format!(": {reason}"));
    }
    line.push_str(&format!(
        "; {}",
        precision_text(run.reached_epsilon, run.stop_when.as_ref())
    ));
    if let Some(saved) = run.saved_secs {
        line.push_str(&format!(", {saved:.1} s saved"));
    }
    line
}

/// The hosts chosen, from how many, and how they were asked for.
pub(super) fn selection(run: &Run) -> String {
    let chosen = &run.selection;
    let asked = match run.hosts {
        HostSelection::All => "all".to_owned(),
        HostSelection::Count(k) => format!("count {k}"),
        HostSelection::Percent(p) => format!("{p}% = {}", chosen.requested),
    };
    format!(
        "{} of {} live host(s) chosen ({asked}{}); seed {}",
        chosen.hosts.len(),
        chosen.eligible,
        if chosen.capped {
            ", capped: fewer live hosts"
        } else {
            ""
        },
        run.seed
    )
}

pub(super) fn time(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `run show`: everything about the run but its JSON's detail.
pub(super) fn summary(run: &Run) -> String {
    let mut out = format!(
        "run        {}\nservice    {}\nstatus     {}",
        run.id,
        run.service,
        status_name(run.status)
    );
    if let Some(reason) = &run.status_reason {
        out.push_str(&format!(" ({reason})"));
    }
    out.push_str(&format!("\nhosts      {}\n", selection(run)));
    if !run.stratify_by.is_empty() {
        let strata: Vec<String> = run
            .selection
            .strata
            .iter()
            .map(|s| {
                let labels: Vec<String> =
                    s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let name = if labels.is_empty() {
                    "(unlabelled)".to_owned()
                } else {
                    labels.join(",")
                };
                format!("{name} {} of {}", s.chosen, s.eligible)
            })
            .collect();
        out.push_str(&format!(
            "strata     by {}: {}\n",
            run.stratify_by.join(","),
            strata.join("; ")
        ));
    }
    out.push_str(&format!(
        "precision  {}, {} samples used\n",
        precision_text(run.reached_epsilon, run.stop_when.as_ref()),
        run.samples_used
            .map_or_else(|| "-".to_owned(), |n| n.to_string())
    ));
    out.push_str(&format!("duration   {} s at most", run.duration_secs));
    if let Some(saved) = run.saved_secs {
        out.push_str(&format!(", {saved:.1} s saved by the stop rule"));
    }
    out.push_str(&format!(
        "\nstarted    {} by {}\nended      {}\n\n",
        time(&run.created_at),
        run.requested_by,
        run.ended_at.as_ref().map_or_else(|| "-".to_owned(), time)
    ));
    out.push_str(&format!(
        "{:<24}  {:<10}  {:<36}  reason\n",
        "host", "status", "profile"
    ));
    for m in &run.members {
        out.push_str(&format!(
            "{:<24}  {:<10}  {:<36}  {}\n",
            m.host,
            m.status.as_str(),
            m.profile_id
                .map_or_else(|| "-".to_owned(), |id| id.to_string()),
            m.reason.as_deref().unwrap_or("-"),
        ));
    }
    out
}

pub(super) fn runs_table(page: &RunsResponse) -> String {
    let mut out = format!(
        "{:<36}  {:<20}  {:<11}  {:>9}  {:>7}  created\n",
        "id", "service", "status", "hosts", "ε"
    );
    for r in &page.runs {
        out.push_str(&format!(
            "{:<36}  {:<20}  {:<11}  {:>9}  {:>7}  {}\n",
            r.id,
            r.service,
            status_name(r.status),
            format!("{}/{}", r.selection.hosts.len(), r.selection.eligible),
            r.reached_epsilon.map_or_else(|| "-".to_owned(), epsilon),
            time(&r.created_at),
        ));
    }
    out
}

/// The run's top self shares with their standard errors, shaped like
/// `odpctl top`'s table (a run's aggregate has no total shares).
pub(super) fn shares_table(precision: &RunPrecision) -> String {
    let decision = &precision.decision;
    let method = match decision.method {
        StderrMethod::Pooled => "the pooled binomial error",
        StderrMethod::Larger => "the larger of the pooled and between-host errors",
        StderrMethod::BetweenHost => "the between-host error",
    };
    let mut out = format!(
        "{} samples of {} host(s); ± is {method}\n",
        decision.samples_used, decision.hosts
    );
    out.push_str(&format!("{:<40} {:>16}\n", "function", "self"));
    for s in &decision.top {
        let row = format!(
            "{:<40} {:>7.1}% ± {:<5.1}",
            s.function,
            s.share * 100.0,
            s.stderr * 100.0
        );
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// `run hosts`: every chosen host, most different from the others first,
/// with its samples, hottest function and test; then the outliers, each
/// with the function that moved most.
pub(super) fn hosts_table(hosts: &RunHostsResponse) -> String {
    let mut out = format!(
        "run {} of {}: {} samples over {} host(s); outliers at p < {:.2e} (α {} / hosts, \
         top {} functions + rest)\n",
        hosts.run_id,
        hosts.service,
        hosts.samples,
        hosts.hosts.len(),
        hosts.threshold,
        hosts.options.alpha,
        hosts.options.top_k,
    );
    out.push_str(&format!(
        "{:<24}  {:>10}  {:<32}  {:>9}  {:>9}  {:>5}  labels\n",
        "host", "samples", "top self share", "chi²", "p", "dist"
    ));
    for h in &hosts.hosts {
        let top = h.top.first().map_or_else(
            || "-".to_owned(),
            |f| format!("{} {:.1}%", f.function, f.self_share * 100.0),
        );
        let labels: Vec<String> = h.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let (statistic, p) = match h.df {
            0 => ("-".to_owned(), "-".to_owned()),
            _ => (format!("{:.1}", h.statistic), format!("{:.1e}", h.p_value)),
        };
        let row = format!(
            "{:<24}  {:>10}  {:<32}  {:>9}  {:>9}  {:>5.3}  {}{}",
            h.host,
            h.samples,
            top,
            statistic,
            p,
            h.distance,
            if labels.is_empty() {
                "-".to_owned()
            } else {
                labels.join(",")
            },
            if h.outlier { "  OUTLIER" } else { "" },
        );
        out.push_str(row.trim_end());
        out.push('\n');
    }
    let outliers: Vec<&RunHost> = hosts.hosts.iter().filter(|h| h.outlier).collect();
    if outliers.is_empty() {
        out.push_str("\nno outliers: every host's function mix is like the others'\n");
        return out;
    }
    out.push_str(&format!("\n{} outlier(s):\n", outliers.len()));
    for h in outliers {
        let moved = h.moved.as_ref().map_or_else(
            || "no function stands out".to_owned(),
            |m| {
                format!(
                    "{} {:.1}% vs {:.1}% on the others",
                    m.function,
                    m.host_share * 100.0,
                    m.others_share * 100.0
                )
            },
        );
        out.push_str(&format!(
            "  {}: p {:.1e}, moved most: {moved}\n",
            h.host, h.p_value
        ));
    }
    out
}

/// `run top`: the run's hottest functions over every member, shaped like
/// `odpctl top`'s table.
pub(super) fn top_table(top: &RunTopResponse) -> String {
    let mut out = format!(
        "run {} of {}: {} {} samples of {} host(s){}\n",
        top.run_id,
        top.service,
        top.samples,
        top.event.map_or("", EventKind::as_str),
        top.hosts,
        crate::units::time_of(&top.units, top.event, top.samples)
    );
    out.push_str(&format!(
        "{:<40} {:>16} {:>8}\n",
        "function", "self", "total"
    ));
    for f in &top.functions {
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
