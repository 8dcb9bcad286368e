//! `odpctl services`: services defined once (a name and the processes that
//! are it on each host), and the live hosts that run each, with their
//! labels. Runs (`odpctl run`) profile a service on hosts chosen from
//! these.

use clap::ArgGroup;
use odp_client::types::{
    CreateServiceRequest, Service, ServiceHostsResponse, ServicesResponse, UpdateServiceRequest,
};
use odp_client::{ApiClient, Method};

use crate::names::checked_name;
use crate::table::Table;
use crate::text::{count_of, labels, time};

/// Which processes are the service on each host: exactly one of these (a
/// pid names one process on one host, not a service).
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub(crate) struct ServiceTargetArgs {
    /// Every process with this executable name (`/proc/PID/comm`).
    #[arg(long)]
    process_name: Option<String>,
    /// Every process whose command line matches this regex.
    #[arg(long, value_name = "REGEX")]
    cmdline: Option<String>,
    /// Every process in this cgroup (or below), or in this container id.
    #[arg(long, value_name = "PATH|ID")]
    cgroup: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ServiceAction {
    /// Define a service (admin); prints its name.
    Create {
        /// Unique name: letters, digits, `.`, `-`, `_`.
        name: String,
        #[command(flatten)]
        target: ServiceTargetArgs,
        #[arg(long)]
        owner_team: Option<String>,
        #[arg(long)]
        description: Option<String>,
    },
    /// List the services.
    List {
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one service.
    Show {
        name: String,
        /// Print the API's JSON instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// The live hosts running a service, with their labels.
    Hosts {
        name: String,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Change a service (admin): a new target, team or description; an
    /// empty team or description clears it.
    #[command(group(
        ArgGroup::new("new_target")
            .multiple(false)
            .args(["process_name", "cmdline", "cgroup"])
    ))]
    #[command(group(
        ArgGroup::new("change")
            .required(true)
            .multiple(true)
            .args(["process_name", "cmdline", "cgroup", "owner_team", "description"])
    ))]
    Update {
        name: String,
        #[arg(long)]
        process_name: Option<String>,
        #[arg(long, value_name = "REGEX")]
        cmdline: Option<String>,
        #[arg(long, value_name = "PATH|ID")]
        cgroup: Option<String>,
        #[arg(long)]
        owner_team: Option<String>,
        #[arg(long)]
        description: Option<String>,
    },
    /// Delete a service (admin); its past profiles and runs stay.
    Delete { name: String },
}

pub(crate) async fn run(client: &ApiClient, action: ServiceAction) -> anyhow::Result<()> {
    match action {
        ServiceAction::Create {
            name,
            target,
            owner_team,
            description,
        } => {
            let body = CreateServiceRequest {
                name,
                process_name: target.process_name,
                cmdline: target.cmdline,
                cgroup: target.cgroup,
                owner_team,
                description,
            };

            let created: Service = client
                .send(Method::POST, "/api/v1/services", Some(&body), 201)
                .await?;
            println!("{}", created.name);
            eprintln!("service {}: {}", created.name, created.target);
        }
        ServiceAction::List { json } => {
            let page: ServicesResponse = client.get("/api/v1/services").await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print!("{}", services_table(&page));
            }
        }
        ServiceAction::Show { name, json } => {
            let service: Service = client.get(&path(&name)?).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&service)?);
            } else {
                print!("{}", summary(&service));
            }
        }
        ServiceAction::Hosts { name, json } => {
            let hosts: ServiceHostsResponse =
                client.get(&format!("{}/hosts", path(&name)?)).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&hosts)?);
            } else {
                print!("{}", hosts_table(&hosts));
            }
        }
        ServiceAction::Update {
            name,
            process_name,
            cmdline,
            cgroup,
            owner_team,
            description,
        } => {
            let body = UpdateServiceRequest {
                process_name,
                cmdline,
                cgroup,
                owner_team,
                description,
            };
            let service: Service = client
                .send(Method::PATCH, &path(&name)?, Some(&body), 200)
                .await?;
            eprintln!("service {} changed", service.name);
            print!("{}", summary(&service));
        }
        ServiceAction::Delete { name } => {
            client
                .call(Method::DELETE, &path(&name)?, None, 204)
                .await?;
            eprintln!("deleted service {name}");
        }
    }
    Ok(())
}

/// The service's URL path; names are letters, digits, `.`, `-` and `_`,
/// which need no escaping.
fn path(name: &str) -> anyhow::Result<String> {
    Ok(format!(
        "/api/v1/services/{}",
        checked_name("service", name)?
    ))
}

fn services_table(page: &ServicesResponse) -> String {
    let mut table = Table::new().left("name").left("team").left("target");
    for s in &page.services {
        table.row([
            s.name.clone(),
            s.owner_team.clone().unwrap_or_else(|| "-".to_owned()),
            s.target.to_string(),
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no services)\n");
    }
    out
}

fn summary(service: &Service) -> String {
    let mut out = format!(
        "service  {}\ntarget   {}\nteam     {}\n",
        service.name,
        service.target,
        service.owner_team.as_deref().unwrap_or("-"),
    );
    if let Some(description) = &service.description {
        out.push_str(&format!("about    {description}\n"));
    }
    out.push_str(&format!(
        "created  {} by {}\nupdated  {}\n",
        time(&service.created_at),
        service.created_by,
        time(&service.updated_at),
    ));
    out
}

/// The labels shown in columns of their own; the others follow as
/// `key=value`.
const LABEL_COLUMNS: [&str; 2] = ["zone", "version"];

fn hosts_table(hosts: &ServiceHostsResponse) -> String {
    let mut out = format!(
        "{} {} {} ({}; heartbeat within {} s)\n",
        count_of(hosts.hosts.len(), "live host"),
        if hosts.hosts.len() == 1 {
            "runs"
        } else {
            "run"
        },
        hosts.service,
        hosts.target,
        hosts.live_within_secs
    );
    let mut table = Table::new()
        .left("host")
        .left("zone")
        .left("version")
        .left("last seen")
        .left("labels");
    for h in &hosts.hosts {
        let label = |key: &str| h.labels.get(key).cloned().unwrap_or_else(|| "-".to_owned());
        let others = h
            .labels
            .iter()
            .filter(|(key, _)| !LABEL_COLUMNS.contains(&key.as_str()));
        table.row([
            h.host.clone(),
            label("zone"),
            label("version"),
            time(&h.last_seen),
            labels(others),
        ]);
    }
    out.push_str(&table.render());
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::TimeZone as _;
    use clap::Parser as _;
    use odp_client::types::{ServiceHost, Target};
    use serde_json::{json, Value};

    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        action: ServiceAction,
    }

    fn action(args: &[&str]) -> Result<ServiceAction, clap::Error> {
        Ok(Cli::try_parse_from(std::iter::once(&"services").chain(args))?.action)
    }

    /// The body `services create` sends, without its absent fields.
    fn create_body(args: &[&str]) -> Result<Value, clap::Error> {
        let ServiceAction::Create {
            name,
            target,
            owner_team,
            description,
        } = action(&[&["create", "checkout"][..], args].concat())?
        else {
            panic!("not a create")
        };
        let body = CreateServiceRequest {
            name,
            process_name: target.process_name,
            cmdline: target.cmdline,
            cgroup: target.cgroup,
            owner_team,
            description,
        };
        let Value::Object(map) = serde_json::to_value(body).unwrap() else {
            unreachable!()
        };
        Ok(Value::Object(
            map.into_iter().filter(|(_, v)| !v.is_null()).collect(),
        ))
    }

    #[test]
    fn create_takes_exactly_one_target_and_no_pid() {
        assert_eq!(
            create_body(&["--cmdline", "java .*checkout", "--owner-team", "payments"]).unwrap(),
            json!({"name": "checkout", "cmdline": "java .*checkout", "owner_team": "payments"})
        );
        assert_eq!(
            create_body(&["--process-name", "cpu-split"]).unwrap(),
            json!({"name": "checkout", "process_name": "cpu-split"})
        );
        assert!(create_body(&[]).is_err(), "no target");
        assert!(create_body(&["--process-name", "a", "--cgroup", "/b"]).is_err());
        assert!(create_body(&["--pid", "7"]).is_err(), "a pid is no service");
    }

    #[test]
    fn update_needs_a_change_and_at_most_one_target() {
        let Ok(ServiceAction::Update {
            owner_team,
            process_name,
            ..
        }) = action(&["update", "checkout", "--owner-team", ""])
        else {
            panic!("an empty team is a change")
        };
        assert_eq!(owner_team.as_deref(), Some(""));
        assert_eq!(process_name, None);
        assert!(action(&["update", "checkout", "--cmdline", "x"]).is_ok());
        assert!(
            action(&["update", "checkout"]).is_err(),
            "nothing to change"
        );
        assert!(action(&["update", "checkout", "--cmdline", "x", "--cgroup", "/y"]).is_err());
    }

    #[test]
    fn names_that_would_change_the_path_are_refused() {
        assert_eq!(
            path("checkout-eu.1").unwrap(),
            "/api/v1/services/checkout-eu.1"
        );
        for bad in ["", "a/b", "a?x", "a b", ".", ".."] {
            assert!(path(bad).is_err(), "{bad}");
        }
    }

    fn at(secs: u32) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc
            .with_ymd_and_hms(2026, 11, 27, 9, 0, secs)
            .unwrap()
    }

    fn checkout() -> Service {
        Service {
            name: "checkout".into(),
            target: Target::CommandLine("java .*checkout".into()),
            owner_team: Some("payments".into()),
            description: None,
            created_by: "alice".into(),
            created_at: at(0),
            updated_at: at(5),
        }
    }

    #[test]
    fn services_render_as_table_and_summary() {
        let page = ServicesResponse {
            services: vec![
                checkout(),
                Service {
                    name: "demo".into(),
                    target: Target::ProcessName("cpu-split".into()),
                    owner_team: None,
                    ..checkout()
                },
            ],
        };
        let table = services_table(&page);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        assert!(lines[0].starts_with("name"), "{table}");
        assert!(
            lines[1].starts_with("checkout")
                && lines[1].contains("payments")
                && lines[1].ends_with("command line matching \"java .*checkout\""),
            "{table}"
        );
        assert!(
            lines[2].contains(" -  ") && lines[2].ends_with("process \"cpu-split\""),
            "{table}"
        );

        let text = summary(&Service {
            description: Some("the shop's payment step".into()),
            ..checkout()
        });
        assert!(text.contains("service  checkout\n"), "{text}");
        assert!(text.contains("team     payments\n"), "{text}");
        assert!(
            text.contains("about    the shop's payment step\n"),
            "{text}"
        );
        assert!(
            text.contains("created  2026-11-27T09:00:00Z by alice\n"),
            "{text}"
        );
        assert!(!summary(&checkout()).contains("about"));
    }

    #[test]
    fn hosts_show_zone_and_version_then_the_other_labels() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let hosts = ServiceHostsResponse {
            service: "checkout".into(),
            target: Target::ProcessName("java".into()),
            live_within_secs: 30,
            hosts: vec![
                ServiceHost {
                    host: "web-1".into(),
                    agent_id: "a1".into(),
                    labels: labels(&[
                        ("zone", "eu-1"),
                        ("version", "1.4.2"),
                        ("arch", "x86_64"),
                        ("cores", "8"),
                    ]),
                    last_seen: at(7),
                },
                ServiceHost {
                    host: "web-2".into(),
                    agent_id: "a2".into(),
                    labels: BTreeMap::new(),
                    last_seen: at(9),
                },
            ],
        };
        let table = hosts_table(&hosts);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0], "2 live hosts run checkout (process \"java\"; heartbeat within 30 s)",
            "{table}"
        );
        let words = |line: &str| {
            line.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            words(lines[1]),
            ["host", "zone", "version", "last", "seen", "labels"]
        );
        assert_eq!(
            words(lines[2]),
            [
                "web-1",
                "eu-1",
                "1.4.2",
                "2026-11-27T09:00:07Z",
                "arch=x86_64,cores=8"
            ]
        );
        assert_eq!(
            words(lines[3]),
            ["web-2", "-", "-", "2026-11-27T09:00:09Z", "-"]
        );
    }
}
