//! `odp-profiler-service`: parse flags, set up logging, run the agent.

use clap::Parser;
use odp_profiler_service::Args;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        // Logs go to stderr, leaving stdout free.
        .with_writer(std::io::stderr)
        .init();
    let config = Args::parse().into_config()?;
    odp_profiler_service::run(config).await?;
    Ok(())
}
