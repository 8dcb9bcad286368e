//! Agent identities the api-server issued certificates for
//! ([`odp_core::identity`]): kept so operators can list and revoke them,
//! and so the pipeline and the api-server can refuse what a revoked
//! identity sends.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::database::Database;
use crate::sql::Sql;
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

const COLUMNS: &str = "id, host, public_key, issued_at, expires_at, issued_by, \
                       enrollment_token, revoked_at, revoked_by";

/// Issued agent identities, in whichever database the store runs on.
#[derive(Clone)]
pub struct Identities {
    db: Database,
}

impl Identities {
    pub fn new(db: impl Into<Database>) -> Self {
        Identities { db: db.into() }
    }

    pub async fn record(&self, new: &NewIdentity) -> Result<IdentityRow> {
        Sql::new(
            "insert into agent_identities (id, host, public_key, issued_at, expires_at, issued_by)
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(new.id)
        .bind(&new.host)
        .bind(&new.public_key)
        .bind(new.issued_at)
        .bind(new.expires_at)
        .bind(&new.issued_by)
        .execute(&self.db)
        .await?;
        Ok(IdentityRow {
            issued: new.clone(),
            enrollment_token: None,
            revoked_at: None,
            revoked_by: None,
        })
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<IdentityRow>> {
        Sql::by_id(COLUMNS, "agent_identities", id)
            .fetch_optional(&self.db)
            .await
    }

    /// Identities, newest first: of one host when given, at most `limit`.
    pub async fn list(&self, host: Option<&str>, limit: i64) -> Result<Vec<IdentityRow>> {
        Sql::new(format!(
            "select {COLUMNS} from agent_identities
             where ($1 is null or host = $1)
             order by issued_at desc, id limit $2"
        ))
        .bind(host)
        .bind(limit)
        .fetch_all(&self.db)
        .await
    }

    /// Revokes an identity; `None` when there is no such identity. Revoking
    /// twice keeps the first time and revoker.
    pub async fn revoke(&self, id: Uuid, by: &str) -> Result<Option<IdentityRow>> {
        Sql::revoke_once("agent_identities", id, by)
            .execute(&self.db)
            .await?;
        self.get(id).await
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
