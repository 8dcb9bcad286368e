//! `odpctl continuous`: services profiled always, at a low rate and within
//! a CPU budget per host. Each host profiles one in hourly segments, each
//! an ordinary profile labelled `continuous=<id>` (`odpctl list --label`).

use odp_client::types::{
    ContinuousProfile, ContinuousProfilesResponse, CreateContinuousRequest, UpdateContinuousRequest,
};
use odp_client::{ApiClient, Method};
use odp_core::EventKind;
use uuid::Uuid;

use crate::table::Table;
use crate::text::time;

/// What a continuous profile samples, and where; absent: the server's
/// defaults on `on` (cpu-clock at 19 Hz within 0.5 % of a core, every
/// host running the service), unchanged on `set`.
#[derive(Debug, clap::Args)]
pub(crate) struct Settings {
    /// `cpu-clock` or `wall`.
    #[arg(long)]
    event: Option<EventKind>,
    /// Samples per second.
    #[arg(long)]
    frequency: Option<u32>,
    /// CPU each host's agent may spend on it, in percent of one core.
    #[arg(long, value_name = "PERCENT")]
    cpu_budget: Option<f64>,
    /// Only these hosts (repeat, or comma-separated).
    #[arg(long = "host", value_delimiter = ',')]
    hosts: Vec<String>,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ContinuousAction {
    /// Profile a defined service always (admin); prints its id.
    On {
        /// A defined service (`odpctl services create`).
        service: String,
        #[command(flatten)]
        settings: Settings,
    },
    /// List the continuous profiles.
    List {
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one continuous profile.
    Show {
        id: Uuid,
        /// Print the API's JSON instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Change its rate, budget, event or hosts (admin).
    Set {
        id: Uuid,
        #[command(flatten)]
        settings: Settings,
        /// Every host that runs the service again.
        #[arg(long, conflicts_with = "hosts")]
        all_hosts: bool,
    },
    /// Turn it off (admin): agents stop within seconds; it stays defined.
    Off { id: Uuid },
    /// Turn it on again (admin).
    Resume { id: Uuid },
    /// Delete it (admin); its segments stay, as profiles.
    Delete { id: Uuid },
}

pub(crate) async fn run(client: &ApiClient, action: ContinuousAction) -> anyhow::Result<()> {
    match action {
        ContinuousAction::On { service, settings } => {
            let body = CreateContinuousRequest {
                service,
                event: settings.event,
                frequency_hz: settings.frequency,
                cpu_budget_percent: settings.cpu_budget,
                hosts: (!settings.hosts.is_empty()).then_some(settings.hosts),
            };
            let created: ContinuousProfile = client
                .send(Method::POST, "/api/v1/continuous", Some(&body), 201)
                .await?;
            println!("{}", created.id);
            eprintln!("{}", one_line(&created));
        }
        ContinuousAction::List { json } => {
            let page: ContinuousProfilesResponse = client.get("/api/v1/continuous").await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print!("{}", table(&page));
            }
        }
        ContinuousAction::Show { id, json } => {
            let profile: ContinuousProfile = client.get(&path(id)).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&profile)?);
            } else {
                print!("{}", summary(&profile));
            }
        }
        ContinuousAction::Set {
            id,
            settings,
            all_hosts,
        } => {
            let hosts = if all_hosts {
                Some(Vec::new())
            } else {
                (!settings.hosts.is_empty()).then_some(settings.hosts)
            };
            let body = UpdateContinuousRequest {
                event: settings.event,
                frequency_hz: settings.frequency,
                cpu_budget_percent: settings.cpu_budget,
                hosts,
                enabled: None,
            };
            change(client, id, &body).await?;
        }
        ContinuousAction::Off { id } | ContinuousAction::Resume { id } => {
            let body = UpdateContinuousRequest {
                enabled: Some(matches!(action, ContinuousAction::Resume { .. })),
                ..UpdateContinuousRequest::default()
            };
            change(client, id, &body).await?;
        }
        ContinuousAction::Delete { id } => {
            client.call(Method::DELETE, &path(id), None, 204).await?;
            eprintln!("deleted continuous profile {id}");
        }
    }
    Ok(())
}

async fn change(
    client: &ApiClient,
    id: Uuid,
    body: &UpdateContinuousRequest,
) -> anyhow::Result<()> {
    let changed: ContinuousProfile = client
        .send(Method::PATCH, &path(id), Some(body), 200)
        .await?;
    eprintln!("{}", one_line(&changed));
    print!("{}", summary(&changed));
    Ok(())
}

fn path(id: Uuid) -> String {
    format!("/api/v1/continuous/{id}")
}

fn state(profile: &ContinuousProfile) -> &'static str {
    if profile.enabled {
        "on"
    } else {
        "off"
    }
}

fn hosts(profile: &ContinuousProfile) -> String {
    profile.hosts.as_ref().map_or_else(
        || "every host running it".to_owned(),
        |hosts| hosts.join(","),
    )
}

fn one_line(profile: &ContinuousProfile) -> String {
    format!(
        "{} is profiled continuously ({}): {} at {} Hz within {}% of a core per host, {}",
        profile.service,
        state(profile),
        profile.event,
        profile.frequency_hz,
        profile.cpu_budget_percent,
        hosts(profile)
    )
}

fn table(page: &ContinuousProfilesResponse) -> String {
    let mut table = Table::new()
        .left("id")
        .left("service")
        .left("state")
        .left("event")
        .right("Hz")
        .right("budget %")
        .left("hosts");
    for p in &page.continuous {
        table.row([
            p.id.to_string(),
            p.service.clone(),
            state(p).to_owned(),
            p.event.to_string(),
            p.frequency_hz.to_string(),
            p.cpu_budget_percent.to_string(),
            hosts(p),
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no continuous profiles)\n");
    }
    out
}

fn summary(p: &ContinuousProfile) -> String {
    format!(
        "continuous  {}\nservice     {}\nstate       {}\nevent       {} at {} Hz\nbudget      {}% of a core per host\nhosts       {}\nsegments    {} s each, one profile per host (label continuous={})\ncreated     {} by {}\nupdated     {} by {}\n",
        p.id,
        p.service,
        state(p),
        p.event,
        p.frequency_hz,
        p.cpu_budget_percent,
        hosts(p),
        p.segment_secs,
        p.id,
        time(&p.created_at),
        p.created_by,
        time(&p.updated_at),
        p.updated_by,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(hosts: Option<Vec<&str>>, enabled: bool) -> ContinuousProfile {
        ContinuousProfile {
            id: Uuid::from_u128(0x29),
            service: "checkout".into(),
            event: EventKind::CpuClock,
            frequency_hz: 19,
            cpu_budget_percent: 0.5,
            hosts: hosts.map(|h| h.into_iter().map(str::to_owned).collect()),
            enabled,
            segment_secs: 3600,
            created_by: "alice".into(),
            updated_by: "bob".into(),
            created_at: "2026-11-28T03:00:00Z".parse().unwrap(),
            updated_at: "2026-11-28T04:00:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn the_table_says_state_rate_budget_and_hosts() {
        let page = ContinuousProfilesResponse {
            continuous: vec![
                profile(None, true),
                profile(Some(vec!["web-1", "web-2"]), false),
            ],
        };
        let out = table(&page);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(lines[1].contains(" on ") && lines[1].contains("every host running it"));
        assert!(lines[2].contains(" off ") && lines[2].contains("web-1,web-2"));
        assert!(lines[1].contains("19") && lines[1].contains("0.5"), "{out}");
        assert!(table(&ContinuousProfilesResponse { continuous: vec![] })
            .contains("(no continuous profiles)"));
    }

    #[test]
    fn the_summary_names_its_segments_label() {
        let out = summary(&profile(None, true));
        assert!(
            out.contains("label continuous=00000000-0000-0000-0000-000000000029"),
            "{out}"
        );
        assert!(out.contains("0.5% of a core per host"), "{out}");
        assert!(out.contains("by bob"), "{out}");
    }
}
