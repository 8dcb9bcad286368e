//! `odpctl rules`: the common-issue detection rules, and (admins) creating,
//! changing and disabling them. Every change is re-applied to past
//! profiles by the pipeline; `--wait` follows that until it finishes.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::exit::usage;
use crate::table::Table;
use crate::text::yes_no;
use odp_client::types::{
    Reanalysis, ReanalysisStatus, RuleBody, RulePatch, RuleView, RulesResponse,
};
use odp_client::{ApiClient, Method};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum RuleAction {
    /// List the rules.
    List {
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one rule and its latest re-analysis (JSON).
    Show { id: String },
    /// Create a rule from a JSON file (admin): the fields of
    /// rules/seed.json's entries.
    Create {
        file: PathBuf,
        #[arg(long)]
        wait: bool,
    },
    /// Enable a rule (admin).
    Enable {
        id: String,
        #[arg(long)]
        wait: bool,
    },
    /// Disable a rule (admin); its past detections are cleared.
    Disable {
        id: String,
        #[arg(long)]
        wait: bool,
    },
    /// Set a rule's threshold, for all services or one (admin).
    Threshold {
        id: String,
        /// Percentage (points for a regression rule).
        pct: f64,
        /// Only for this service.
        #[arg(long)]
        service: Option<String>,
        #[arg(long)]
        wait: bool,
    },
}

pub(crate) async fn run(client: &ApiClient, action: RuleAction) -> anyhow::Result<()> {
    match action {
        RuleAction::List { json } => {
            let page: RulesResponse = client.get("/api/v1/rules").await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print!("{}", rules_table(&page));
            }
        }
        RuleAction::Show { id } => {
            let rule: RuleView = client.get(&path(&id)?).await?;
            println!("{}", serde_json::to_string_pretty(&rule)?);
        }
        RuleAction::Create { file, wait } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let body: RuleBody = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a rule", file.display()))?;
            let rule: RuleView = client
                .send(Method::POST, "/api/v1/rules", Some(&body), 201)
                .await?;
            println!("{}", rule.rule.id);
            follow(client, &rule.rule.id, wait).await?;
        }
        RuleAction::Enable { id, wait } => {
            let patch = RulePatch {
                enabled: Some(true),
                ..RulePatch::default()
            };
            change(client, &id, patch, wait).await?
        }
        RuleAction::Disable { id, wait } => {
            let patch = RulePatch {
                enabled: Some(false),
                ..RulePatch::default()
            };
            change(client, &id, patch, wait).await?
        }
        RuleAction::Threshold {
            id,
            pct,
            service,
            wait,
        } => {
            let patch = match service {
                None => RulePatch {
                    threshold_pct: Some(pct),
                    ..RulePatch::default()
                },
                Some(service) => {
                    let rule: RuleView = client.get(&path(&id)?).await?;
                    let mut overrides = rule.rule.service_thresholds;
                    overrides.insert(service, pct);
                    RulePatch {
                        service_thresholds: Some(overrides),
                        ..RulePatch::default()
                    }
                }
            };
            change(client, &id, patch, wait).await?
        }
    }
    Ok(())
}

/// The rule's URL path; ids are lower-case letters, digits, `.`, `-`, `_`.
fn path(id: &str) -> anyhow::Result<String> {
    let valid = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '_'));
    if !valid {
        return Err(usage(format!(
            "{id:?} is not a rule id (lower-case letters, digits, `.`, `-`, `_`)"
        )));
    }
    Ok(format!("/api/v1/rules/{id}"))
}

async fn change(client: &ApiClient, id: &str, patch: RulePatch, wait: bool) -> anyhow::Result<()> {
    let rule: RuleView = client
        .send(Method::PATCH, &path(id)?, Some(&patch), 200)
        .await?;
    eprintln!(
        "rule {id}: enabled {}, threshold {}%",
        rule.rule.enabled, rule.rule.threshold_pct
    );
    follow(client, id, wait).await
}

/// Reports the re-analysis the change queued; with `wait`, polls it until
/// it ends (a failed one is an error).
async fn follow(client: &ApiClient, id: &str, wait: bool) -> anyhow::Result<()> {
    eprintln!("re-analysis of past profiles queued");
    if !wait {
        return Ok(());
    }
    let reanalysis_path = format!("{}/reanalysis", path(id)?);
    loop {
        let job: Reanalysis = client.get(&reanalysis_path).await?;
        eprintln!(
            "re-analysis {}: {}/{} profiles",
            job.status,
            job.profiles_done,
            job.profiles_total.map_or("?".into(), |n| n.to_string())
        );
        match job.status {
            ReanalysisStatus::Finished => return Ok(()),
            ReanalysisStatus::Failed => bail!(
                "re-analysis failed: {}",
                job.error.as_deref().unwrap_or("no reason given")
            ),
            _ => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// `rules list`: one rule a row.
pub(crate) fn rules_table(page: &RulesResponse) -> String {
    let mut table = Table::new()
        .left("id")
        .left("kind")
        .right("threshold")
        .left("enabled")
        .left("source")
        .left("title");
    for r in &page.rules {
        table.row([
            r.id.clone(),
            r.kind.clone(),
            format!("{}%", r.threshold_pct),
            yes_no(r.enabled).to_owned(),
            r.source.clone(),
            r.title.clone(),
        ]);
    }
    table.render()
}
