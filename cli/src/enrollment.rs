//! `odpctl agents token …` and `agents tokens`: one-time enrollment
//! tokens (admin). An agent started with one (`--enrollment-token`, or
//! `ODP_ENROLLMENT_TOKEN`) makes its own key pair and enrolls itself, so
//! neither the key nor a long-lived credential is ever copied to its host.

use odp_client::types::{
    CreateEnrollmentTokenRequest, CreatedEnrollmentToken, EnrollmentToken, EnrollmentTokenList,
    EnrollmentTokenState,
};
use odp_client::ApiClient;

use crate::names::{checked_name, parse_id};
use crate::table::Table;
use crate::text::{fields, time};
use crate::when::parse_span;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum TokenAction {
    /// Create a token that lets an agent of HOST enroll itself; its secret
    /// is printed this once (the API keeps only its SHA-256).
    Create {
        host: String,
        /// How long it stays usable: 1m to 7d (`30m`, `1h`, `2d`).
        #[arg(long, default_value = "1h", value_parser = parse_span)]
        expires: chrono::Duration,
        /// How many agents may enroll with it.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..=1000))]
        uses: i32,
    },
    /// Revoke a token: no agent enrolls with it from then on (the
    /// identities it enrolled stay valid; `agents revoke` revokes those).
    Revoke { id: String },
}

/// `agents token …`.
pub(crate) async fn run(client: &ApiClient, action: TokenAction) -> anyhow::Result<()> {
    match action {
        TokenAction::Create {
            host,
            expires,
            uses,
        } => {
            let request = CreateEnrollmentTokenRequest {
                host: checked_name("host", &host)?.to_owned(),
                expires_in_secs: Some(expires.num_seconds()),
                uses: Some(uses),
            };
            let created = client.create_enrollment_token(&request).await?;
            print!("{}", created_summary(&created, client.base_url()));
        }
        TokenAction::Revoke { id } => {
            let id = parse_id("enrollment token", &id)?;
            let revoked = client.revoke_enrollment_token(id).await?;
            eprintln!("revoked enrollment token {id} of host {}", revoked.host);
        }
    }
    Ok(())
}

/// `agents tokens`.
pub(crate) async fn list(client: &ApiClient, limit: u32, json: bool) -> anyhow::Result<()> {
    let list = client.enrollment_tokens(limit).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        print!("{}", tokens_table(&list));
    }
    Ok(())
}

/// `agents token create`: the secret, and how to start the agent with it.
pub(crate) fn created_summary(created: &CreatedEnrollmentToken, api_url: &str) -> String {
    let token = &created.token;
    let mut out = fields(&[
        ("token", created.secret.clone()),
        ("id", token.id.to_string()),
        ("host", token.host.clone()),
        ("uses", token.uses.to_string()),
        ("expires", time(&token.expires_at)),
    ]);
    out.push_str(&format!(
        "the token is shown only now; start the agent of {host} with\n  \
         ODP_ENROLLMENT_TOKEN=<token> odp-profiler-service --host-id {host} --api-url {api_url} \
         [--cacert CA.pem] ...\n\
         it makes its key pair and enrolls itself into its --identity-dir\n",
        host = token.host,
    ));
    out
}

fn state_word(state: EnrollmentTokenState) -> &'static str {
    match state {
        EnrollmentTokenState::Unused => "unused",
        EnrollmentTokenState::Used => "used",
        EnrollmentTokenState::Expired => "expired",
        EnrollmentTokenState::Revoked => "revoked",
    }
}

/// What a token enrolled: the identity, or how many.
fn enrolled(token: &EnrollmentToken) -> String {
    match token.identities.as_slice() {
        [] => "-".to_owned(),
        [one] => one.to_string(),
        many => format!("{} identities", many.len()),
    }
}

/// `agents tokens`: one token a row, in the state the API gives it.
pub(crate) fn tokens_table(list: &EnrollmentTokenList) -> String {
    let mut table = Table::new()
        .left("id")
        .left("host")
        .left("state")
        .right("used")
        .left("expires")
        .left("created by")
        .left("enrolled");
    for t in &list.tokens {
        table.row([
            t.id.to_string(),
            t.host.clone(),
            state_word(t.state).to_owned(),
            format!("{}/{}", t.used, t.uses),
            time(&t.expires_at),
            t.created_by.clone(),
            enrolled(t),
        ]);
    }
    let mut out = table.render();
    if table.is_empty() {
        out.push_str("(no enrollment tokens)\n");
    }
    out
}
