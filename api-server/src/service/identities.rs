//! Agent identities: certificates that bind an agent's Ed25519 key to its
//! host ([`odp_core::identity`]), signed with the command key, so the
//! pipeline, peers and this server can believe what an agent publishes.
//! Admins issue them (`POST /api/v1/agents/identities`), the deployers
//! issue one to each agent they start, and both record them in the store,
//! where they are listed and revoked.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use odp_api_types::{
    AgentIdentityList, AgentIdentityRecord, IssueAgentIdentityRequest, IssuedAgentIdentity,
};
use odp_core::command::{public_pem_of, CommandError, CommandSigner};
use odp_core::identity::{
    issue_certificate, parse_public_key, AgentKey, MessageVerifier, DEFAULT_CERTIFICATE_DAYS,
};
use odp_store::{Database, Identities, IdentityRow, NewIdentity};
use uuid::Uuid;

use crate::control::deploy::{AgentCredentials, IssueFuture, IssueIdentity, WithdrawFuture};
use crate::service::page_limit;
use crate::service_error::ServiceError;
use crate::validate::validate_name;

/// The longest a certificate may be valid: ten years.
pub(crate) const MAX_VALID_DAYS: i64 = 3650;
/// Longest public key text accepted (an SPKI PEM is about 113 bytes).
const MAX_PUBLIC_KEY_CHARS: usize = 1000;

/// Issues certificates with the command key and records them.
pub struct IdentityIssuer {
    signer: CommandSigner,
    /// The command key's public half, which verifies what is issued.
    public_pem: String,
    identities: Identities,
}

impl IdentityIssuer {
    /// From the command signing key's PKCS#8 PEM.
    pub fn new(signing_pem: &str, db: &Database) -> Result<Self, CommandError> {
        Ok(IdentityIssuer {
            signer: CommandSigner::from_private_pem(signing_pem)?,
            public_pem: public_pem_of(signing_pem)?,
            identities: Identities::new(db.clone()),
        })
    }

    /// A verifier of the certificates this issues and of the messages
    /// their keys sign.
    pub fn verifier(&self) -> MessageVerifier {
        MessageVerifier::from_public_pem(&self.public_pem)
            .expect("the public half of a signing key that parsed is a key")
    }

    /// Certifies `public_key` as an agent of `host` for `valid_days` from
    /// now and records it. Returns the record and the certificate.
    pub(crate) async fn issue(
        &self,
        host: &str,
        public_key: &[u8; 32],
        valid_days: i64,
        issued_by: &str,
    ) -> Result<(IdentityRow, String), ServiceError> {
        let (new, certificate) = self.certify(host, public_key, valid_days, issued_by)?;
        let row = self.identities.record(&new).await?;
        Ok((row, certificate))
    }

    /// Certifies `public_key` as an agent of `host` for `valid_days` from
    /// now, recording nothing: the identity to record and the certificate.
    pub(crate) fn certify(
        &self,
        host: &str,
        public_key: &[u8; 32],
        valid_days: i64,
        issued_by: &str,
    ) -> Result<(NewIdentity, String), ServiceError> {
        // Whole seconds, so the record's times are the certificate's.
        let issued_at = Utc::now().timestamp();
        let expires_at = issued_at + valid_days * 86_400;
        let (id, certificate) =
            issue_certificate(&self.signer, host, public_key, issued_at, expires_at)
                .map_err(|e| ServiceError::Internal(format!("issuing a certificate: {e}")))?;
        let new = NewIdentity {
            id,
            host: host.to_owned(),
            public_key: URL_SAFE_NO_PAD.encode(public_key),
            issued_at: time(issued_at),
            expires_at: time(expires_at),
            issued_by: issued_by.to_owned(),
        };
        Ok((new, certificate))
    }
}

fn time(unix_s: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(unix_s, 0).expect("within chrono's range: at most ten years ahead")
}

/// Deployers give each agent they start a key of its own, made here and
/// handed to the agent only (the store keeps the public half).
impl IssueIdentity for IdentityIssuer {
    fn issue_new<'a>(&'a self, host: &'a str, issued_by: &'a str) -> IssueFuture<'a> {
        Box::pin(async move {
            let key = AgentKey::generate().map_err(|e| e.to_string())?;
            let (row, certificate) = self
                .issue(host, &key.public_key(), DEFAULT_CERTIFICATE_DAYS, issued_by)
                .await
                .map_err(|e| format!("issuing the agent's identity: {e}"))?;
            tracing::info!(identity = %row.issued.id, host, by = issued_by, "agent identity issued");
            Ok(AgentCredentials {
                id: row.issued.id,
                key_pem: key.to_pem(),
                certificate,
            })
        })
    }

    fn withdraw<'a>(&'a self, id: Uuid, why: &'a str) -> WithdrawFuture<'a> {
        Box::pin(async move {
            match self.identities.revoke(id, why).await {
                Ok(_) => tracing::info!(identity = %id, why, "agent identity withdrawn"),
                Err(e) => tracing::warn!(identity = %id, error = %e,
                    "could not withdraw an unused agent identity; revoke it by hand"),
            }
        })
    }
}

/// What an issue request asks for, checked.
#[derive(Debug)]
struct Checked {
    host: String,
    /// The agent's key, when it sent its public half.
    public_key: Option<[u8; 32]>,
    valid_days: i64,
}

fn check(request: IssueAgentIdentityRequest) -> Result<Checked, ServiceError> {
    validate_name("host", &request.host)?;
    let valid_days = request.valid_days.unwrap_or(DEFAULT_CERTIFICATE_DAYS);
    if !(1..=MAX_VALID_DAYS).contains(&valid_days) {
        return Err(ServiceError::Invalid(format!(
            "`valid_days` must be between 1 and {MAX_VALID_DAYS}"
        )));
    }
    let public_key = request.public_key.as_deref().map(public_key).transpose()?;
    Ok(Checked {
        host: request.host,
        public_key,
        valid_days,
    })
}

/// An agent's public key as a request gives it: base64url of its 32
/// bytes, or an SPKI PEM.
pub(crate) fn public_key(text: &str) -> Result<[u8; 32], ServiceError> {
    if text.chars().count() > MAX_PUBLIC_KEY_CHARS {
        return Err(ServiceError::Invalid(format!(
            "`public_key` must be at most {MAX_PUBLIC_KEY_CHARS} characters"
        )));
    }
    parse_public_key(text).map_err(|e| {
        ServiceError::Invalid(format!(
            "`public_key` must be an Ed25519 public key (base64url of its 32 bytes, \
             or an SPKI PEM): {e}"
        ))
    })
}

/// Issues the identity `request` asks for, generating the key pair when
/// it gives no public key (its private key is answered, never kept).
pub(crate) async fn issue(
    issuer: &IdentityIssuer,
    request: IssueAgentIdentityRequest,
    issued_by: &str,
) -> Result<IssuedAgentIdentity, ServiceError> {
    let checked = check(request)?;
    let (public_key, private_key_pem) = match checked.public_key {
        Some(public_key) => (public_key, None),
        None => {
            let key = AgentKey::generate()
                .map_err(|e| ServiceError::Internal(format!("generating a key: {e}")))?;
            (key.public_key(), Some(key.to_pem()))
        }
    };
    let (row, certificate) = issuer
        .issue(&checked.host, &public_key, checked.valid_days, issued_by)
        .await?;
    Ok(issued(row, certificate, private_key_pem))
}

/// The answer to an issue: the record, its certificate, and the private
/// key when it was made here.
pub(crate) fn issued(
    row: IdentityRow,
    certificate: String,
    private_key_pem: Option<String>,
) -> IssuedAgentIdentity {
    let issued = row.issued;
    IssuedAgentIdentity {
        id: issued.id,
        host: issued.host,
        certificate,
        public_key: issued.public_key,
        issued_at: issued.issued_at,
        expires_at: issued.expires_at,
        issued_by: issued.issued_by,
        private_key_pem,
    }
}

fn record(row: IdentityRow) -> AgentIdentityRecord {
    let issued = row.issued;
    AgentIdentityRecord {
        id: issued.id,
        host: issued.host,
        public_key: issued.public_key,
        issued_at: issued.issued_at,
        expires_at: issued.expires_at,
        issued_by: issued.issued_by,
        enrollment_token: row.enrollment_token,
        revoked_at: row.revocation.revoked_at,
        revoked_by: row.revocation.revoked_by,
    }
}

/// Identities, newest first: of `host` when given, at most `limit` (50
/// when absent).
pub(crate) async fn list(
    db: &Database,
    host: Option<&str>,
    limit: Option<i64>,
) -> Result<AgentIdentityList, ServiceError> {
    if let Some(host) = host {
        validate_name("host", host)?;
    }
    let limit = page_limit(limit, 50)?;
    let rows = Identities::new(db.clone()).list(host, limit).await?;
    Ok(AgentIdentityList {
        identities: rows.into_iter().map(record).collect(),
    })
}

/// Revokes `id` (a second revocation keeps the first's time and revoker);
/// 404 when there is no such identity.
pub(crate) async fn revoke(
    db: &Database,
    id: Uuid,
    by: &str,
) -> Result<AgentIdentityRecord, ServiceError> {
    Identities::new(db.clone())
        .revoke(id, by)
        .await?
        .map(record)
        .ok_or_else(|| ServiceError::NotFound(format!("no agent identity {id}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(json: serde_json::Value) -> Result<Checked, ServiceError> {
        check(serde_json::from_value(json).unwrap())
    }

    fn message(error: ServiceError) -> String {
        assert!(matches!(error, ServiceError::Invalid(_)), "{error:?}");
        error.to_string()
    }

    #[test]
    fn a_request_needs_a_plain_host_and_days_in_range() {
        let plain = checked(serde_json::json!({"host": "web-1"})).unwrap();
        assert_eq!(plain.valid_days, DEFAULT_CERTIFICATE_DAYS);
        assert!(plain.public_key.is_none());
        for host in ["", "a b", "$(id)", "web/1"] {
            let error = checked(serde_json::json!({"host": host})).unwrap_err();
            assert!(message(error).contains("`host`"), "{host}");
        }
        for days in [0, -1, MAX_VALID_DAYS + 1, i64::MAX] {
            let error = checked(serde_json::json!({"host": "h", "valid_days": days})).unwrap_err();
            assert!(message(error).contains("`valid_days`"), "{days}");
        }
        let days = checked(serde_json::json!({"host": "h", "valid_days": 3650})).unwrap();
        assert_eq!(days.valid_days, 3650);
    }

    #[test]
    fn public_keys_are_raw_base64_or_spki_pem() {
        let key = AgentKey::generate().unwrap();
        let raw = URL_SAFE_NO_PAD.encode(key.public_key());
        let given = checked(serde_json::json!({"host": "h", "public_key": raw})).unwrap();
        assert_eq!(given.public_key, Some(key.public_key()));
        let (_, pem) = odp_core::command::generate_keypair().unwrap();
        assert!(checked(serde_json::json!({"host": "h", "public_key": pem})).is_ok());
        for bad in ["", "not base64!", "AAAA", &"A".repeat(2000)] {
            let error = checked(serde_json::json!({"host": "h", "public_key": bad})).unwrap_err();
            assert!(message(error).contains("`public_key`"), "{bad}");
        }
    }
}
