//! `odpctl run show`, `list`, `hosts`, `top` and `issues`: a run's
//! summary, tables and findings.

use chrono::{DateTime, Utc};
use odp_client::types::{
    Run, RunHost, RunHostsResponse, RunIssuesResponse, RunPrecision, RunStatus, RunTopResponse,
    RunsResponse,
};
use odp_core::run::{HostSelection, StderrMethod, StopRule};

use crate::profile_view::{percent, samples_of, shares_table as functions_table, TopRows};
use crate::table::Table;
use crate::text::{count, count_of, noun_for};

/// A run's status as `odpctl` writes it.
pub(super) fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Dispatching => "dispatching",
        RunStatus::Running => "running",
        RunStatus::Finished => "finished",
        RunStatus::Stopped => "stopped",
        RunStatus::Precise => "precise",
        RunStatus::Partial => "partial",
    }
}

/// A share's standard error in percentage points, as `±1.87%`.
pub(super) fn epsilon(share: f64) -> String {
    format!("±{:.2}%", share * 100.0)
}

/// The ε reached against the stop rule's target.
pub(super) fn precision_text(reached: Option<f64>, rule: Option<&StopRule>) -> String {
    let reached = reached.map_or_else(|| "ε -".to_owned(), |e| format!("ε {}", epsilon(e)));
    match rule {
        Some(rule) => format!(
            "{reached} (target {} for the top {})",
            epsilon(rule.max_stderr),
            rule.top
        ),
        None => format!("{reached} (no stop rule)"),
    }
}

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
        "{} of {} {} chosen ({asked}{}); seed {}",
        chosen.hosts.len(),
        chosen.eligible,
        noun_for(chosen.eligible as u128, "live host"),
        if chosen.capped {
            ", capped: fewer live hosts"
        } else {
            ""
        },
        run.seed
    )
}

pub(super) fn time(at: &DateTime<Utc>) -> String {
    crate::text::time(at)
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
        "precision  {}, {} used\n",
        precision_text(run.reached_epsilon, run.stop_when.as_ref()),
        run.samples_used.map_or_else(
            || "- samples".to_owned(),
            |n| count(n.max(0).unsigned_abs(), "sample")
        )
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
    let mut members = Table::new()
        .left("host")
        .left("status")
        .left("profile")
        .left("reason");
    for m in &run.members {
        members.row([
            m.host.clone(),
            m.status.as_str().to_owned(),
            m.profile_id
                .map_or_else(|| "-".to_owned(), |id| id.to_string()),
            m.reason.clone().unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    out.push_str(&members.render());
    out
}

pub(super) fn runs_table(page: &RunsResponse) -> String {
    let mut table = Table::new()
        .left("id")
        .left("service")
        .left("status")
        .right("hosts")
        .right("ε")
        .left("created");
    for r in &page.runs {
        table.row([
            r.id.to_string(),
            r.service.clone(),
            status_name(r.status).to_owned(),
            format!("{}/{}", r.selection.hosts.len(), r.selection.eligible),
            r.reached_epsilon.map_or_else(|| "-".to_owned(), epsilon),
            time(&r.created_at),
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no runs)\n");
    }
    out
}

/// The run's top self shares with their standard errors, shaped like
/// `odpctl top`'s table (a run's aggregate has no total shares).
pub(super) fn shares_table(precision: &RunPrecision, width: Option<usize>) -> String {
    let decision = &precision.decision;
    let method = match decision.method {
        StderrMethod::Pooled => "the pooled binomial error",
        StderrMethod::Larger => "the larger of the pooled and between-host errors",
        StderrMethod::BetweenHost => "the between-host error",
    };
    let mut out = format!(
        "{} of {}; ± is {method}\n",
        count(decision.samples_used, "sample"),
        count_of(decision.hosts, "host")
    );
    let mut table = Table::new()
        .left("function")
        .flexible()
        .right("self")
        .left_close("")
        .fit(width);
    for s in &decision.top {
        table.row([
            s.function.clone(),
            percent(s.share),
            format!("± {:.1}", s.stderr * 100.0),
        ]);
    }
    out.push_str(&table.render());
    out
}

/// `run hosts`: every chosen host, most different from the others first,
/// with its samples, hottest function and test; then the outliers, each
/// with the function that moved most.
pub(super) fn hosts_table(hosts: &RunHostsResponse, width: Option<usize>) -> String {
    let mut out = format!(
        "run {} of {}: {} over {}; outliers at p < {:.2e} (α {} / hosts, \
         top {} functions + rest)\n",
        hosts.run_id,
        hosts.service,
        count(hosts.samples, "sample"),
        count_of(hosts.hosts.len(), "host"),
        hosts.threshold,
        hosts.options.alpha,
        hosts.options.top_k,
    );
    let mut table = Table::new()
        .left("host")
        .right("samples")
        .left("top self share")
        .flexible()
        .right("chi²")
        .right("p")
        .right("dist")
        .left("labels")
        .left("")
        .fit(width);
    for h in &hosts.hosts {
        let top = h.top.first().map_or_else(
            || "-".to_owned(),
            |f| format!("{} {}", f.function, percent(f.self_share)),
        );
        let (statistic, p) = match h.df {
            0 => ("-".to_owned(), "-".to_owned()),
            _ => (format!("{:.1}", h.statistic), format!("{:.1e}", h.p_value)),
        };
        table.row([
            h.host.clone(),
            h.samples.to_string(),
            top,
            statistic,
            p,
            format!("{:.3}", h.distance),
            crate::text::labels(&h.labels),
            if h.outlier { "OUTLIER" } else { "" }.to_owned(),
        ]);
    }
    out.push_str(&table.render());
    let outliers: Vec<&RunHost> = hosts.hosts.iter().filter(|h| h.outlier).collect();
    if outliers.is_empty() {
        out.push_str("\nno outliers: every host's function mix is like the others'\n");
        return out;
    }
    out.push_str(&format!("\n{}:\n", count_of(outliers.len(), "outlier")));
    for h in outliers {
        let moved = h.moved.as_ref().map_or_else(
            || "no function stands out".to_owned(),
            |m| {
                format!(
                    "{} {} vs {} on the others",
                    m.function,
                    percent(m.host_share),
                    percent(m.others_share)
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

/// `run top`: the run's hottest functions over every member, in `odpctl
/// top`'s table.
pub(super) fn top_table(top: &RunTopResponse, rows: TopRows) -> String {
    let of = format!(" of {}", count_of(top.hosts, "host"));
    format!(
        "run {} of {}: {}\n{}",
        top.run_id,
        top.service,
        samples_of(top.samples, top.event, &top.units, &of),
        functions_table(&top.functions, rows)
    )
}

/// `odpctl run issues`: each finding on the run's merged samples, and the
/// hosts where it is highest.
pub(super) fn issues_text(found: &RunIssuesResponse) -> String {
    let Some(evaluated) = found.evaluated_at else {
        return format!(
            "run {}: not judged yet (the rules run once it has ended)\n",
            found.run_id
        );
    };
    if found.issues.is_empty() {
        return format!(
            "run {}: no rule flagged it (judged {})\n",
            found.run_id,
            time(&evaluated)
        );
    }
    let mut out = format!(
        "run {}: {} (judged {})\n",
        found.run_id,
        count_of(found.issues.len(), "issue"),
        time(&evaluated)
    );
    for found in &found.issues {
        let issue = &found.issue;
        out.push_str(&format!(
            "{} ({}): {:.1}% of {} (threshold {:.1}%)\n",
            issue.title,
            issue.rule_id,
            issue.share,
            count(issue.samples_total, "sample"),
            issue.threshold_pct
        ));
        let hosts: Vec<String> = found
            .hosts
            .iter()
            .map(|h| format!("{} {:.1}%", h.host, h.share))
            .collect();
        if !hosts.is_empty() {
            out.push_str(&format!("  highest on: {}\n", hosts.join(", ")));
        }
        out.push_str(&format!("  fix: {}\n", issue.fix));
    }
    out
}
