//! `odpctl agents`: agent identities (admin). An agent signs all it
//! publishes with a key of its own, certified for its host by the
//! api-server; `enroll` makes the key here and sends only its public half,
//! so the private key never leaves this machine.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use odp_client::types::{AgentIdentityList, IssueAgentIdentityRequest, IssuedAgentIdentity};
use odp_client::ApiClient;
use odp_core::command::public_pem_of;
use odp_core::identity::{AgentIdentity, AgentKey, CERTIFICATE_FILE, KEY_FILE};

use crate::exit::usage;
use crate::names::{checked_name, parse_id};
use crate::table::Table;
use crate::text::{fields, time};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum AgentAction {
    /// Give an agent of HOST an identity: make its key here, have the
    /// api-server certify the public half, and write both into DIR, where
    /// the agent's `--identity-dir` (ODP_AGENT_IDENTITY_DIR) reads them.
    Enroll {
        host: String,
        /// Where to write `agent-key.pem` (mode 0600) and
        /// `agent-certificate.jwt`; an identity already there is kept.
        #[arg(long, value_name = "DIR", default_value = "./odp-agent-identity")]
        out: PathBuf,
        /// How long the certificate is valid (default 365 days).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..=3650))]
        days: Option<i64>,
    },
    /// Issued agent identities, newest first, revoked and expired ones too.
    Identities {
        #[arg(long)]
        host: Option<String>,
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=500))]
        limit: u32,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Revoke an agent identity: the pipeline and the api-server refuse
    /// what it signs within about 30 seconds.
    Revoke { id: String },
    /// One-time enrollment tokens: an agent started with one makes its own
    /// key and enrolls itself.
    Token {
        #[command(subcommand)]
        action: crate::enrollment::TokenAction,
    },
    /// Enrollment tokens, newest first: state, uses, what each enrolled.
    Tokens {
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=500))]
        limit: u32,
        /// Print the API's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(client: &ApiClient, action: AgentAction) -> anyhow::Result<()> {
    match action {
        AgentAction::Enroll { host, out, days } => {
            let host = checked_name("host", &host)?.to_owned();
            enroll(client, host, &out, days).await?;
        }
        AgentAction::Identities { host, limit, json } => {
            let host = host
                .as_deref()
                .map(|h| checked_name("host", h))
                .transpose()?;
            let list = client.agent_identities(host, limit).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                print!("{}", identities_table(&list, Utc::now()));
            }
        }
        AgentAction::Revoke { id } => {
            let id = parse_id("agent identity", &id)?;
            let revoked = client.revoke_agent_identity(id).await?;
            eprintln!("revoked agent identity {id} of host {}", revoked.host);
        }
        AgentAction::Token { action } => crate::enrollment::run(client, action).await?,
        AgentAction::Tokens { limit, json } => crate::enrollment::list(client, limit, json).await?,
    }
    Ok(())
}

/// Makes the key, has its public half certified and writes both into
/// `dir`; refuses a `dir` that already holds a key, which may be a running
/// agent's.
async fn enroll(
    client: &ApiClient,
    host: String,
    dir: &Path,
    days: Option<i64>,
) -> anyhow::Result<()> {
    let key_path = dir.join(KEY_FILE);
    if key_path.exists() {
        return Err(usage(format!(
            "{} exists: remove it to enroll again, or give another --out",
            key_path.display()
        )));
    }
    let key = AgentKey::generate()?;
    let request = IssueAgentIdentityRequest {
        host,
        // As an SPKI PEM, which the API takes as it takes raw base64url.
        public_key: Some(public_pem_of(&key.to_pem())?),
        valid_days: days,
    };
    let issued = client.issue_agent_identity(&request).await?;
    AgentIdentity::save(&key, &issued.certificate, dir)?;
    print!("{}", enroll_summary(&issued, dir));
    Ok(())
}

/// `agents enroll`: what was issued and where it is.
pub(crate) fn enroll_summary(issued: &IssuedAgentIdentity, dir: &Path) -> String {
    let mut out = fields(&[
        ("identity", issued.id.to_string()),
        ("host", issued.host.clone()),
        ("expires", time(&issued.expires_at)),
        (
            "key",
            format!("{} (mode 0600)", dir.join(KEY_FILE).display()),
        ),
        (
            "certificate",
            dir.join(CERTIFICATE_FILE).display().to_string(),
        ),
    ]);
    out.push_str(&format!(
        "start the agent with --identity-dir {} (or ODP_AGENT_IDENTITY_DIR)\n",
        dir.display()
    ));
    out
}

/// Whether an identity is in use, as of `now`.
fn state(revoked: bool, expires_at: &DateTime<Utc>, now: DateTime<Utc>) -> &'static str {
    match (revoked, *expires_at <= now) {
        (true, _) => "revoked",
        (false, true) => "expired",
        (false, false) => "valid",
    }
}

/// `agents identities`: one identity a row.
pub(crate) fn identities_table(list: &AgentIdentityList, now: DateTime<Utc>) -> String {
    let mut table = Table::new()
        .left("id")
        .left("host")
        .left("state")
        .left("issued")
        .left("expires")
        .left("issued by")
        .left("revoked");
    for i in &list.identities {
        let revoked = match (&i.revoked_at, &i.revoked_by) {
            (Some(at), Some(by)) => format!("{} by {by}", time(at)),
            (Some(at), None) => time(at),
            (None, _) => "-".to_owned(),
        };
        table.row([
            i.id.to_string(),
            i.host.clone(),
            state(i.revoked_at.is_some(), &i.expires_at, now).to_owned(),
            time(&i.issued_at),
            time(&i.expires_at),
            i.issued_by.clone(),
            revoked,
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no agent identities)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::commands::Cli;

    fn parses(args: &[&str]) -> bool {
        Cli::try_parse_from(["odpctl", "agents"].iter().chain(args)).is_ok()
    }

    #[test]
    fn enroll_takes_a_host_a_directory_and_days_in_range() {
        assert!(parses(&["enroll", "web-1"]));
        assert!(parses(&[
            "enroll", "web-1", "--out", "/tmp/id", "--days", "3650"
        ]));
        assert!(!parses(&["enroll"]));
        assert!(!parses(&["enroll", "web-1", "--days", "0"]));
        assert!(!parses(&["enroll", "web-1", "--days", "3651"]));
        assert!(parses(&["identities", "--host", "web-1", "--json"]));
        assert!(parses(&["revoke", "5b0f5c2e-8d1a-4c3e-9a57-1f2d3c4b5a69"]));
    }

    #[test]
    fn token_create_takes_a_host_a_span_and_uses_in_range() {
        assert!(parses(&["token", "create", "web-1"]));
        assert!(parses(&[
            "token",
            "create",
            "web-1",
            "--expires",
            "2d",
            "--uses",
            "1000"
        ]));
        assert!(!parses(&["token", "create"]));
        assert!(!parses(&["token", "create", "web-1", "--expires", "soon"]));
        assert!(!parses(&["token", "create", "web-1", "--uses", "0"]));
        assert!(!parses(&["token", "create", "web-1", "--uses", "1001"]));
        assert!(parses(&[
            "token",
            "revoke",
            "5b0f5c2e-8d1a-4c3e-9a57-1f2d3c4b5a69"
        ]));
        assert!(parses(&["tokens", "--limit", "5", "--json"]));
        assert!(!parses(&["tokens", "--limit", "0"]));
    }

    #[tokio::test]
    async fn enroll_keeps_an_identity_already_there() {
        let dir = std::env::temp_dir().join(format!("odpctl-enroll-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(KEY_FILE), "a running agent's key").unwrap();
        // Refused before any request: nothing listens there.
        let client = ApiClient::new("http://127.0.0.1:9", "");
        let error = enroll(&client, "web-1".into(), &dir, None)
            .await
            .unwrap_err();
        assert_eq!(crate::exit::exit_code(&error), 2, "{error}");
        let kept = std::fs::read_to_string(dir.join(KEY_FILE)).unwrap();
        assert_eq!(kept, "a running agent's key");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
