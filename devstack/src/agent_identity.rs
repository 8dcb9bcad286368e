//! Agent identities for the agents the dev stack starts itself, issued as
//! the api-server's deployer issues them ([`odp_core::identity`]): a new
//! key, a certificate signed with the stack's command key, recorded in the
//! store so `odpctl agents identities` lists it and it can be revoked.

use std::path::Path;

use chrono::{TimeZone, Utc};
use odp_core::command::{public_pem_of, CommandSigner};
use odp_core::identity::{
    issue_certificate, AgentIdentity, AgentKey, MessageVerifier, DEFAULT_CERTIFICATE_DAYS,
};
use odp_store::NewIdentity;

use crate::error::{DevError, Result};

/// An agent key and its certificate, just issued.
pub struct IssuedIdentity {
    pub identity: AgentIdentity,
    /// What the store keeps of it ([`record_identity`]).
    pub record: NewIdentity,
    key_pem: String,
    token: String,
}

impl IssuedIdentity {
    /// Writes the key and certificate where an agent's `--identity-dir`
    /// reads them.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let key = AgentKey::from_pem(&self.key_pem).map_err(invalid)?;
        AgentIdentity::save(&key, &self.token, dir).map_err(invalid)
    }

    /// The key PEM and certificate, as `ODP_AGENT_KEY` and
    /// `ODP_AGENT_CERTIFICATE` give them to an agent.
    pub fn env(&self) -> [(&'static str, &str); 2] {
        [
            ("ODP_AGENT_KEY", self.key_pem.as_str()),
            ("ODP_AGENT_CERTIFICATE", self.token.as_str()),
        ]
    }
}

fn invalid(e: impl std::fmt::Display) -> DevError {
    DevError::Invalid(format!("agent identity: {e}"))
}

/// Issues an identity for `host` with the command signing key at
/// `signing_key` (PKCS#8 PEM).
pub fn issue_identity(signing_key: &Path, host: &str, issued_by: &str) -> Result<IssuedIdentity> {
    let pem = std::fs::read_to_string(signing_key)
        .map_err(|e| invalid(format!("reading {}: {e}", signing_key.display())))?;
    let signer = CommandSigner::from_private_pem(&pem).map_err(invalid)?;
    let verifier = MessageVerifier::from_public_pem(&public_pem_of(&pem).map_err(invalid)?)
        .map_err(invalid)?;
    issue_with(&signer, &verifier, host, issued_by)
}

/// Issues an identity for `host` with `signer`, checked by `verifier` (the
/// signer's public half), valid from now for
/// [`DEFAULT_CERTIFICATE_DAYS`].
pub fn issue_with(
    signer: &CommandSigner,
    verifier: &MessageVerifier,
    host: &str,
    issued_by: &str,
) -> Result<IssuedIdentity> {
    let key = AgentKey::generate().map_err(invalid)?;
    let now = odp_plumbing::signed::unix_now();
    let expires = now + DEFAULT_CERTIFICATE_DAYS * 86_400;
    let (id, token) =
        issue_certificate(signer, host, &key.public_key(), now, expires).map_err(invalid)?;
    let key_pem = key.to_pem();
    let public_key = odp_core::identity::encode_public_key(&key.public_key());
    let identity = AgentIdentity::new(key, &token, verifier, host, now).map_err(invalid)?;
    let time = |s: i64| Utc.timestamp_opt(s, 0).single().unwrap_or_else(Utc::now);
    Ok(IssuedIdentity {
        identity,
        record: NewIdentity {
            id,
            host: host.to_owned(),
            public_key,
            issued_at: time(now),
            expires_at: time(expires),
            issued_by: issued_by.to_owned(),
        },
        key_pem,
        token,
    })
}

/// Records an issued identity in the stack's database (migrated by the
/// api-server, so call this once it answers).
pub async fn record_identity(database_url: &str, record: &NewIdentity) -> Result<()> {
    let db = odp_store::Database::connect_with(database_url, &odp_store::PoolConfig::default())
        .await
        .map_err(|e| invalid(format!("connecting to the store: {e}")))?;
    odp_store::Identities::new(db)
        .record(record)
        .await
        .map_err(|e| invalid(format!("recording it: {e}")))?;
    Ok(())
}
