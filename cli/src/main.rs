//! `odpctl`: ODP from the shell and from CI jobs.
//!
//! Exit codes scripts can rely on: 0 success; 1 other errors; 2 bad usage;
//! 3 the API refused the token (401/403); 4 not found; 5 conflict (a live
//! profile of the target exists, a run has ended); 6 the profile ended
//! failed or expired, or a run ended partial (some of its hosts failed).

mod admin;
mod channels;
mod commands;
mod compare;
mod files;
mod names;
mod options;
mod rules;
mod runs;
mod schedules;
mod services;
mod units;

use clap::Parser;

use crate::commands::Cli;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cli = Cli::parse();
    if let Err(e) = commands::run(cli).await {
        eprintln!("odpctl: {e:#}");
        std::process::exit(commands::exit_code(&e));
    }
}
