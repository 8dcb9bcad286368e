use anyhow::Context as _;
use clap::Parser;
use odp_api_server::{Cli, CliCommand};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    match Cli::parse().command {
        CliCommand::Serve(config) => {
            odp_api_server::serve(config, odp_plumbing::shutdown_signal()).await?
        }
        CliCommand::Keygen {
            private_key,
            public_key,
        } => {
            let (private, public) = odp_core::command::generate_keypair()?;
            write_private(&private_key, &private)?;
            std::fs::write(&public_key, public)
                .with_context(|| format!("writing {}", public_key.display()))?;
        }
        CliCommand::DevCert { cert, key, names } => {
            let (cert_pem, key_pem) = odp_api_server::generate_dev_cert(&names)?;
            std::fs::write(&cert, cert_pem)
                .with_context(|| format!("writing {}", cert.display()))?;
            write_private(&key, &key_pem)?;
        }
        CliCommand::Token {
            jwt_secret,
            sub,
            role,
            services,
            ttl_secs,
        } => {
            let grant = odp_api_server::Grant {
                subject: sub,
                role,
                services,
            };
            let now = chrono::Utc::now().timestamp();
            let token = odp_core::token::mint_hs256(jwt_secret.as_bytes(), &grant, now, ttl_secs)?;
            println!("{token}");
        }
    }
    Ok(())
}

fn write_private(path: &std::path::Path, pem: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(pem.as_bytes())?;
    Ok(())
}
