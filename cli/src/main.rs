//! `odpctl`: ODP from the shell and from CI jobs.
//!
//! Exit codes scripts can rely on: 0 success; 1 other errors; 2 bad usage
//! (a malformed id or name, a comparison refused without `--force`); 3 the
//! API refused the token (401/403); 4 not found (an unknown id, an
//! aggregate without samples); 5 conflict (a live profile of the target
//! exists, a name is taken, a run has ended); 6 the profile ended failed or
//! expired, or a run ended partial (some of its hosts failed).
//!
//! What a command prints is made by pure functions from the API's bodies
//! to text (`*_view.rs`, `runs/render.rs`), tested against golden files in
//! `tests/golden/` (`ODP_BLESS=1 cargo test -p odpctl` rewrites them).

mod admin;
mod agents;
mod channels;
mod commands;
mod compare;
mod compare_view;
mod continuous;
mod enrollment;
mod exit;
mod files;
mod follow;
mod import_format;
mod names;
mod options;
mod profile_view;
mod retry;
mod rules;
mod runs;
mod schedules;
mod services;
mod table;
mod term;
mod text;
mod trend;
mod triggers;
mod units;
mod when;

#[cfg(test)]
mod golden;

use clap::Parser;

use crate::commands::Cli;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cli = Cli::parse();
    if let Err(e) = commands::run(cli).await {
        eprintln!("odpctl: {e:#}");
        std::process::exit(exit::exit_code(&e));
    }
}
