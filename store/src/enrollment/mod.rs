//! One-time enrollment tokens: an admin creates one for a host, and an
//! agent trades it, with its public key, for an identity
//! ([`crate::Identities`]). Only the token's SHA-256 is kept.
//!
//! A use is taken by one conditional update (unrevoked, unexpired, for
//! this host, uses left), in the transaction that records the identity:
//! of two enrollments racing for the last use, the second update waits
//! for the first's row lock and then matches nothing, on either backend.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::database::repository;
use crate::identities::{self, IdentityRow, NewIdentity, Revocation};
use crate::sql::{Sql, Table};
use crate::Result;

/// A token as the store keeps it (its hash aside): as created, the uses
/// taken, and its revocation.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct EnrollmentTokenRow {
    #[sqlx(flatten)]
    pub token: NewEnrollmentToken,
    pub used: i32,
    #[sqlx(flatten)]
    pub revocation: Revocation,
}

/// A token to create (its hash aside); the API checks the values before
/// they get here.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct NewEnrollmentToken {
    pub id: Uuid,
    pub host: String,
    pub uses: i32,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
    pub expires_at: DateTime<Utc>,
}

/// Why a token was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No token has this hash.
    Unknown,
    Revoked,
    Expired,
    /// Every use is taken.
    UsedUp,
    /// It was created for another host.
    OtherHost,
}

/// What an enrollment came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Enrollment {
    /// The identity, recorded as enrolled with the token.
    Enrolled(IdentityRow),
    Refused(Refusal),
}

const TOKENS: Table = Table {
    name: "agent_enrollment_tokens",
    columns: "id, host, uses, used, created_at, created_by, expires_at, revoked_at, revoked_by",
};

repository! {
    /// Enrollment tokens, in whichever database the store runs on.
    EnrollmentTokens
}

impl EnrollmentTokens {
    /// Creates `new`, whose text hashes (hex SHA-256) to `secret_hash`.
    pub async fn create(
        &self,
        secret_hash: &str,
        new: &NewEnrollmentToken,
    ) -> Result<EnrollmentTokenRow> {
        Sql::new(
            "insert into agent_enrollment_tokens
                 (id, secret_hash, host, uses, created_at, created_by, expires_at)
             values ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(new.id)
        .bind(secret_hash)
        .bind(&new.host)
        .bind(new.uses)
        .bind(new.created_at)
        .bind(&new.created_by)
        .bind(new.expires_at)
        .execute(&self.db)
        .await?;
        Ok(EnrollmentTokenRow {
            token: new.clone(),
            used: 0,
            revocation: Revocation::default(),
        })
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<EnrollmentTokenRow>> {
        TOKENS.get(&self.db, id).await
    }

    /// Tokens, newest first: of one host when given, at most `limit`;
    /// each with the identities it enrolled, oldest first.
    pub async fn list(
        &self,
        host: Option<&str>,
        limit: i64,
    ) -> Result<Vec<(EnrollmentTokenRow, Vec<Uuid>)>> {
        let tokens: Vec<EnrollmentTokenRow> = TOKENS
            .newest(&self.db, "created_at", ("host", host), limit)
            .await?;
        // The page again as a derived table: MySQL takes no `limit` in an
        // `in (select …)`.
        let enrolled: Vec<(Uuid, Uuid)> = Sql::new(
            "select i.enrollment_token, i.id from agent_identities i
             join (select id from agent_enrollment_tokens
                   where ($1 is null or host = $1)
                   order by created_at desc, id limit $2) page
               on page.id = i.enrollment_token
             order by i.issued_at, i.id",
        )
        .bind(host)
        .bind(limit)
        .fetch_all(&self.db)
        .await?;
        Ok(tokens
            .into_iter()
            .map(|token| {
                let identities = enrolled
                    .iter()
                    .filter(|(by, _)| *by == token.token.id)
                    .map(|(_, identity)| *identity)
                    .collect();
                (token, identities)
            })
            .collect())
    }

    /// The identities enrolled with token `id`, oldest first.
    pub async fn enrolled(&self, id: Uuid) -> Result<Vec<Uuid>> {
        Sql::new(
            "select id from agent_identities where enrollment_token = $1
             order by issued_at, id",
        )
        .bind(id)
        .fetch_column(&self.db)
        .await
    }

    /// Revokes a token; `None` when there is no such token. Revoking twice
    /// keeps the first time and revoker. The identities it enrolled stay
    /// valid: they are revoked on their own.
    pub async fn revoke(&self, id: Uuid, by: &str) -> Result<Option<EnrollmentTokenRow>> {
        TOKENS.revoke_once(&self.db, id, by).await
    }

    /// Takes one use of the token whose hash is `secret_hash` for
    /// `identity.host` and records `identity` as enrolled with it, issued
    /// by the token's creator; or says why not, recording nothing.
    pub async fn enroll(&self, secret_hash: &str, identity: &NewIdentity) -> Result<Enrollment> {
        let mut tx = self.db.begin().await?;
        let taken = Sql::new(
            "update agent_enrollment_tokens set used = used + 1
             where secret_hash = $1 and host = $2 and revoked_at is null
               and expires_at > {now} and used < uses",
        )
        .bind(secret_hash)
        .bind(&identity.host)
        .execute(&mut tx)
        .await?;
        if taken == 0 {
            drop(tx);
            return Ok(Enrollment::Refused(
                self.refusal(secret_hash, &identity.host).await?,
            ));
        }
        let (token, created_by): (Uuid, String) =
            Sql::new("select id, created_by from agent_enrollment_tokens where secret_hash = $1")
                .bind(secret_hash)
                .fetch_one(&mut tx)
                .await?;
        let issued = NewIdentity {
            issued_by: created_by,
            ..identity.clone()
        };
        identities::insert(&issued, Some(token))
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        Ok(Enrollment::Enrolled(IdentityRow {
            issued,
            enrollment_token: Some(token),
            revocation: Revocation::default(),
        }))
    }

    /// Why the token hashed `secret_hash` was not taken for `host`, read
    /// after the update matched nothing.
    async fn refusal(&self, secret_hash: &str, host: &str) -> Result<Refusal> {
        let token: Option<EnrollmentTokenRow> = TOKENS
            .select("where secret_hash = $1")
            .bind(secret_hash)
            .fetch_optional(&self.db)
            .await?;
        let Some(token) = token else {
            return Ok(Refusal::Unknown);
        };
        Ok(if token.revocation.revoked_at.is_some() {
            Refusal::Revoked
        } else if token.token.expires_at <= Utc::now() {
            Refusal::Expired
        } else if token.used >= token.token.uses {
            Refusal::UsedUp
        } else if token.token.host != host {
            Refusal::OtherHost
        } else {
            // Nothing else stops the update: the database's clock, a hair
            // ahead of this one, saw it expire.
            Refusal::Expired
        })
    }
}
