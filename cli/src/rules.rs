//! `odpctl rules`: the common-issue detection rules, and (admins) creating,
//! changing and disabling them. Every change is re-applied to past
//! profiles by the pipeline; `--wait` follows that until it finishes.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};
use odp_client::{ApiClient, Method};
use serde_json::{json, Value};

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
            let page = client.call(Method::GET, "/api/v1/rules", None, 200).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print_table(&page);
            }
        }
        RuleAction::Show { id } => {
            let rule = client.call(Method::GET, &path(&id)?, None, 200).await?;
            println!("{}", serde_json::to_string_pretty(&rule)?);
        }
        RuleAction::Create { file, wait } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let body: Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", file.display()))?;
            let rule = client
                .call(Method::POST, "/api/v1/rules", Some(&body), 201)
                .await?;
            println!("{}", rule["id"].as_str().unwrap_or("?"));
            follow(client, &rule, wait).await?;
        }
        RuleAction::Enable { id, wait } => {
            change(client, &id, json!({"enabled": true}), wait).await?
        }
        RuleAction::Disable { id, wait } => {
            change(client, &id, json!({"enabled": false}), wait).await?
        }
        RuleAction::Threshold {
            id,
            pct,
            service,
            wait,
        } => {
            let patch = match service {
                None => json!({ "threshold_pct": pct }),
                Some(service) => {
                    let rule = client.call(Method::GET, &path(&id)?, None, 200).await?;
                    let mut overrides = rule["service_thresholds"].clone();
                    if !overrides.is_object() {
                        overrides = json!({});
                    }
                    overrides[service] = json!(pct);
                    json!({ "service_thresholds": overrides })
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
        bail!("{id:?} is not a rule id");
    }
    Ok(format!("/api/v1/rules/{id}"))
}

async fn change(client: &ApiClient, id: &str, patch: Value, wait: bool) -> anyhow::Result<()> {
    let rule = client
        .call(Method::PATCH, &path(id)?, Some(&patch), 200)
        .await?;
    eprintln!(
        "rule {id}: enabled {}, threshold {}%",
        rule["enabled"], rule["threshold_pct"]
    );
    follow(client, &rule, wait).await
}

/// Reports the re-analysis the change queued; with `wait`, polls it until
/// it ends (a failed one is an error).
async fn follow(client: &ApiClient, rule: &Value, wait: bool) -> anyhow::Result<()> {
    let id = rule["id"].as_str().unwrap_or_default();
    eprintln!("re-analysis of past profiles queued");
    if !wait {
        return Ok(());
    }
    let reanalysis_path = format!("{}/reanalysis", path(id)?);
    loop {
        let job = client
            .call(Method::GET, &reanalysis_path, None, 200)
            .await?;
        let status = job["status"].as_str().unwrap_or("?");
        eprintln!(
            "re-analysis {status}: {}/{} profiles",
            job["profiles_done"],
            job["profiles_total"]
                .as_i64()
                .map_or("?".into(), |n| n.to_string())
        );
        match status {
            "finished" => return Ok(()),
            "failed" => bail!("re-analysis failed: {}", job["error"]),
            _ => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

fn print_table(page: &Value) {
    println!(
        "{:<28}  {:<16}  {:>9}  {:<7}  {:<6}  title",
        "id", "kind", "threshold", "enabled", "source"
    );
    for r in page["rules"].as_array().into_iter().flatten() {
        println!(
            "{:<28}  {:<16}  {:>8}%  {:<7}  {:<6}  {}",
            r["id"].as_str().unwrap_or("?"),
            r["kind"].as_str().unwrap_or("?"),
            r["threshold_pct"].as_f64().unwrap_or(0.0),
            r["enabled"].as_bool().unwrap_or(false),
            r["source"].as_str().unwrap_or("?"),
            r["title"].as_str().unwrap_or(""),
        );
    }
}
