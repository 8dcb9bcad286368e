//! Agent identities the api-server issued certificates for
//! ([`odp_core::identity`]): kept so operators can list and revoke them,
//! and so the pipeline and the api-server can refuse what a revoked
//! identity sends.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::database::repository;
use crate::sql::{Sql, Table};
use crate::Result;

/// An issued identity as the store keeps it: as issued, and its
/// revocation.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct IdentityRow {
    #[sqlx(flatten)]
    pub issued: NewIdentity,
    /// The enrollment token the agent traded for it, when it did
    /// ([`crate::EnrollmentTokens::enroll`]).
    pub enrollment_token: Option<Uuid>,
    #[sqlx(flatten)]
    pub revocation: Revocation,
}

/// When and by whom an identity or an enrollment token was revoked; both
/// `None` while it is not. The first revocation stands.
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct Revocation {
    pub revoked_at: Option<DateTime<Utc>>,
    pub revoked_by: Option<String>,
}

/// An identity just issued.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct NewIdentity {
    pub id: Uuid,
    pub host: String,
    /// The agent's Ed25519 public key, raw, base64url without padding.
    pub public_key: String,
    pub issued_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub issued_by: String,
}

const IDENTITIES: Table = Table {
    name: "agent_identities",
    columns: "id, host, public_key, issued_at, expires_at, issued_by, enrollment_token, \
              revoked_at, revoked_by",
};

/// Records `identity` as issued, enrolled with `enrollment_token` when the
/// agent traded one for it.
pub(crate) fn insert(identity: &NewIdentity, enrollment_token: Option<Uuid>) -> Sql {
    Sql::new(
        "insert into agent_identities
             (id, host, public_key, issued_at, expires_at, issued_by, enrollment_token)
         values ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(identity.id)
    .bind(&identity.host)
    .bind(&identity.public_key)
    .bind(identity.issued_at)
    .bind(identity.expires_at)
    .bind(&identity.issued_by)
    .bind(enrollment_token)
}

repository! {
    /// Issued agent identities, in whichever database the store runs on.
    Identities
}

impl Identities {
    pub async fn record(&self, new: &NewIdentity) -> Result<IdentityRow> {
        insert(new, None).execute(&self.db).await?;
        Ok(IdentityRow {
            issued: new.clone(),
            enrollment_token: None,
            revocation: Revocation::default(),
        })
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<IdentityRow>> {
        IDENTITIES.get(&self.db, id).await
    }

    /// Identities, newest first: of one host when given, at most `limit`.
    pub async fn list(&self, host: Option<&str>, limit: i64) -> Result<Vec<IdentityRow>> {
        IDENTITIES
            .newest(&self.db, "issued_at", ("host", host), limit)
            .await
    }

    /// Revokes an identity; `None` when there is no such identity. Revoking
    /// twice keeps the first time and revoker.
    pub async fn revoke(&self, id: Uuid, by: &str) -> Result<Option<IdentityRow>> {
        IDENTITIES.revoke_once(&self.db, id, by).await
    }

    /// The revoked identities that have not expired yet (an expired one is
    /// refused anyway), with the host each was issued for.
    pub async fn revoked(&self) -> Result<HashMap<Uuid, String>> {
        let rows: Vec<(Uuid, String)> = Sql::new(
            "select id, host from agent_identities
             where revoked_at is not null and expires_at > {now}",
        )
        .fetch_all(&self.db)
        .await?;
        Ok(rows.into_iter().collect())
    }
}
