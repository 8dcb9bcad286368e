//! The deployment files stay true to the binaries: every ODP service's
//! command in `docker-compose.yml` and in its MySQL variant parses with
//! that binary's own command-line definition, and the database URL names
//! the backend the file is for.

use std::collections::BTreeMap;
use std::path::Path;

use clap::Parser;

/// One service's `command:` list and `environment:` keys.
#[derive(Debug, Default)]
struct Service {
    command: Vec<String>,
    environment: Vec<String>,
}

/// The services of a compose file: the small part of YAML these files
/// use (two-space indents, block lists and maps, no anchors).
fn services(text: &str) -> BTreeMap<String, Service> {
    let mut services: BTreeMap<String, Service> = BTreeMap::new();
    let (mut in_services, mut current, mut key) = (false, None::<String>, String::new());
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        match indent {
            0 => in_services = trimmed == "services:",
            2 if in_services => {
                let name = trimmed.trim_end_matches(':').to_owned();
                services.entry(name.clone()).or_default();
                current = Some(name);
            }
            4 if in_services => {
                key = trimmed.split(':').next().unwrap_or_default().to_owned();
            }
            6 if in_services => {
                let Some(service) = current.as_ref().and_then(|n| services.get_mut(n)) else {
                    continue;
                };
                match key.as_str() {
                    "command" => {
                        if let Some(item) = trimmed.strip_prefix("- ") {
                            service.command.push(item.to_owned());
                        }
                    }
                    "environment" => {
                        if let Some((name, _)) = trimmed.split_once(':') {
                            service.environment.push(name.to_owned());
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    services
}

fn compose(file: &str) -> BTreeMap<String, Service> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file);
    services(&std::fs::read_to_string(&path).expect("read the compose file"))
}

/// Checks `service`'s command with its binary's parser, the variables its
/// `environment:` provides set (to placeholders) as compose would.
fn check(service: &Service, what: &str) {
    for name in &service.environment {
        std::env::set_var(name, "placeholder-from-compose");
    }
    let args = &service.command;
    let parsed = match args.first().map(String::as_str) {
        Some("odp-api-server") => odp_api_server::Cli::try_parse_from(args).map(drop),
        Some("odp-pipeline") => odp_pipeline::Config::try_parse_from(args).map(drop),
        Some("odp-profiler-service") => odp_profiler_service::Args::try_parse_from(args).map(drop),
        other => panic!("{what}: unknown program {other:?}"),
    };
    if let Err(error) = parsed {
        panic!("{what}: `{}` does not parse:\n{error}", args.join(" "));
    }
    for name in &service.environment {
        std::env::remove_var(name);
    }
}

fn database_url(service: &Service) -> &str {
    service
        .command
        .iter()
        .find_map(|a| a.strip_prefix("--database-url="))
        .expect("a --database-url")
}

#[test]
fn compose_commands_parse_and_name_their_backend() {
    let postgres = compose("docker-compose.yml");
    let mysql = compose("docker-compose.mysql.yml");
    let odp = ["api-server", "pipeline", "profiler-service"];
    for name in odp {
        check(&postgres[name], &format!("docker-compose.yml {name}"));
    }
    for name in ["api-server", "pipeline"] {
        assert!(database_url(&postgres[name]).starts_with("postgres://"));
        let overridden = &mysql[name];
        check(overridden, &format!("docker-compose.mysql.yml {name}"));
        assert!(database_url(overridden).starts_with("mysql://"));
        // Only the database differs from the Postgres deployment.
        let without_url = |s: &Service| -> Vec<String> {
            s.command
                .iter()
                .filter(|a| !a.starts_with("--database-url="))
                .cloned()
                .collect()
        };
        assert_eq!(
            without_url(overridden),
            without_url(&postgres[name]),
            "{name}"
        );
    }
    assert!(
        mysql.contains_key("mysql"),
        "the variant runs a MySQL server"
    );
}
