//! The subcommands, each a call or two to the REST API.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};
use odp_client::types::{CreateScheduleRequest, ProfileStatus, StartRequest, TopResponse};
use odp_client::{ApiClient, ClientError};
use odp_core::EventKind;
use uuid::Uuid;

#[derive(Debug, clap::Parser)]
#[command(name = "odpctl", about = "Start, watch, stop and read ODP profiles")]
pub(crate) struct Cli {
    /// The api-server, e.g. https://odp.example.com:8443.
    #[arg(
        long,
        env = "ODP_API_URL",
        global = true,
        default_value = "https://127.0.0.1:8080"
    )]
    api_url: String,
    /// Bearer token (`odp-api-server token` mints one).
    #[arg(
        long,
        env = "ODP_TOKEN",
        global = true,
        hide_env_values = true,
        default_value = ""
    )]
    token: String,
    /// Extra CA certificate (PEM) to trust, e.g. a development certificate.
    #[arg(long, env = "ODP_CACERT", global = true)]
    cacert: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

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

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Start profiling a process on a host.
    Start {
        #[arg(long)]
        host: String,
        #[command(flatten)]
        target: TargetArgs,
        /// The service the processes make up (required with `--cmdline`
        /// and `--cgroup`).
        #[arg(long)]
        service: Option<String>,
        #[arg(long, default_value_t = 30)]
        duration_secs: u64,
        #[arg(long, default_value_t = 99)]
        frequency_hz: u32,
        /// Follow the profile until it ends, then print its top functions.
        #[arg(long)]
        wait: bool,
        /// A label to find the profile by, `key=value` (repeatable).
        #[arg(long = "label", value_parser = parse_label)]
        labels: Vec<(String, String)>,
        #[command(flatten)]
        options: crate::options::StartOptionArgs,
    },
    /// Stop a running profile (its last partial window is kept).
    Stop { id: String },
    /// Show one profile.
    Status { id: String },
    /// List profiles, newest first.
    List {
        #[arg(long)]
        service: Option<String>,
        #[arg(long)]
        host: Option<String>,
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Only profiles with this label, `key=value` (repeatable: all must match).
        #[arg(long = "label", value_parser = parse_label)]
        labels: Vec<(String, String)>,
    },
    /// Top functions of a profile with their shares and error bounds.
    Top {
        id: String,
        #[arg(long, default_value_t = 15)]
        limit: usize,
    },
    #[command(flatten)]
    Admin(crate::admin::AdminCommand),
    /// Profiling on a cron schedule: list, show, create, enable, disable, delete.
    Schedules {
        #[command(subcommand)]
        action: crate::schedules::ScheduleAction,
    },
    /// Common-issue detection rules: list, show, create, enable, disable, threshold.
    Rules {
        #[command(subcommand)]
        action: crate::rules::RuleAction,
    },
    /// Alert channels (admin): list, show, create-webhook, create-email,
    /// enable, disable, delete, deliveries.
    Channels {
        #[command(subcommand)]
        action: crate::channels::ChannelAction,
    },
    /// Services, defined once and found on every host running them:
    /// create, list, show, hosts, update, delete.
    Services {
        #[command(subcommand)]
        action: crate::services::ServiceAction,
    },
    /// Runs: a service profiled at once on hosts chosen from those running
    /// it, ended early once its top shares are precise: start, show, wait,
    /// hosts, top, stop, list.
    Run {
        #[command(subcommand)]
        action: crate::runs::RunAction,
    },
    #[command(flatten)]
    Files(crate::files::FileCommand),
    #[command(flatten)]
    Compare(crate::compare::CompareCommand),
}

pub(crate) async fn run(cli: Cli) -> anyhow::Result<()> {
    let client = match &cli.cacert {
        Some(path) => {
            let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            ApiClient::with_ca(&cli.api_url, &cli.token, &pem)?
        }
        None => ApiClient::new(&cli.api_url, &cli.token),
    };
    match cli.command {
        Command::Start {
            host,
            target,
            service,
            duration_secs,
            frequency_hz,
            wait,
            labels,
            options,
        } => {
            let request = target.start(StartRequest {
                host,
                service,
                duration_secs,
                frequency_hz: Some(frequency_hz),
                labels: labels.into_iter().collect(),
                options: options.into_options(),
                ..StartRequest::default()
            });
            let id = client.start_profile(&request).await?.id;
            println!("{id}");
            if wait {
                follow(&client, id, duration_secs).await?;
            }
        }
        Command::Stop { id } => {
            client.stop_profile(&id).await?;
            eprintln!("stop requested for {id}");
        }
        Command::Status { id } => println!(
            "{}",
            serde_json::to_string_pretty(&client.profile(&id).await?)?
        ),
        Command::List {
            service,
            host,
            status,
            limit,
            labels,
        } => {
            let filter = ListFilter {
                service,
                host,
                status,
                labels,
            };
            list(&client, filter, limit).await?
        }
        Command::Top { id, limit } => print_top(&client.top(&id, limit).await?),
        Command::Admin(command) => crate::admin::run(&client, command).await?,
        Command::Schedules { action } => crate::schedules::run(&client, action).await?,
        Command::Rules { action } => crate::rules::run(&client, action).await?,
        Command::Channels { action } => crate::channels::run(&client, action).await?,
        Command::Services { action } => crate::services::run(&client, action).await?,
        Command::Run { action } => crate::runs::run(&client, action).await?,
        Command::Files(command) => crate::files::run(&client, command).await?,
        Command::Compare(command) => crate::compare::run(&client, command).await?,
    }
    Ok(())
}

/// Prints each status change until the profile ends; fails (exit 6) if it
/// did not finish.
async fn follow(client: &ApiClient, id: Uuid, duration_secs: u64) -> anyhow::Result<()> {
    let timeout = Duration::from_secs(duration_secs + 180);
    let profile = client
        .wait_finished(id, timeout, |status| eprintln!("{id}: {status}"))
        .await?;
    let status = profile.status;
    if !matches!(status, ProfileStatus::Finished | ProfileStatus::Stopped) {
        return Err(ProfileEnded(format!(
            "profile {id} ended {status}: {}",
            profile.status_reason.unwrap_or_default()
        ))
        .into());
    }
    // The last window reaches storage just after the agent reports the end.
    tokio::time::sleep(Duration::from_secs(1)).await;
    print_top(&client.top(id, 15).await?);
    Ok(())
}

/// `key=value` from the command line.
fn parse_label(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("{text:?} is not key=value")),
    }
}

struct ListFilter {
    service: Option<String>,
    host: Option<String>,
    status: Option<String>,
    labels: Vec<(String, String)>,
}

async fn list(client: &ApiClient, filter: ListFilter, limit: u32) -> anyhow::Result<()> {
    let mut query = vec![format!("limit={limit}")];
    if !filter.labels.is_empty() {
        let pairs: Vec<String> = filter
            .labels
            .iter()
            .map(|(key, value)| format!("{key}:{value}"))
            .collect();
        query.push(format!(
            "labels={}",
            crate::compare::encode(&pairs.join(","))
        ));
    }
    let ListFilter {
        service,
        host,
        status,
        ..
    } = filter;
    for (key, value) in [("service", service), ("host", host), ("status", status)] {
        if let Some(value) = value {
            if !value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
            {
                bail!("--{key} may hold only letters, digits, `.`, `-` and `_`");
            }
            query.push(format!("{key}={value}"));
        }
    }
    let page = client.list_profiles(&query.join("&")).await?;
    println!(
        "{:<36}  {:<10}  {:<20}  {:<16}  created",
        "id", "status", "service", "host"
    );
    for p in &page.profiles {
        println!(
            "{:<36}  {:<10}  {:<20}  {:<16}  {}",
            p.id,
            p.status,
            p.service,
            p.host,
            p.created_at
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        );
    }
    Ok(())
}

fn print_top(top: &TopResponse) {
    let samples = top.samples;
    let event = top.event;
    println!(
        "{samples} {} samples{}",
        event.map_or("", EventKind::as_str),
        crate::units::time_of(&top.units, event, samples)
    );
    println!("{:<40} {:>16} {:>8}", "function", "self", "total");
    for f in &top.functions {
        println!(
            "{:<40} {:>7.1}% ± {:<5.1} {:>7.1}%",
            f.function,
            f.self_share * 100.0,
            f.self_share_stderr * 100.0,
            f.total_share * 100.0
        );
    }
}

/// The profile (or a run's member) ran but did not end well.
#[derive(Debug)]
pub(crate) struct ProfileEnded(pub(crate) String);

impl std::fmt::Display for ProfileEnded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProfileEnded {}

pub(crate) fn exit_code(error: &anyhow::Error) -> i32 {
    if error.downcast_ref::<ProfileEnded>().is_some() {
        return 6;
    }
    match error
        .downcast_ref::<ClientError>()
        .and_then(ClientError::status)
    {
        Some(401 | 403) => 3,
        Some(404) => 4,
        Some(409) => 5,
        Some(400 | 422) => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;
    use serde_json::{json, Value};

    use super::*;

    fn start_target(args: &[&str]) -> Result<Value, clap::Error> {
        let base = ["odpctl", "start", "--host", "h"];
        let cli = Cli::try_parse_from(base.iter().chain(args))?;
        let Command::Start { target, .. } = cli.command else {
            panic!("not a start")
        };
        let request = serde_json::to_value(target.start(StartRequest::default())).unwrap();
        let given = ["pid", "process_name", "cmdline", "cgroup"]
            .into_iter()
            .filter(|key| !request[key].is_null())
            .map(|key| (key.to_owned(), request[key].clone()));
        Ok(Value::Object(given.collect()))
    }

    #[test]
    fn every_command_is_well_formed() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }

    #[test]
    fn start_takes_exactly_one_target() {
        assert_eq!(
            start_target(&["--cmdline", "java .*Main"]).unwrap(),
            json!({"cmdline": "java .*Main"})
        );
        assert_eq!(
            start_target(&["--cgroup", "/system.slice"]).unwrap(),
            json!({"cgroup": "/system.slice"})
        );
        assert_eq!(start_target(&["--pid", "7"]).unwrap(), json!({"pid": 7}));
        assert!(start_target(&[]).is_err());
        assert!(start_target(&["--pid", "7", "--cmdline", "x"]).is_err());
    }
}
