//! `odp-profiler-service`: parse flags, set up logging, run the agent.

use std::process::ExitCode;

use clap::Parser;
use odp_profiler_service::Args;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        // Logs go to stderr, leaving stdout free.
        .with_writer(std::io::stderr)
        .init();
    let result = match Args::parse().into_config() {
        Ok(config) => odp_profiler_service::run(config).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The library's messages already include their causes.
            eprintln!("odp-profiler-service: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
