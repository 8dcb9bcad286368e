//! `odpctl triggers`: profile a service's host when its CPU or memory
//! growth crosses a threshold. Each triggered profile is an ordinary
//! profile labelled `trigger=<id>` (`odpctl list --label`).

use odp_client::types::{
    CreateTriggerRequest, Trigger, TriggerFiringsResponse, TriggersResponse, UpdateTriggerRequest,
};
use odp_client::{ApiClient, Method};
use odp_core::trigger::TriggerCondition;
use odp_core::EventKind;
use uuid::Uuid;

use crate::table::Table;
use crate::text::{time, time_or_dash};

/// What must hold on a host: one of `--cpu-above` or `--rss-growth`, for
/// `--for` seconds.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false, id = "threshold")]
pub(crate) struct Condition {
    /// The service's processes on the host use more than this percent of
    /// one core (200: two cores).
    #[arg(long, value_name = "PERCENT", group = "threshold")]
    cpu_above: Option<u32>,
    /// Their resident memory grows faster than this many MiB a minute.
    #[arg(long, value_name = "MIB_PER_MIN", group = "threshold")]
    rss_growth: Option<u32>,
}

/// What a triggered profile samples and how often the trigger may fire;
/// absent: the server's defaults on `create`, unchanged on `set`.
#[derive(Debug, clap::Args)]
pub(crate) struct Settings {
    /// Seconds each triggered profile runs.
    #[arg(long, value_name = "SECS")]
    duration: Option<u64>,
    #[arg(long)]
    event: Option<EventKind>,
    /// Samples per second.
    #[arg(long)]
    frequency: Option<u32>,
    /// Seconds before it may fire again on the same host.
    #[arg(long, value_name = "SECS")]
    cooldown: Option<u32>,
    /// Most of its profiles running at once across the fleet.
    #[arg(long, value_name = "N")]
    max_concurrent: Option<u32>,
    /// Only these hosts watch it (repeat, or comma-separated).
    #[arg(long = "host", value_delimiter = ',')]
    hosts: Vec<String>,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum TriggerAction {
    /// Create a trigger on a defined service (admin); prints its id.
    Create {
        service: String,
        #[command(flatten)]
        condition: Condition,
        /// Seconds the condition must hold.
        #[arg(long = "for", value_name = "SECS", default_value_t = 30)]
        for_secs: u32,
        #[command(flatten)]
        settings: Settings,
    },
    /// List the triggers.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show one trigger and its latest firings.
    Show {
        id: Uuid,
        #[arg(long)]
        json: bool,
    },
    /// Change what a triggered profile samples, the cooldown, cap or hosts
    /// (admin).
    Set {
        id: Uuid,
        #[command(flatten)]
        settings: Settings,
    },
    /// Turn it off (admin): agents stop watching within seconds.
    Off { id: Uuid },
    /// Turn it on again (admin).
    Resume { id: Uuid },
    /// Delete it and its firings (admin); its profiles stay.
    Delete { id: Uuid },
}

impl Condition {
    fn with_period(&self, for_secs: u32) -> TriggerCondition {
        match (self.cpu_above, self.rss_growth) {
            (Some(percent), _) => TriggerCondition::CpuAbove { percent, for_secs },
            (None, Some(mib_per_min)) => TriggerCondition::RssGrowth {
                mib_per_min,
                for_secs,
            },
            // clap's group requires one of them.
            (None, None) => unreachable!("a trigger needs --cpu-above or --rss-growth"),
        }
    }
}

pub(crate) async fn run(client: &ApiClient, action: TriggerAction) -> anyhow::Result<()> {
    match action {
        TriggerAction::Create {
            service,
            condition,
            for_secs,
            settings,
        } => {
            let body = CreateTriggerRequest {
                service,
                condition: condition.with_period(for_secs),
                duration_secs: settings.duration,
                event: settings.event,
                frequency_hz: settings.frequency,
                cooldown_secs: settings.cooldown,
                max_concurrent: settings.max_concurrent,
                hosts: (!settings.hosts.is_empty()).then_some(settings.hosts),
            };
            let created: Trigger = client
                .send(Method::POST, "/api/v1/triggers", Some(&body), 201)
                .await?;
            println!("{}", created.id);
            eprintln!("{}", one_line(&created));
        }
        TriggerAction::List { json } => {
            let page: TriggersResponse = client.get("/api/v1/triggers").await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print!("{}", table(&page));
            }
        }
        TriggerAction::Show { id, json } => {
            let trigger: Trigger = client.get(&path(id)).await?;
            let firings: TriggerFiringsResponse = client
                .get(&format!("{}/firings?limit=10", path(id)))
                .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&trigger)?);
            } else {
                print!("{}{}", summary(&trigger), firings_table(&firings));
            }
        }
        TriggerAction::Set { id, settings } => {
            let body = UpdateTriggerRequest {
                duration_secs: settings.duration,
                event: settings.event,
                frequency_hz: settings.frequency,
                cooldown_secs: settings.cooldown,
                max_concurrent: settings.max_concurrent,
                hosts: (!settings.hosts.is_empty()).then_some(settings.hosts),
                ..UpdateTriggerRequest::default()
            };
            change(client, id, &body).await?;
        }
        TriggerAction::Off { id } | TriggerAction::Resume { id } => {
            let body = UpdateTriggerRequest {
                enabled: Some(matches!(action, TriggerAction::Resume { .. })),
                ..UpdateTriggerRequest::default()
            };
            change(client, id, &body).await?;
        }
        TriggerAction::Delete { id } => {
            client.call(Method::DELETE, &path(id), None, 204).await?;
            eprintln!("deleted trigger {id}");
        }
    }
    Ok(())
}

async fn change(client: &ApiClient, id: Uuid, body: &UpdateTriggerRequest) -> anyhow::Result<()> {
    let changed: Trigger = client
        .send(Method::PATCH, &path(id), Some(body), 200)
        .await?;
    eprintln!("{}", one_line(&changed));
    Ok(())
}

fn path(id: Uuid) -> String {
    format!("/api/v1/triggers/{id}")
}

fn condition(c: &TriggerCondition) -> String {
    match c {
        TriggerCondition::CpuAbove { percent, for_secs } => {
            format!("CPU above {percent}% of a core for {for_secs} s")
        }
        TriggerCondition::RssGrowth {
            mib_per_min,
            for_secs,
        } => format!("memory growing over {mib_per_min} MiB/min for {for_secs} s"),
    }
}

fn state(t: &Trigger) -> String {
    match (&t.enabled, &t.held_back_reason) {
        (false, _) => "off".into(),
        (true, Some(reason)) => format!("held back ({reason})"),
        (true, None) => "on".into(),
    }
}

fn one_line(t: &Trigger) -> String {
    format!(
        "{} ({}): when {}, a {} s {} profile at {} Hz; at most {} at once, {} s apart per host",
        t.service,
        state(t),
        condition(&t.condition),
        t.duration_secs,
        t.event,
        t.frequency_hz,
        t.max_concurrent,
        t.cooldown_secs
    )
}

fn table(page: &TriggersResponse) -> String {
    let mut table = Table::new()
        .left("id")
        .left("service")
        .left("state")
        .left("when")
        .right("fired")
        .right("held back")
        .left("last fired");
    for t in &page.triggers {
        table.row([
            t.id.to_string(),
            t.service.clone(),
            state(t),
            condition(&t.condition),
            t.fired.to_string(),
            t.held_back.to_string(),
            time_or_dash(t.last_fired_at.as_ref()),
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no triggers)\n");
    }
    out
}

fn summary(t: &Trigger) -> String {
    let hosts = t.hosts.as_ref().map_or_else(
        || "every host running it".to_owned(),
        |hosts| hosts.join(","),
    );
    let held = match (&t.held_back_since, &t.held_back_reason) {
        (Some(since), Some(reason)) => format!("since {} ({reason})", time(since)),
        _ => "no".into(),
    };
    format!(
        "trigger     {}\nservice     {}\nstate       {}\nwhen        {}\nprofile     {} s of {} at {} Hz (label trigger={})\nlimits      {} s apart per host, at most {} at once\nhosts       {}\nfired       {} (last {}), held back {}; held back now: {}\ncreated     {} by {}\nupdated     {} by {}\n",
        t.id,
        t.service,
        state(t),
        condition(&t.condition),
        t.duration_secs,
        t.event,
        t.frequency_hz,
        t.id,
        t.cooldown_secs,
        t.max_concurrent,
        hosts,
        t.fired,
        time_or_dash(t.last_fired_at.as_ref()),
        t.held_back,
        held,
        time(&t.created_at),
        t.created_by,
        time(&t.updated_at),
        t.updated_by,
    )
}

fn firings_table(page: &TriggerFiringsResponse) -> String {
    let mut table = Table::new()
        .left("fired")
        .left("host")
        .right("observed")
        .left("outcome")
        .left("profile");
    for f in &page.firings {
        table.row([
            time(&f.fired_at),
            f.host.clone(),
            format!("{:.1} {}", f.observed, f.unit),
            serde_json::to_value(f.outcome)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            f.profile_id
                .map_or_else(|| "-".to_owned(), |id| id.to_string()),
        ]);
    }
    if table.is_empty() {
        return "\n(no firings yet)\n".into();
    }
    format!("\n{}", table.render())
}

#[cfg(test)]
mod tests {
    use super::*;
    use odp_client::types::{FiringOutcome, TriggerFiring};

    fn trigger(held_back: Option<&str>) -> Trigger {
        Trigger {
            id: Uuid::from_u128(0x29),
            service: "checkout".into(),
            condition: TriggerCondition::CpuAbove {
                percent: 80,
                for_secs: 30,
            },
            duration_secs: 30,
            event: EventKind::CpuClock,
            frequency_hz: 99,
            cooldown_secs: 600,
            max_concurrent: 3,
            hosts: None,
            enabled: true,
            fired: 2,
            held_back: 5,
            last_fired_at: Some("2026-11-28T04:00:00Z".parse().unwrap()),
            held_back_since: held_back.map(|_| "2026-11-28T04:05:00Z".parse().unwrap()),
            held_back_reason: held_back.map(str::to_owned),
            created_by: "alice".into(),
            updated_by: "bob".into(),
            created_at: "2026-11-28T03:00:00Z".parse().unwrap(),
            updated_at: "2026-11-28T03:30:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn the_table_says_when_it_fires_and_whether_it_is_held_back() {
        let page = TriggersResponse {
            triggers: vec![trigger(None), trigger(Some("capped"))],
        };
        let out = table(&page);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(
            lines[1].contains("CPU above 80% of a core for 30 s"),
            "{out}"
        );
        assert!(lines[2].contains("held back (capped)"), "{out}");
        assert!(table(&TriggersResponse { triggers: vec![] }).contains("(no triggers)"));
    }

    #[test]
    fn the_summary_and_firings_name_the_label_and_outcomes() {
        let out = summary(&trigger(Some("cooldown")));
        assert!(
            out.contains("label trigger=00000000-0000-0000-0000-000000000029"),
            "{out}"
        );
        assert!(
            out.contains("since 2026-11-28T04:05:00Z (cooldown)"),
            "{out}"
        );
        let firings = TriggerFiringsResponse {
            firings: vec![TriggerFiring {
                id: Uuid::from_u128(1),
                host: "web-1".into(),
                observed: 97.25,
                unit: "% of a core".into(),
                held_since: "2026-11-28T04:00:00Z".parse().unwrap(),
                fired_at: "2026-11-28T04:00:31Z".parse().unwrap(),
                outcome: FiringOutcome::Capped,
                reason: None,
                profile_id: None,
            }],
        };
        let rendered = firings_table(&firings);
        assert!(
            rendered.contains("97.2 % of a core") && rendered.contains("capped"),
            "{rendered}"
        );
    }
}
