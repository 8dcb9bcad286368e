//! `odp-profiler-service`: parse flags, set up logging, run the agent.

use std::process::ExitCode;

use clap::Parser;
use odp_profiler_service::config::ENROLLMENT_TOKEN_ENV;
use odp_profiler_service::identity::{CERTIFICATE_ENV, KEY_ENV};
use odp_profiler_service::{Args, Error};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        // Logs go to stderr, leaving stdout free.
        .with_writer(std::io::stderr)
        .init();
    let config = Args::parse().into_config();
    // Read now; the tools the plugins run (py-spy, jcmd) inherit the
    // environment and must not get the agent's key. Before the runtime
    // starts its threads: changing the environment races with them.
    std::env::remove_var(KEY_ENV);
    std::env::remove_var(CERTIFICATE_ENV);
    std::env::remove_var(ENROLLMENT_TOKEN_ENV);
    let result = config.and_then(|config| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Task(format!("cannot start the async runtime: {e}")))?
            .block_on(odp_profiler_service::run(config))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The library's messages already include their causes.
            eprintln!("odp-profiler-service: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
