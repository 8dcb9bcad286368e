//! Agent identities: the certificates the api-server issues to bind an
//! agent's Ed25519 key to its host, so that what the agent publishes on
//! Kafka can be believed to come from that host (`odp_core::identity`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// `POST /api/v1/agents/identities`: certify a key as an agent of `host`.
/// Without `public_key` the API generates the key pair and answers its
/// private key once (it keeps no copy); with one, the private key never
/// leaves the agent's machine (what `odpctl agents enroll` does).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct IssueAgentIdentityRequest {
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub host: String,
    /// The agent's Ed25519 public key: base64url (or base64) of its 32 raw
    /// bytes, or an SPKI PEM (`-----BEGIN PUBLIC KEY-----`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 1000))]
    pub public_key: Option<String>,
    /// How long the certificate is valid, in days; 365 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 3650))]
    pub valid_days: Option<i64>,
}

/// An identity just issued: the certificate to give the agent, and the
/// private key when the API generated it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct IssuedAgentIdentity {
    /// The certificate's id (its `jti`), which revocation names.
    pub id: Uuid,
    pub host: String,
    /// The certificate: a JWT signed with the api-server's command key.
    /// The agent reads it from `agent-certificate.jwt` or
    /// `ODP_AGENT_CERTIFICATE`.
    pub certificate: String,
    /// The agent's public key, base64url of its 32 raw bytes.
    pub public_key: String,
    pub issued_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub issued_by: String,
    /// The agent's private key (PKCS#8 PEM), only when the request gave no
    /// public key: shown this once and never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_pem: Option<String>,
}

/// An issued identity as kept: no certificate, no private key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct AgentIdentityRecord {
    pub id: Uuid,
    pub host: String,
    /// The agent's public key, base64url of its 32 raw bytes.
    pub public_key: String,
    pub issued_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// The admin who issued it, or `deployer:local` / `deployer:ssh` for
    /// an agent the api-server deployed.
    pub issued_by: String,
    /// When it was revoked; what it signs is refused from then on.
    pub revoked_at: Option<DateTime<Utc>>,
    pub revoked_by: Option<String>,
}

/// `GET /api/v1/agents/identities`: newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct AgentIdentityList {
    pub identities: Vec<AgentIdentityRecord>,
}
