use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let config = odp_pipeline::Config::parse();
    odp_pipeline::run(config, odp_plumbing::shutdown_signal()).await?;
    Ok(())
}
