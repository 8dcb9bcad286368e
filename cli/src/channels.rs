//! `odpctl channels`: the alert channels (webhooks, email) and the log of
//! what was delivered to each. Admin tokens only: channels name internal
//! systems and people.

use anyhow::bail;
use odp_client::{ApiClient, Method};
use serde_json::{json, Value};

/// What both kinds of channel take beside their own fields.
#[derive(Debug, clap::Args)]
pub(crate) struct CommonArgs {
    /// Unique name: letters, digits, `.`, `-`, `_`.
    #[arg(long)]
    name: String,
    /// Glob over the services whose alerts go here (`*`, `?`).
    #[arg(long, default_value = "*")]
    services: String,
    /// Create it disabled.
    #[arg(long)]
    disabled: bool,
}

impl CommonArgs {
    fn body(self, kind: &str) -> Value {
        json!({
            "kind": kind,
            "name": self.name,
            "service_pattern": self.services,
            "enabled": !self.disabled,
        })
    }
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ChannelAction {
    /// List the channels.
    List {
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one channel (JSON; a webhook's secret is never shown).
    Show { id: String },
    /// Create a webhook channel: alerts POSTed as JSON, signed with the
    /// secret (`X-ODP-Signature`); prints its id.
    CreateWebhook {
        #[command(flatten)]
        common: CommonArgs,
        /// http(s) URL.
        #[arg(long)]
        url: String,
        /// HMAC key, 16 characters or more.
        #[arg(long, env = "ODP_WEBHOOK_SECRET", hide_env_values = true)]
        secret: String,
    },
    /// Create an email channel: alerts mailed through an SMTP relay;
    /// prints its id.
    CreateEmail {
        #[command(flatten)]
        common: CommonArgs,
        /// The relay, smtp://host[:port].
        #[arg(long)]
        smtp_url: String,
        #[arg(long)]
        from: String,
        /// A recipient (repeatable, or comma-separated).
        #[arg(long, required = true, value_delimiter = ',')]
        to: Vec<String>,
    },
    /// Enable a channel.
    Enable { id: String },
    /// Disable a channel: no alert is queued for it until enabled again.
    Disable { id: String },
    /// Delete a channel with its delivery log and pending deliveries.
    Delete { id: String },
    /// A channel's deliveries, newest first, with each attempt's outcome.
    Deliveries {
        id: String,
        /// pending, delivered or failed.
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Deliveries older than this one (the previous page's last id).
        #[arg(long)]
        before: Option<String>,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(client: &ApiClient, action: ChannelAction) -> anyhow::Result<()> {
    match action {
        ChannelAction::List { json } => {
            let page = client
                .call(Method::GET, "/api/v1/channels", None, 200)
                .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print_channels(&page);
            }
        }
        ChannelAction::Show { id } => {
            let channel = client.call(Method::GET, &path(&id)?, None, 200).await?;
            println!("{}", serde_json::to_string_pretty(&channel)?);
        }
        ChannelAction::CreateWebhook {
            common,
            url,
            secret,
        } => {
            let mut body = common.body("webhook");
            body["url"] = json!(url);
            body["secret"] = json!(secret);
            create(client, &body).await?;
        }
        ChannelAction::CreateEmail {
            common,
            smtp_url,
            from,
            to,
        } => {
            let mut body = common.body("email");
            body["smtp_url"] = json!(smtp_url);
            body["from"] = json!(from);
            body["to"] = json!(to);
            create(client, &body).await?;
        }
        ChannelAction::Enable { id } => set_enabled(client, &id, true).await?,
        ChannelAction::Disable { id } => set_enabled(client, &id, false).await?,
        ChannelAction::Delete { id } => {
            client.call(Method::DELETE, &path(&id)?, None, 204).await?;
            eprintln!("deleted channel {id}");
        }
        ChannelAction::Deliveries {
            id,
            status,
            limit,
            before,
            json,
        } => {
            let mut query = vec![format!("limit={limit}")];
            if let Some(status) = status {
                if !matches!(status.as_str(), "pending" | "delivered" | "failed") {
                    bail!("--status is pending, delivered or failed");
                }
                query.push(format!("status={status}"));
            }
            if let Some(before) = before {
                check_id(&before)?;
                query.push(format!("before={before}"));
            }
            let url = format!("{}/deliveries?{}", path(&id)?, query.join("&"));
            let page = client.call(Method::GET, &url, None, 200).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print_deliveries(&page);
            }
        }
    }
    Ok(())
}

fn check_id(id: &str) -> anyhow::Result<()> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        bail!("{id:?} is not a channel or delivery id (a UUID)");
    }
    Ok(())
}

/// The channel's URL path; ids are UUIDs (hex digits and dashes).
fn path(id: &str) -> anyhow::Result<String> {
    check_id(id)?;
    Ok(format!("/api/v1/channels/{id}"))
}

async fn create(client: &ApiClient, body: &Value) -> anyhow::Result<()> {
    let created = client
        .call(Method::POST, "/api/v1/channels", Some(body), 201)
        .await?;
    println!("{}", created["id"].as_str().unwrap_or("?"));
    Ok(())
}

async fn set_enabled(client: &ApiClient, id: &str, enabled: bool) -> anyhow::Result<()> {
    let body = json!({ "enabled": enabled });
    let channel = client
        .call(Method::PATCH, &path(id)?, Some(&body), 200)
        .await?;
    eprintln!(
        "channel {} {}",
        channel["name"].as_str().unwrap_or(id),
        if enabled { "enabled" } else { "disabled" }
    );
    Ok(())
}

fn print_channels(page: &Value) {
    println!(
        "{:<36}  {:<20}  {:<7}  {:<7}  {:<16}  destination",
        "id", "name", "kind", "enabled", "services"
    );
    for c in page["channels"].as_array().into_iter().flatten() {
        let destination = match c["kind"].as_str() {
            Some("email") => format!(
                "{} via {}",
                c["to"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
                c["smtp_url"].as_str().unwrap_or("?")
            ),
            _ => c["url"].as_str().unwrap_or("?").to_owned(),
        };
        println!(
            "{:<36}  {:<20}  {:<7}  {:<7}  {:<16}  {destination}",
            c["id"].as_str().unwrap_or("?"),
            c["name"].as_str().unwrap_or("?"),
            c["kind"].as_str().unwrap_or("?"),
            c["enabled"].as_bool().unwrap_or(false),
            c["service_pattern"].as_str().unwrap_or("?"),
        );
    }
}

fn print_deliveries(page: &Value) {
    println!(
        "{:<36}  {:<9}  {:>8}  {:<24}  {:<20}  last attempt",
        "id", "status", "attempts", "rule", "service"
    );
    for d in page["deliveries"].as_array().into_iter().flatten() {
        let last = d["attempt_log"]
            .as_array()
            .and_then(|log| log.last())
            .map_or_else(
                || "-".to_owned(),
                |a| match (a["status_code"].as_i64(), a["error"].as_str()) {
                    (Some(code), Some(error)) => format!("{code}: {error}"),
                    (Some(code), None) => code.to_string(),
                    (None, Some(error)) => error.to_owned(),
                    (None, None) => "?".to_owned(),
                },
            );
        println!(
            "{:<36}  {:<9}  {:>8}  {:<24}  {:<20}  {last}",
            d["id"].as_str().unwrap_or("?"),
            d["status"].as_str().unwrap_or("?"),
            d["attempts"].as_i64().unwrap_or(0),
            d["rule_id"].as_str().unwrap_or("?"),
            d["service"].as_str().unwrap_or("?"),
        );
    }
    if let Some(next) = page["next_before"].as_str() {
        eprintln!("more: --before {next}");
    }
}
