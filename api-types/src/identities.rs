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
    /// The enrollment token the agent traded for it, when it enrolled
    /// itself with one (`issued_by` is then the token's creator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enrollment_token: Option<Uuid>,
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

/// `POST /api/v1/agents/enrollment-tokens`: a token that lets an agent of
/// `host` enroll itself (`POST /api/v1/agents/enroll`) `uses` times
/// before it expires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateEnrollmentTokenRequest {
    /// The host id the enrolling agent must run as (its `--host-id`).
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub host: String,
    /// Seconds until it expires: 60 to 604800 (a week); 3600 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schema(minimum = 60, maximum = 604800))]
    pub expires_in_secs: Option<i64>,
    /// How many agents may enroll with it: 1 to 1000; 1 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 1000))]
    pub uses: Option<i32>,
}

/// Where a token stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EnrollmentTokenState {
    /// Uses left, not expired, not revoked: an agent may enroll with it.
    Unused,
    /// Every use taken.
    Used,
    Expired,
    Revoked,
}

/// An enrollment token as kept: never its secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct EnrollmentToken {
    pub id: Uuid,
    pub host: String,
    pub state: EnrollmentTokenState,
    /// How many agents may enroll with it, and how many did.
    pub uses: i32,
    pub used: i32,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
    pub expires_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub revoked_by: Option<String>,
    /// The identities enrolled with it, oldest first.
    pub identities: Vec<Uuid>,
}

/// A token just created, with its secret: shown this once, kept only as
/// a SHA-256.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct CreatedEnrollmentToken {
    /// What the agent is started with (`--enrollment-token`,
    /// `ODP_ENROLLMENT_TOKEN`).
    pub secret: String,
    pub token: EnrollmentToken,
}

/// `GET /api/v1/agents/enrollment-tokens`: newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct EnrollmentTokenList {
    pub tokens: Vec<EnrollmentToken>,
}

/// `POST /api/v1/agents/enroll`: an agent trades a token and the public
/// half of the key it made for a certificate of `host`. Answered with
/// an [`IssuedAgentIdentity`] (no private key: the agent has it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EnrollAgentRequest {
    /// The enrollment token's secret.
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 200))]
    pub token: String,
    /// The agent's host id; the token's host.
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub host: String,
    /// The agent's Ed25519 public key: base64url of its 32 raw bytes, or an
    /// SPKI PEM.
    #[cfg_attr(feature = "schema", schema(min_length = 1, max_length = 1000))]
    pub public_key: String,
}
