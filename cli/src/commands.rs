//! The subcommands, each a call or two to the REST API.

use std::path::PathBuf;

use anyhow::Context as _;
use odp_client::types::{ProfileStatus, StartRequest};
use odp_client::ApiClient;

use crate::exit::{usage, EXIT_CODES};
use crate::names::parse_id;
use crate::options::TargetArgs;
use crate::profile_view::{profile_summary, profiles_table, top_text, TopRows};

#[derive(Debug, clap::Parser)]
#[command(
    name = "odpctl",
    about = "Start, watch, stop and read ODP profiles",
    after_help = EXIT_CODES
)]
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
    /// Show long cells (function names) whole; otherwise a table on a
    /// terminal is fitted to its width, names shortened in the middle.
    #[arg(long, global = true)]
    wide: bool,
    #[command(subcommand)]
    command: Command,
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
        /// Follow the profile until it ends (elapsed and remaining time,
        /// samples so far, on standard error), then print its top
        /// functions.
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
    /// Show one profile: what was profiled, how, and how it went.
    Status {
        id: String,
        /// Print the API's JSON (with every library of the runtime)
        /// instead of a summary.
        #[arg(long)]
        json: bool,
    },
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
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Top functions of a profile by self time, with their shares and
    /// error bounds.
    Top {
        id: String,
        #[arg(long, default_value_t = 15)]
        limit: usize,
        /// Also list the functions without self time (`main`, `_start`
        /// and the other callers).
        #[arg(long, alias = "all")]
        include_callers: bool,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
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
    /// A function's share of a service's samples and the cores it keeps
    /// busy, step by step over a time range, each with its ± (one
    /// standard error).
    Trend(crate::trend::TrendArgs),
    /// Services profiled always, at a low rate and within a CPU budget per
    /// host: on, list, show, set, off, resume, delete.
    Continuous {
        #[command(subcommand)]
        action: crate::continuous::ContinuousAction,
    },
    /// Profile a service's host when its CPU or memory growth crosses a
    /// threshold: create, list, show, set, off, resume, delete.
    Triggers {
        #[command(subcommand)]
        action: crate::triggers::TriggerAction,
    },
    /// Agent identities (admin): enroll an agent (its key made here, the
    /// certificate from the api-server), list them, revoke one; one-time
    /// enrollment tokens an agent enrolls itself with.
    Agents {
        #[command(subcommand)]
        action: crate::agents::AgentAction,
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
    let width = crate::term::table_width(cli.wide);
    let rows = |limit: usize, include_callers: bool| TopRows {
        limit,
        include_callers,
        width,
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
                crate::follow::follow(&client, id, duration_secs, rows(15, false)).await?;
            }
        }
        Command::Stop { id } => {
            let profile = client.stop_profile(parse_id("profile", &id)?).await?;
            eprintln!("stop requested for {}", profile.id);
        }
        Command::Status { id, json } => {
            let id = parse_id("profile", &id)?;
            let profile = client.profile(id).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&profile)?);
            } else {
                // The samples and hottest function, once there are any.
                let sampled = profile.started_at.is_some()
                    && matches!(
                        profile.status,
                        ProfileStatus::Running | ProfileStatus::Finished | ProfileStatus::Stopped
                    );
                let top = match sampled {
                    true => client.top(id, 5).await.ok(),
                    false => None,
                };
                print!(
                    "{}",
                    profile_summary(&profile, top.as_ref(), chrono::Utc::now())
                );
            }
        }
        Command::List {
            service,
            host,
            status,
            limit,
            labels,
            json,
        } => {
            let filter = ListFilter {
                service,
                host,
                status,
                labels,
            };
            list(&client, filter, limit, json).await?
        }
        Command::Top {
            id,
            limit,
            include_callers,
            json,
        } => {
            let top = client.top(parse_id("profile", &id)?, limit).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&top)?);
            } else {
                print!("{}", top_text(&top, rows(limit, include_callers)));
            }
        }
        Command::Admin(command) => crate::admin::run(&client, command).await?,
        Command::Schedules { action } => crate::schedules::run(&client, action).await?,
        Command::Rules { action } => crate::rules::run(&client, action).await?,
        Command::Channels { action } => crate::channels::run(&client, action).await?,
        Command::Services { action } => crate::services::run(&client, action).await?,
        Command::Continuous { action } => crate::continuous::run(&client, action).await?,
        Command::Triggers { action } => crate::triggers::run(&client, action).await?,
        Command::Trend(args) => crate::trend::run(&client, args).await?,
        Command::Agents { action } => crate::agents::run(&client, action).await?,
        Command::Run { action } => crate::runs::run(&client, action, width).await?,
        Command::Files(command) => crate::files::run(&client, command).await?,
        Command::Compare(command) => crate::compare::run(&client, command, width).await?,
    }
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

async fn list(
    client: &ApiClient,
    filter: ListFilter,
    limit: u32,
    json: bool,
) -> anyhow::Result<()> {
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
                return Err(usage(format!(
                    "--{key} may hold only letters, digits, `.`, `-` and `_`"
                )));
            }
            query.push(format!("{key}={value}"));
        }
    }
    let page = client.list_profiles(&query.join("&")).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&page)?);
    } else {
        print!("{}", profiles_table(&page));
    }
    Ok(())
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
