//! `odpctl schedules`: profiling on a cron schedule.

use odp_client::types::{
    CreateScheduleRequest, Schedule, ScheduleRun, ScheduleWithRuns, SchedulesResponse,
    UpdateScheduleRequest,
};
use odp_client::{ApiClient, Method};
use odp_core::run::HostSelection;

use crate::names::parse_id;
use crate::options::TargetArgs;
use crate::table::Table;
use crate::text::{count_of, fields, options_line, span, time, time_or_dash, yes_no};

// Parsed once per run: the size of the biggest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ScheduleAction {
    /// List the schedules.
    List {
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one schedule and its latest runs.
    Show {
        id: String,
        /// Print the API's JSON instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Create a schedule (admin); prints its id.
    Create {
        /// Unique name: letters, digits, `.`, `-`, `_`.
        #[arg(long)]
        name: String,
        #[arg(long)]
        host: String,
        #[command(flatten)]
        target: TargetArgs,
        /// Required with `--cmdline` and `--cgroup`.
        #[arg(long)]
        service: Option<String>,
        /// 5 fields (`30 3 * * MON-FRI`: minute hour day month weekday,
        /// weekdays by name), or 6/7 with seconds first.
        #[arg(long)]
        cron: String,
        /// IANA time zone the cron expression is read in.
        #[arg(long = "tz", default_value = "UTC")]
        timezone: String,
        #[arg(long = "duration", default_value_t = 30)]
        duration_secs: u64,
        #[arg(long)]
        frequency_hz: Option<u32>,
        /// Create it disabled.
        #[arg(long)]
        disabled: bool,
        #[command(flatten)]
        options: crate::options::StartOptionArgs,
    },
    /// Enable a schedule (admin); it next fires at its next occurrence.
    Enable { id: String },
    /// Disable a schedule (admin).
    Disable { id: String },
    /// Delete a schedule and its run history (admin).
    Delete { id: String },
}

pub(crate) async fn run(client: &ApiClient, action: ScheduleAction) -> anyhow::Result<()> {
    match action {
        ScheduleAction::List { json } => {
            let page: SchedulesResponse = client.get("/api/v1/schedules").await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print!("{}", schedules_table(&page));
            }
        }
        ScheduleAction::Show { id, json } => {
            let schedule: ScheduleWithRuns = client.get(&path(&id)?).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&schedule)?);
            } else {
                print!("{}", schedule_summary(&schedule));
            }
        }
        ScheduleAction::Create {
            name,
            host,
            target,
            service,
            cron,
            timezone,
            duration_secs,
            frequency_hz,
            disabled,
            options,
        } => {
            let body = target.schedule(CreateScheduleRequest {
                name,
                host,
                service,
                cron,
                timezone,
                duration_secs,
                frequency_hz,
                enabled: !disabled,
                options: options.into_options(),
                window_secs: None,
                pid: None,
                process_name: None,
                cmdline: None,
                cgroup: None,
            });
            let created: Schedule = client
                .send(Method::POST, "/api/v1/schedules", Some(&body), 201)
                .await?;
            println!("{}", created.id);
            eprintln!("next run: {}", next_run(&created));
        }
        ScheduleAction::Enable { id } => set_enabled(client, &id, true).await?,
        ScheduleAction::Disable { id } => set_enabled(client, &id, false).await?,
        ScheduleAction::Delete { id } => {
            client.call(Method::DELETE, &path(&id)?, None, 204).await?;
            eprintln!("deleted schedule {id}");
        }
    }
    Ok(())
}

/// The schedule's URL path; ids are UUIDs.
fn path(id: &str) -> anyhow::Result<String> {
    Ok(format!("/api/v1/schedules/{}", parse_id("schedule", id)?))
}

async fn set_enabled(client: &ApiClient, id: &str, enabled: bool) -> anyhow::Result<()> {
    let body = UpdateScheduleRequest {
        enabled: Some(enabled),
        ..UpdateScheduleRequest::default()
    };
    let schedule: Schedule = client
        .send(Method::PATCH, &path(id)?, Some(&body), 200)
        .await?;
    eprintln!(
        "schedule {id} {}; next run: {}",
        if enabled { "enabled" } else { "disabled" },
        next_run(&schedule)
    );
    Ok(())
}

/// When the schedule fires next, or `-` when it is disabled.
fn next_run(schedule: &Schedule) -> String {
    time_or_dash(schedule.next_run_at.as_ref())
}

/// `schedules list`: one schedule a row.
pub(crate) fn schedules_table(page: &SchedulesResponse) -> String {
    let mut table = Table::new()
        .left("id")
        .left("name")
        .left("host")
        .left("cron")
        .left("enabled")
        .left("next run");
    for s in &page.schedules {
        table.row([
            s.id.to_string(),
            s.name.clone(),
            s.host.clone(),
            format!("{} {}", s.cron, s.timezone),
            yes_no(s.enabled).to_owned(),
            next_run(s),
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no schedules)\n");
    }
    out
}

/// How a run schedule's runs choose their hosts and end.
fn run_line(run: &ScheduleRun) -> String {
    let mut parts = vec![match run.hosts {
        HostSelection::All => "every live host of the service".to_owned(),
        HostSelection::Count(k) => format!("{} of the service", count_of(k as usize, "live host")),
        HostSelection::Percent(p) => format!("{p}% of the service's live hosts"),
    }];
    if !run.stratify_by.is_empty() {
        parts.push(format!("stratified by {}", run.stratify_by.join(",")));
    }
    if let Some(seed) = run.seed {
        parts.push(format!("seed {seed}"));
    }
    if run.strict {
        parts.push("strict".to_owned());
    }
    if let Some(rule) = &run.stop_when {
        parts.push(format!(
            "ends once its top {} are known to ±{:.2}%",
            rule.top,
            rule.max_stderr * 100.0
        ));
    }
    parts.join(", ")
}

/// `schedules show`: what the schedule profiles and when, then its
/// latest firings.
pub(crate) fn schedule_summary(with_runs: &ScheduleWithRuns) -> String {
    let s = &with_runs.schedule;
    let mut lines: Vec<(&str, String)> = vec![
        ("id", s.id.to_string()),
        ("name", s.name.clone()),
        ("service", s.service.clone()),
    ];
    match &s.run {
        Some(run) => lines.push(("run", run_line(run))),
        None => {
            lines.push(("host", s.host.clone()));
            lines.push(("target", s.target.to_string()));
        }
    }
    lines.push(("mode", s.mode.to_string()));
    lines.push(("cron", format!("{} ({})", s.cron, s.timezone)));
    let mut duration = format!(
        "{} at {} Hz",
        span(f64::from(s.duration_secs)),
        s.frequency_hz
    );
    if let Some(window) = s.window_secs {
        duration.push_str(&format!(", windows of {}", span(f64::from(window))));
    }
    lines.push(("duration", duration));
    lines.push(("options", options_line(&s.options)));
    lines.push(("enabled", yes_no(s.enabled).to_owned()));
    lines.push(("next run", next_run(s)));
    lines.push(("last run", time_or_dash(s.last_run_at.as_ref())));
    lines.push((
        "created",
        format!("{} by {}", time(&s.created_at), s.created_by),
    ));
    let mut out = fields(&lines);
    if with_runs.runs.is_empty() {
        out.push_str("\nno runs yet\n");
        return out;
    }
    out.push_str(&format!(
        "\nlatest {}, newest first:\n",
        count_of(with_runs.runs.len(), "run")
    ));
    let mut table = Table::new()
        .left("scheduled for")
        .left("fired at")
        .left("outcome")
        .left("profile or run")
        .left("detail");
    for r in &with_runs.runs {
        let started = r
            .run_id
            .map(|id| format!("run {id}"))
            .or(r.profile_id.map(|id| id.to_string()))
            .unwrap_or_else(|| "-".to_owned());
        table.row([
            time(&r.scheduled_for),
            time(&r.fired_at),
            r.outcome.as_str().replace('_', " "),
            started,
            r.detail.clone().unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    out.push_str(&table.render());
    out
}
