//! `odpctl run`: a service profiled at once on hosts chosen from the live
//! ones running it (all, K or P%, stratified by host labels, seeded), one
//! member profile per host, ended early by a stop rule once its top self
//! shares are known to ±ε. `wait` follows a run to its end and prints the
//! top shares with their errors.

use odp_client::types::{
    CreateRunRequest, RunHostsResponse, RunIssuesResponse, RunTopResponse, RunsResponse,
};
use odp_client::ApiClient;
use odp_core::run::{HostSelection, StopRule};
use uuid::Uuid;

use crate::names::{checked_name, parse_id};
use crate::profile_view::TopRows;

mod render;
#[cfg(test)]
mod tests;
mod wait;

use render::{hosts_table, issues_text, runs_table, selection, status_name, summary, top_table};
use wait::follow;

/// How many of the live hosts running the service: at most one of these
/// (every host when none is given).
#[derive(Debug, clap::Args)]
#[group(multiple = false)]
pub(crate) struct HostArgs {
    /// Every live host running the service (the default).
    #[arg(long)]
    all: bool,
    /// K hosts, chosen uniformly without replacement; every live host when
    /// fewer run the service (unless `--strict`).
    #[arg(long, value_name = "K")]
    count: Option<u32>,
    /// P percent of the live hosts, rounded up; P in (0, 100].
    #[arg(long, value_name = "P")]
    percent: Option<f64>,
}

impl HostArgs {
    fn selection(&self) -> HostSelection {
        if self.all {
            return HostSelection::All;
        }
        match (self.count, self.percent) {
            (Some(k), _) => HostSelection::Count(k),
            (None, Some(p)) => HostSelection::Percent(p),
            (None, None) => HostSelection::All,
        }
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct StartArgs {
    /// A defined service (`odpctl services create`).
    service: String,
    #[command(flatten)]
    hosts: HostArgs,
    /// Allocate the hosts in proportion to each combination of this host
    /// label's values, at least one each when K allows (repeatable).
    #[arg(long = "stratify-by", value_name = "LABEL")]
    stratify_by: Vec<String>,
    /// The same seed and live hosts choose the same hosts (random, and
    /// recorded with the run, when absent).
    #[arg(long)]
    seed: Option<u64>,
    /// Refuse the run rather than take every live host when `--count`
    /// exceeds them.
    #[arg(long)]
    strict: bool,
    /// The longest each member profiles, in seconds.
    #[arg(long = "duration", value_name = "SECS")]
    duration_secs: u64,
    #[arg(long = "frequency", value_name = "HZ")]
    frequency_hz: Option<u32>,
    /// Seconds of samples in each window a member sends.
    #[arg(long = "window", value_name = "SECS")]
    window_secs: Option<u64>,
    /// Stop rule: end the run once the K largest self shares of its
    /// aggregate each have a standard error of at most `--stop-stderr`.
    #[arg(long, value_name = "K", requires = "stop_stderr")]
    stop_top: Option<u32>,
    /// The stop rule's ε, a share in (0, 1): 0.01 is one percentage point.
    #[arg(long, value_name = "EPS", requires = "stop_top")]
    stop_stderr: Option<f64>,
    /// Follow the run until it ends, then print its top shares.
    #[arg(long)]
    wait: bool,
    #[command(flatten)]
    options: crate::options::StartOptionArgs,
}

impl StartArgs {
    fn request(self) -> CreateRunRequest {
        let stop_when = match (self.stop_top, self.stop_stderr) {
            (Some(top), Some(max_stderr)) => Some(StopRule { top, max_stderr }),
            _ => None,
        };
        CreateRunRequest {
            service: self.service,
            hosts: self.hosts.selection(),
            stratify_by: self.stratify_by,
            seed: self.seed,
            strict: self.strict,
            duration_secs: self.duration_secs,
            frequency_hz: self.frequency_hz,
            window_secs: self.window_secs,
            stop_when,
            options: self.options.into_options(),
        }
    }
}

// Parsed once per run: the size of the biggest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, clap::Subcommand)]
pub(crate) enum RunAction {
    /// Start a run (profiler of the service); prints its id.
    Start(StartArgs),
    /// Show a run: its hosts, strata, members and precision.
    Show {
        id: String,
        /// Print the API's JSON instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Follow a run until it ends, then print its top shares.
    Wait { id: String },
    /// A run's hosts: samples, hottest function and how far each host's
    /// function mix is from the others' (outliers flagged, with the
    /// function that moved most).
    Hosts {
        id: String,
        /// The run's top functions compared one by one (default 10).
        #[arg(long = "top-k", value_name = "K")]
        top_k: Option<u32>,
        /// Family-wise false-positive rate (default 0.01).
        #[arg(long)]
        alpha: Option<f64>,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// A run's hottest functions over every member.
    Top {
        id: String,
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Also list the functions without self time (`main`, `_start`
        /// and the other callers).
        #[arg(long, alias = "all")]
        include_callers: bool,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// What the detection rules found in a run once it ended, and the
    /// hosts where each finding is highest.
    Issues {
        id: String,
        /// Print the API's JSON instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Stop a run: every member still profiling stops.
    Stop { id: String },
    /// List runs, newest first.
    List {
        #[arg(long)]
        service: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(
    client: &ApiClient,
    action: RunAction,
    width: Option<usize>,
) -> anyhow::Result<()> {
    match action {
        RunAction::Start(args) => {
            let wait = args.wait;
            let run = client.start_run(&args.request()).await?;
            println!("{}", run.id);
            eprintln!("run {}: {}", run.id, selection(&run));
            for m in run.members.iter().filter(|m| m.profile_id.is_none()) {
                eprintln!(
                    "  {}: {}",
                    m.host,
                    m.reason.as_deref().unwrap_or("not started")
                );
            }
            if wait {
                follow(client, run.id, width).await?;
            }
        }
        RunAction::Show { id, json } => {
            let run = client.run(run_id(&id)?).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&run)?);
            } else {
                print!("{}", summary(&run));
            }
        }
        RunAction::Wait { id } => follow(client, run_id(&id)?, width).await?,
        RunAction::Hosts {
            id,
            top_k,
            alpha,
            json,
        } => {
            let hosts: RunHostsResponse =
                client.get(&hosts_path(run_id(&id)?, top_k, alpha)).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&hosts)?);
            } else {
                print!("{}", hosts_table(&hosts, width));
            }
        }
        RunAction::Top {
            id,
            limit,
            include_callers,
            json,
        } => {
            let path = format!("/api/v1/runs/{}/top?limit={limit}", run_id(&id)?);
            let top: RunTopResponse = client.get(&path).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&top)?);
            } else {
                let rows = TopRows {
                    limit: limit as usize,
                    include_callers,
                    width,
                };
                print!("{}", top_table(&top, rows));
            }
        }
        RunAction::Issues { id, json } => {
            let path = format!("/api/v1/runs/{}/issues", run_id(&id)?);
            let found: RunIssuesResponse = client.get(&path).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&found)?);
            } else {
                print!("{}", issues_text(&found));
            }
        }
        RunAction::Stop { id } => {
            let run = client.stop_run(run_id(&id)?).await?;
            eprintln!(
                "stop requested for run {}: {}",
                run.id,
                status_name(run.status)
            );
        }
        RunAction::List {
            service,
            limit,
            json,
        } => {
            let mut path = format!("/api/v1/runs?limit={limit}");
            if let Some(service) = service {
                path.push_str(&format!(
                    "&service={}",
                    checked_name("--service", &service)?
                ));
            }
            let page: RunsResponse = client.get(&path).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print!("{}", runs_table(&page));
            }
        }
    }
    Ok(())
}

/// `GET /api/v1/runs/{id}/hosts` with the options given.
fn hosts_path(id: Uuid, top_k: Option<u32>, alpha: Option<f64>) -> String {
    let mut query: Vec<String> = Vec::new();
    if let Some(k) = top_k {
        query.push(format!("top_k={k}"));
    }
    if let Some(alpha) = alpha {
        query.push(format!("alpha={alpha}"));
    }
    match query.is_empty() {
        true => format!("/api/v1/runs/{id}/hosts"),
        false => format!("/api/v1/runs/{id}/hosts?{}", query.join("&")),
    }
}

fn run_id(text: &str) -> anyhow::Result<Uuid> {
    parse_id("run", text)
}
