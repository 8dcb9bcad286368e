//! Profiles as files: `flamegraph` writes one in any export format,
//! `import` uploads another tool's file (pprof, folded stacks, a JFR
//! recording, speedscope) as a profile, its format told from the file
//! when `--format` is absent.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use odp_client::ApiClient;

use crate::exit::usage;
use crate::import_format::{guess, FORMATS};
use crate::names::parse_id;

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
    /// Upload a pprof, folded-stacks, JFR or speedscope file as a finished
    /// profile of a service; prints the new profile's id.
    Import {
        #[arg(long)]
        service: String,
        /// The file's format; told from its first bytes or its name when
        /// absent (gzip or protobuf, `.pb`, `.pb.gz`, `.pprof`: pprof;
        /// `FLR\0` or `.jfr`: jfr; JSON naming speedscope's `$schema`:
        /// speedscope; `a;b;c N` lines: folded).
        #[arg(long, value_parser = FORMATS)]
        format: Option<String>,
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
            let body = client
                .flamegraph_bytes(parse_id("profile", &id)?, &format)
                .await?;
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
            let bytes =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let format = match format {
                Some(format) => format,
                None => {
                    let format = guess(&file, &bytes).map_err(usage)?;
                    eprintln!("importing {} as {format}", file.display());
                    format.to_owned()
                }
            };
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
        return Err(usage(format!(
            "--{} may hold only letters, digits, `.`, `-`, `_` and `/`",
            key.replace('_', "-")
        )));
    }
    Ok(value)
}
