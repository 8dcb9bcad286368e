//! `odp-dev`: runs the local ODP stack in the background for development.
//!
//! Each subcommand is a thin wrapper over a library function of
//! `odp_devstack`; add new ones to `Command` and `run` below.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use odp_devstack::{DatabaseKind, StackRecord, UpOutcome};

#[derive(Debug, Parser)]
#[command(
    name = "odp-dev",
    about = "Local ODP stack: Tansu (Kafka) + a private Postgres (or MariaDB)"
)]
struct Cli {
    /// Where the stack keeps its data, logs and stack.json.
    #[arg(long, env = "ODP_STATE_DIR", global = true, default_value_os_t = odp_devstack::default_state_dir())]
    state_dir: PathBuf,

    #[command(subcommand)]
    command: Command,
}

/// The database server the stack runs, for `up` and `quickstart`.
#[derive(Debug, clap::Args)]
struct DatabaseArg {
    /// `postgres` (the default) or `mysql` (a private MariaDB; ODP's
    /// MySQL backend).
    #[arg(long = "database", default_value = "postgres", value_parser = parse_database)]
    kind: DatabaseKind,
}

fn parse_database(name: &str) -> Result<DatabaseKind, String> {
    name.parse()
        .map_err(|error: odp_devstack::DevError| error.to_string())
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the stack in the background and print its env lines.
    Up {
        #[command(flatten)]
        database: DatabaseArg,
    },
    /// Stop the background stack.
    Down,
    /// Show whether the background stack runs.
    Status,
    /// Print the env lines (`export $(odp-dev env)`).
    Env,
    /// Start the stack and the three services, profile the demo workload
    /// through the REST API and print its top functions.
    Quickstart {
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
        duration_secs: u64,
        #[arg(long, default_value_t = 99, value_parser = clap::value_parser!(u32).range(1..=10000))]
        frequency_hz: u32,
        #[command(flatten)]
        database: DatabaseArg,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        // stdout carries only the env lines, so scripts can consume them.
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` prints the cause chain on one line; returning the error
            // from main would also dump a backtrace when RUST_BACKTRACE is set.
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Up { database } => up(cli.state_dir, database.kind).await,
        Command::Down => down(cli.state_dir),
        Command::Status => status(cli.state_dir),
        Command::Env => env(cli.state_dir),
        Command::Quickstart {
            duration_secs,
            frequency_hz,
            database,
        } => {
            odp_devstack::quickstart(odp_devstack::QuickstartOptions {
                state_dir: cli.state_dir,
                duration_secs,
                frequency_hz,
                database: database.kind,
            })
            .await?;
            Ok(())
        }
    }
}

async fn up(state_dir: PathBuf, database: DatabaseKind) -> Result<()> {
    let outcome = odp_devstack::up(&state_dir, database).await?;
    match &outcome {
        UpOutcome::Started(_) => eprintln!("stack started in {}", state_dir.display()),
        UpOutcome::AlreadyRunning(_) => {
            eprintln!("stack already running in {}", state_dir.display())
        }
    }
    print_env(outcome.record());
    Ok(())
}

fn down(state_dir: PathBuf) -> Result<()> {
    let services = odp_devstack::stop_services(&state_dir)?;
    if services > 0 {
        eprintln!("stopped {services} service processes");
    }
    match odp_devstack::down(&state_dir)? {
        Some(_) => eprintln!("stack in {} stopped", state_dir.display()),
        None => eprintln!("no stack recorded in {}", state_dir.display()),
    }
    Ok(())
}

fn status(state_dir: PathBuf) -> Result<()> {
    match odp_devstack::status(&state_dir)? {
        Some(status) => {
            println!("{status}");
            if !status.is_healthy() {
                anyhow::bail!(
                    "the stack is not healthy; `odp-dev down` then `odp-dev up` restarts it"
                );
            }
        }
        None => anyhow::bail!(
            "no stack recorded in {}; start one with `odp-dev up`",
            state_dir.display()
        ),
    }
    Ok(())
}

fn env(state_dir: PathBuf) -> Result<()> {
    print_env(&odp_devstack::running_record(&state_dir)?);
    Ok(())
}

fn print_env(record: &StackRecord) {
    for line in record.env_lines() {
        println!("{line}");
    }
}
