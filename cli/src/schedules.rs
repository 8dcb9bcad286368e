//! `odpctl schedules`: profiling on a cron schedule.

use crate::commands::TargetArgs;
use odp_client::types::{
    CreateScheduleRequest, Schedule, ScheduleWithRuns, SchedulesResponse, UpdateScheduleRequest,
};
use odp_client::{ApiClient, Method};

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
    /// Show one schedule and its latest runs (JSON).
    Show { id: String },
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
                print_table(&page);
            }
        }
        ScheduleAction::Show { id } => {
            let schedule: ScheduleWithRuns = client.get(&path(&id)?).await?;
            println!("{}", serde_json::to_string_pretty(&schedule)?);
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

/// The schedule's URL path; ids are UUIDs (hex digits and dashes).
fn path(id: &str) -> anyhow::Result<String> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        anyhow::bail!("{id:?} is not a schedule id (a UUID)");
    }
    Ok(format!("/api/v1/schedules/{id}"))
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
    schedule
        .next_run_at
        .map_or_else(|| "-".to_owned(), |t| t.to_rfc3339())
}

fn print_table(page: &SchedulesResponse) {
    println!(
        "{:<36}  {:<20}  {:<16}  {:<20}  {:<7}  next run",
        "id", "name", "host", "cron", "enabled"
    );
    for s in &page.schedules {
        println!(
            "{:<36}  {:<20}  {:<16}  {:<20}  {:<7}  {}",
            s.id,
            s.name,
            s.host,
            format!("{} {}", s.cron, s.timezone),
            s.enabled,
            next_run(s),
        );
    }
}
