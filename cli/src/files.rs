//! Profiles as files: `flamegraph` writes one in any export format,
//! `import` uploads another tool's pprof or folded file as a profile.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context as _};
use odp_client::ApiClient;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum FileCommand {
    /// Write a profile's flame graph or samples in a file format.
    Flamegraph {
        id: String,
        #[arg(
            long,
            default_value = "svg",
            value_parser = ["svg", "folded", "json", "pprof", "speedscope"]
        )]
        format: String,
        /// Output file; standard output when absent.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Upload a pprof or folded-stacks file as a finished profile of a
    /// service; prints the new profile's id.
    Import {
        #[arg(long)]
        service: String,
        #[arg(long, value_parser = ["pprof", "folded"])]
        format: String,
        /// The host to file it under (`imported` when absent).
        #[arg(long)]
        host: Option<String>,
        /// pprof: which sample type to count (the file's default when absent).
        #[arg(long)]
        sample_type: Option<String>,
        /// What the counts measure (`cpu-clock`, `cycles`, ...), when the
        /// file does not say.
        #[arg(long)]
        event: Option<String>,
        file: PathBuf,
    },
}

pub(crate) async fn run(client: &ApiClient, command: FileCommand) -> anyhow::Result<()> {
    match command {
        FileCommand::Flamegraph { id, format, output } => {
            let body = client.flamegraph_bytes(&id, &format).await?;
            match output {
                Some(path) => std::fs::write(&path, body)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => std::io::stdout()
                    .write_all(&body)
                    .context("writing to standard output")?,
            }
        }
        FileCommand::Import {
            service,
            format,
            host,
            sample_type,
            event,
            file,
        } => {
            let mut query = vec![format!("format={format}")];
            for (key, value) in [
                ("service", Some(service)),
                ("host", host),
                ("sample_type", sample_type),
                ("event", event),
            ] {
                if let Some(value) = value {
                    query.push(format!("{key}={}", query_value(key, &value)?));
                }
            }
            let bytes =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let profile = client.import_profile(&query.join("&"), bytes).await?;
            println!("{}", profile.id);
        }
    }
    Ok(())
}

/// Names in the query: services and hosts are letters, digits, `.`, `-`
/// and `_`; pprof sample types and events add `/` at most. Anything else
/// would need URL encoding no such name needs.
fn query_value<'a>(key: &str, value: &'a str) -> anyhow::Result<&'a str> {
    if value.is_empty()
        || !value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/'))
    {
        bail!(
            "--{} may hold only letters, digits, `.`, `-`, `_` and `/`",
            key.replace('_', "-")
        );
    }
    Ok(value)
}
