//! `odpctl channels`: the alert channels (webhooks, email) and the log of
//! what was delivered to each. Admin tokens only: channels name internal
//! systems and people.

use odp_client::types::{
    Channel, ChannelKind, ChannelList, CreateChannelRequest, CreateEmailRequest,
    CreateWebhookRequest, DeliveriesPage, EmailKind, UpdateChannelRequest, WebhookKind,
};
use odp_client::{ApiClient, Method};

use crate::exit::usage;
use crate::names::parse_id;
use crate::table::Table;
use crate::text::{count_of, fields, time, yes_no};

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

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ChannelAction {
    /// List the channels.
    List {
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one channel (a webhook's secret is never shown).
    Show {
        id: String,
        /// Print the API's JSON instead of a summary.
        #[arg(long)]
        json: bool,
    },
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
        /// The relay, `smtp://host[:port]`.
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
            let page: ChannelList = client.get("/api/v1/channels").await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print!("{}", channels_table(&page));
            }
        }
        ChannelAction::Show { id, json } => {
            let channel: Channel = client.get(&path(&id)?).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&channel)?);
            } else {
                print!("{}", channel_summary(&channel));
            }
        }
        ChannelAction::CreateWebhook {
            common,
            url,
            secret,
        } => {
            let body = CreateChannelRequest::Webhook(CreateWebhookRequest {
                kind: WebhookKind::Webhook,
                name: common.name,
                url,
                secret,
                service_pattern: common.services,
                enabled: !common.disabled,
            });
            create(client, &body).await?;
        }
        ChannelAction::CreateEmail {
            common,
            smtp_url,
            from,
            to,
        } => {
            let body = CreateChannelRequest::Email(CreateEmailRequest {
                kind: EmailKind::Email,
                name: common.name,
                smtp_url,
                from,
                to,
                service_pattern: common.services,
                enabled: !common.disabled,
            });
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
                    return Err(usage("--status is pending, delivered or failed"));
                }
                query.push(format!("status={status}"));
            }
            if let Some(before) = before {
                query.push(format!("before={}", parse_id("delivery", &before)?));
            }
            let url = format!("{}/deliveries?{}", path(&id)?, query.join("&"));
            let page: DeliveriesPage = client.get(&url).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print!("{}", deliveries_table(&page));
                if let Some(next) = page.next_before {
                    eprintln!("more: --before {next}");
                }
            }
        }
    }
    Ok(())
}

/// The channel's URL path; ids are UUIDs.
fn path(id: &str) -> anyhow::Result<String> {
    Ok(format!("/api/v1/channels/{}", parse_id("channel", id)?))
}

async fn create(client: &ApiClient, body: &CreateChannelRequest) -> anyhow::Result<()> {
    let created: Channel = client
        .send(Method::POST, "/api/v1/channels", Some(body), 201)
        .await?;
    println!("{}", created.id);
    Ok(())
}

async fn set_enabled(client: &ApiClient, id: &str, enabled: bool) -> anyhow::Result<()> {
    let body = UpdateChannelRequest {
        enabled: Some(enabled),
        ..UpdateChannelRequest::default()
    };
    let channel: Channel = client
        .send(Method::PATCH, &path(id)?, Some(&body), 200)
        .await?;
    eprintln!(
        "channel {} {}",
        channel.name,
        if enabled { "enabled" } else { "disabled" }
    );
    Ok(())
}

/// Where a channel sends its alerts.
fn destination(c: &Channel) -> String {
    match c.kind {
        ChannelKind::Email => format!(
            "{} via {}",
            c.to.join(","),
            c.smtp_url.as_deref().unwrap_or("?")
        ),
        ChannelKind::Webhook => c.url.clone().unwrap_or_else(|| "?".into()),
    }
}

/// `channels list`: one channel a row.
pub(crate) fn channels_table(page: &ChannelList) -> String {
    let mut table = Table::new()
        .left("id")
        .left("name")
        .left("kind")
        .left("enabled")
        .left("services")
        .left("destination");
    for c in &page.channels {
        table.row([
            c.id.to_string(),
            c.name.clone(),
            c.kind.as_str().to_owned(),
            yes_no(c.enabled).to_owned(),
            c.service_pattern.clone(),
            destination(c),
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no channels)\n");
    }
    out
}

/// `channels show`: the channel's fields, one per line.
pub(crate) fn channel_summary(c: &Channel) -> String {
    let mut lines: Vec<(&str, String)> = vec![
        ("id", c.id.to_string()),
        ("name", c.name.clone()),
        ("kind", c.kind.as_str().to_owned()),
    ];
    match c.kind {
        ChannelKind::Webhook => {
            lines.push(("url", c.url.clone().unwrap_or_else(|| "-".into())));
            lines.push(("signed", "X-ODP-Signature (secret not shown)".to_owned()));
        }
        ChannelKind::Email => {
            lines.push(("relay", c.smtp_url.clone().unwrap_or_else(|| "-".into())));
            lines.push(("from", c.from.clone().unwrap_or_else(|| "-".into())));
            lines.push((
                "to",
                format!(
                    "{} ({})",
                    c.to.join(", "),
                    count_of(c.to.len(), "recipient")
                ),
            ));
        }
    }
    lines.push(("services", c.service_pattern.clone()));
    lines.push(("enabled", yes_no(c.enabled).to_owned()));
    lines.push(("created", time(&c.created_at)));
    fields(&lines)
}

/// `channels deliveries`: one delivery a row, with its last attempt.
pub(crate) fn deliveries_table(page: &DeliveriesPage) -> String {
    let mut table = Table::new()
        .left("id")
        .left("status")
        .right("attempts")
        .left("rule")
        .left("service")
        .left("last attempt");
    for d in &page.deliveries {
        let last = d.attempt_log.last().map_or_else(
            || "-".to_owned(),
            |a| match (a.status_code, a.error.as_deref()) {
                (Some(code), Some(error)) => format!("{code}: {error}"),
                (Some(code), None) => code.to_string(),
                (None, Some(error)) => error.to_owned(),
                (None, None) => "?".to_owned(),
            },
        );
        table.row([
            d.id.to_string(),
            d.status.to_string(),
            d.attempts.to_string(),
            d.rule_id.clone(),
            d.service.clone(),
            last,
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no deliveries)\n");
    }
    out
}
