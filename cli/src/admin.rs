//! Administration: minting API tokens, the hosts that run agents, and
//! taking an agent off a host.

use anyhow::bail;

use odp_client::types::{
    AgentView, ControlRequest, DeployResponse, HostsResponse, RequestList, RequestStatus,
    UndeployResponse,
};
use odp_client::ApiClient;
use odp_client::Method;
use odp_core::token::{mint_hs256, Grant, Role};

use crate::names::checked_name;
use crate::table::Table;
use crate::text::{time, yes_no};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum AdminCommand {
    /// API tokens (admin use: needs the api-server's HS256 secret).
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
    /// Hosts with a profiler agent, from their heartbeats.
    Hosts {
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Put a profiler agent on a host that has none, with the api-server's
    /// deployer (admin).
    Deploy {
        host: String,
        /// Wait until the host's agent heartbeats (or the deploy fails).
        #[arg(long)]
        wait: bool,
    },
    /// Control requests (deploy, undeploy, stop), newest first.
    Requests {
        #[arg(long, value_parser = ["deploy", "undeploy", "stop"])]
        kind: Option<String>,
        #[arg(long)]
        host: Option<String>,
        /// Only requests still under way.
        #[arg(long)]
        open: bool,
    },
    /// Take the profiler agent off a host (admin).
    Undeploy {
        host: String,
        /// `now` stops running profiles, flushes them and exits; `drain`
        /// refuses new profiles and exits when the running ones end.
        #[arg(long, default_value = "drain", value_parser = ["now", "drain"])]
        mode: String,
    },
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum TokenAction {
    /// Print a signed bearer token.
    Create {
        /// The api-server's HS256 secret.
        #[arg(long, env = "ODP_JWT_SECRET", hide_env_values = true)]
        jwt_secret: String,
        /// Who the token is for; recorded as who asked for each request.
        #[arg(long)]
        sub: String,
        /// ingest (only sends profiles of its services: docs/ingest.md),
        /// viewer (read), profiler (start/stop the services it may), admin.
        #[arg(long)]
        role: Role,
        /// Comma-separated glob patterns of the services a profiler token
        /// may profile, e.g. `checkout-*,search`.
        #[arg(long, value_delimiter = ',')]
        services: Vec<String>,
        /// Lifetime: seconds, or a number with s, m, h or d (`12h`).
        #[arg(long, default_value = "1h", value_parser = parse_ttl)]
        ttl: i64,
    },
}

pub(crate) async fn run(client: &ApiClient, command: AdminCommand) -> anyhow::Result<()> {
    match command {
        AdminCommand::Token {
            action:
                TokenAction::Create {
                    jwt_secret,
                    sub,
                    role,
                    services,
                    ttl,
                },
        } => {
            if jwt_secret.len() < 16 {
                bail!("--jwt-secret must be at least 16 bytes, as the api-server requires");
            }
            let grant = Grant {
                subject: sub,
                role,
                services,
            };
            let now = chrono::Utc::now().timestamp();
            println!("{}", mint_hs256(jwt_secret.as_bytes(), &grant, now, ttl)?);
        }
        AdminCommand::Hosts { json } => {
            let hosts: HostsResponse = client.get("/api/v1/hosts").await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&hosts)?);
            } else {
                print!("{}", hosts_table(&hosts));
            }
        }
        AdminCommand::Deploy { host, wait } => {
            let path = format!("/api/v1/hosts/{}/deploy", checked_name("host", &host)?);
            let reply = client.request(Method::POST, &path, None).await?;
            if !matches!(reply.status, 200 | 202) {
                return Err(odp_client::ClientError::Status {
                    path,
                    status: reply.status,
                    message: reply.body["error"]["message"]
                        .as_str()
                        .unwrap_or(&reply.text)
                        .to_owned(),
                }
                .into());
            }
            let deploy: DeployResponse = serde_json::from_value(reply.body)
                .map_err(|e| anyhow::anyhow!("{path}: unexpected reply ({e}): {}", reply.text))?;
            // One line: how the request stands now, or with `--wait` how
            // it ended (not both, which read as the result twice).
            let request = match wait {
                true => settle(client, &deploy.request).await?,
                false => deploy.request,
            };
            eprintln!("deploy to {host}: {}", describe(&request));
            if request.status == RequestStatus::Failed {
                bail!("deploy to {host} failed: {}", reason(&request));
            }
        }
        AdminCommand::Requests { kind, host, open } => {
            let mut query = vec!["limit=50".to_owned(), format!("open={open}")];
            if let Some(kind) = kind {
                query.push(format!("kind={kind}"));
            }
            if let Some(host) = host {
                query.push(format!("host={}", checked_name("host", &host)?));
            }
            let path = format!("/api/v1/requests?{}", query.join("&"));
            let page: RequestList = client.get(&path).await?;
            print!("{}", requests_table(&page));
        }
        AdminCommand::Undeploy { host, mode } => {
            let path = format!(
                "/api/v1/hosts/{}/undeploy?mode={mode}",
                checked_name("host", &host)?
            );
            let reply: UndeployResponse =
                client.send(Method::POST, &path, None::<&()>, 202).await?;
            eprintln!(
                "undeploy ({mode}) sent to {host}: command {}",
                reply
                    .command_id
                    .map_or_else(|| "?".to_owned(), |id| id.to_string())
            );
        }
    }
    Ok(())
}

fn reason(request: &ControlRequest) -> &str {
    request.status_reason.as_deref().unwrap_or("-")
}

fn describe(request: &ControlRequest) -> String {
    format!("{} ({})", request.status, reason(request))
}

/// Polls a request until it is finished or failed.
async fn settle(client: &ApiClient, request: &ControlRequest) -> anyhow::Result<ControlRequest> {
    let id = request.id;
    let path = format!("/api/v1/requests/{id}");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(600);
    loop {
        let request: ControlRequest = client.get(&path).await?;
        if matches!(
            request.status,
            RequestStatus::Finished | RequestStatus::Failed
        ) {
            return Ok(request);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("request {id} still {} after 10 minutes", request.status);
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// `requests`: one control request a row, newest first.
pub(crate) fn requests_table(page: &RequestList) -> String {
    let mut table = Table::new()
        .left("id")
        .left("kind")
        .left("host")
        .left("status")
        .left("created")
        .left("reason");
    for r in &page.requests {
        table.row([
            r.id.to_string(),
            r.kind.to_string(),
            r.host.clone(),
            r.status.to_string(),
            time(&r.created_at),
            reason(r).to_owned(),
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no requests)\n");
    }
    out
}

/// `hosts`: one agent a row.
pub(crate) fn hosts_table(hosts: &HostsResponse) -> String {
    let mut table = Table::new()
        .left("host")
        .left("live")
        .left("version")
        .left("plugins")
        .right("running")
        .left("last seen")
        .left("clock");
    for agent in &hosts.agents {
        table.row([
            agent.host.clone(),
            yes_no(agent.live).to_owned(),
            agent.version.clone(),
            agent.plugins.join(","),
            agent.running_profiles.len().to_string(),
            time(&agent.last_seen),
            clock(agent),
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no agents)\n");
    }
    out
}

/// A host's clock offset, and whether its times are corrected by it.
fn clock(agent: &AgentView) -> String {
    match agent.clock_offset_ms {
        None => "-".to_owned(),
        Some(ms) if agent.clock_corrected => {
            let side = if ms < 0 { "behind" } else { "ahead" };
            format!(
                "{:.1} s {side} (corrected)",
                ms.unsigned_abs() as f64 / 1000.0
            )
        }
        Some(_) => "in step".to_owned(),
    }
}

fn parse_ttl(text: &str) -> Result<i64, String> {
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let multiplier = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => return Err(format!("unknown unit {other:?}: use s, m, h or d")),
    };
    let seconds = number
        .parse::<i64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(|| format!("{text:?} is not a duration like 3600, 90m or 12h"))?;
    if !(1..=31_536_000).contains(&seconds) {
        return Err("the lifetime must be between 1 second and 365 days".into());
    }
    Ok(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_parse_with_units_and_bounds() {
        assert_eq!(parse_ttl("3600"), Ok(3600));
        assert_eq!(parse_ttl("90m"), Ok(5400));
        assert_eq!(parse_ttl("12h"), Ok(43_200));
        assert_eq!(parse_ttl("7d"), Ok(604_800));
        for bad in ["", "0", "h", "5w", "400d", "-5", "99999999999999999999d"] {
            assert!(parse_ttl(bad).is_err(), "{bad}");
        }
    }
}
