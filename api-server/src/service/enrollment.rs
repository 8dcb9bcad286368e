//! One-time enrollment tokens: an admin creates one for a host
//! (`POST /api/v1/agents/enrollment-tokens`), the agent of that host,
//! started with it, makes its own key pair and trades the token and the
//! public half for a certificate (`POST /api/v1/agents/enroll`, which
//! needs no bearer token: the enrollment token is the credential).
//!
//! The token's secret is answered once and kept only as its SHA-256, so
//! the database alone enrolls nobody. Refusals say what an agent holding
//! a real token needs to know (revoked, expired, used, another host);
//! a token that does not exist is a plain 401, the same whatever was
//! sent.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chrono::{DateTime, Duration, SubsecRound, Utc};
use odp_api_types::{
    CreateEnrollmentTokenRequest, CreatedEnrollmentToken, EnrollAgentRequest, EnrollmentToken,
    EnrollmentTokenList, EnrollmentTokenState, IssuedAgentIdentity,
};
use odp_core::identity::DEFAULT_CERTIFICATE_DAYS;
use odp_store::{
    Database, Enrollment, EnrollmentTokenRow, EnrollmentTokens, NewEnrollmentToken, Refusal,
};
use ring::rand::SecureRandom as _;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::service::identities::{issued, public_key, IdentityIssuer};
use crate::service::page_limit;
use crate::service_error::ServiceError;
use crate::validate::validate_name;

/// How long a token lives when the request does not say: an hour.
pub(crate) const DEFAULT_EXPIRES_SECS: i64 = 3600;
/// Its bounds: a minute to a week.
pub(crate) const MIN_EXPIRES_SECS: i64 = 60;
pub(crate) const MAX_EXPIRES_SECS: i64 = 7 * 86_400;
/// Most agents one token may enroll.
pub(crate) const MAX_USES: i32 = 1000;
/// What every token starts with, so secret scanners and people know one
/// when they see it.
const PREFIX: &str = "odp-enroll-";
/// Longest token text looked up (a real one is 54 characters).
const MAX_TOKEN_CHARS: usize = 200;

/// Creates a token for `request.host`, answering its secret this once.
pub(crate) async fn create(
    db: &Database,
    request: CreateEnrollmentTokenRequest,
    created_by: &str,
) -> Result<CreatedEnrollmentToken, ServiceError> {
    validate_name("host", &request.host)?;
    let expires_in = request.expires_in_secs.unwrap_or(DEFAULT_EXPIRES_SECS);
    if !(MIN_EXPIRES_SECS..=MAX_EXPIRES_SECS).contains(&expires_in) {
        return Err(ServiceError::Invalid(format!(
            "`expires_in_secs` must be between {MIN_EXPIRES_SECS} and {MAX_EXPIRES_SECS} (a week)"
        )));
    }
    let uses = request.uses.unwrap_or(1);
    if !(1..=MAX_USES).contains(&uses) {
        return Err(ServiceError::Invalid(format!(
            "`uses` must be between 1 and {MAX_USES}"
        )));
    }
    let secret = new_secret()?;
    let created_at = Utc::now().trunc_subsecs(0);
    let row = EnrollmentTokens::new(db.clone())
        .create(
            &hash(&secret),
            &NewEnrollmentToken {
                id: Uuid::new_v4(),
                host: request.host,
                uses,
                created_at,
                created_by: created_by.to_owned(),
                expires_at: created_at + Duration::seconds(expires_in),
            },
        )
        .await?;
    Ok(CreatedEnrollmentToken {
        secret,
        token: view(row, Vec::new(), Utc::now()),
    })
}

/// Tokens, newest first: of `host` when given, at most `limit` (50 when
/// absent).
pub(crate) async fn list(
    db: &Database,
    host: Option<&str>,
    limit: Option<i64>,
) -> Result<EnrollmentTokenList, ServiceError> {
    if let Some(host) = host {
        validate_name("host", host)?;
    }
    let limit = page_limit(limit, 50)?;
    let rows = EnrollmentTokens::new(db.clone()).list(host, limit).await?;
    let now = Utc::now();
    Ok(EnrollmentTokenList {
        tokens: rows
            .into_iter()
            .map(|(row, identities)| view(row, identities, now))
            .collect(),
    })
}

/// Revokes `id` (a second revocation keeps the first's time and revoker);
/// 404 when there is no such token.
pub(crate) async fn revoke(
    db: &Database,
    id: Uuid,
    by: &str,
) -> Result<EnrollmentToken, ServiceError> {
    let tokens = EnrollmentTokens::new(db.clone());
    let row = tokens
        .revoke(id, by)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no enrollment token {id}")))?;
    let identities = tokens.enrolled(id).await?;
    Ok(view(row, identities, Utc::now()))
}

/// Certifies the agent's key for its host when the token allows it,
/// taking one of the token's uses: the identity, and the token's id.
pub(crate) async fn enroll(
    issuer: &IdentityIssuer,
    db: &Database,
    request: EnrollAgentRequest,
) -> Result<(IssuedAgentIdentity, Uuid), ServiceError> {
    validate_name("host", &request.host)?;
    let key = public_key(&request.public_key)?;
    let token = request.token.trim();
    if token.is_empty() || token.chars().count() > MAX_TOKEN_CHARS {
        return Err(not_valid());
    }
    // Signed first, recorded (and answered) only if the token is taken.
    let (identity, certificate) =
        issuer.certify(&request.host, &key, DEFAULT_CERTIFICATE_DAYS, "")?;
    let enrollment = EnrollmentTokens::new(db.clone())
        .enroll(&hash(token), &identity)
        .await?;
    match enrollment {
        Enrollment::Enrolled(row) => {
            let token = row
                .enrollment_token
                .expect("an enrolled identity names its token");
            Ok((issued(row, certificate, None), token))
        }
        Enrollment::Refused(why) => Err(refused(why)),
    }
}

fn not_valid() -> ServiceError {
    ServiceError::Unauthenticated("the enrollment token is not valid".into())
}

/// What the agent is told. Each of these but the first means the caller
/// holds a real token's secret, so saying which adds nothing an attacker
/// could guess with.
fn refused(why: Refusal) -> ServiceError {
    match why {
        Refusal::Unknown => not_valid(),
        Refusal::Revoked => ServiceError::Forbidden("the enrollment token was revoked".into()),
        Refusal::Expired => ServiceError::Forbidden(
            "the enrollment token expired: ask an admin for a new one".into(),
        ),
        Refusal::UsedUp => ServiceError::Conflict(
            "the enrollment token was used already: ask an admin for a new one".into(),
        ),
        Refusal::OtherHost => ServiceError::Forbidden(
            "the enrollment token is for another host: check --host-id".into(),
        ),
    }
}

/// 32 random bytes, base64url, after [`PREFIX`].
fn new_secret() -> Result<String, ServiceError> {
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| ServiceError::Internal("no randomness for an enrollment token".into()))?;
    Ok(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// What the store keeps of a token: its SHA-256, hex.
fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where a token stands at `now`: revoked over used over expired.
fn state(row: &EnrollmentTokenRow, now: DateTime<Utc>) -> EnrollmentTokenState {
    if row.revocation.revoked_at.is_some() {
        EnrollmentTokenState::Revoked
    } else if row.used >= row.token.uses {
        EnrollmentTokenState::Used
    } else if row.token.expires_at <= now {
        EnrollmentTokenState::Expired
    } else {
        EnrollmentTokenState::Unused
    }
}

fn view(row: EnrollmentTokenRow, identities: Vec<Uuid>, now: DateTime<Utc>) -> EnrollmentToken {
    EnrollmentToken {
        state: state(&row, now),
        id: row.token.id,
        host: row.token.host,
        uses: row.token.uses,
        used: row.used,
        created_at: row.token.created_at,
        created_by: row.token.created_by,
        expires_at: row.token.expires_at,
        revoked_at: row.revocation.revoked_at,
        revoked_by: row.revocation.revoked_by,
        identities,
    }
}

#[cfg(test)]
mod tests {
    use odp_store::Revocation;

    use super::*;

    #[test]
    fn secrets_are_prefixed_random_and_kept_as_their_sha256() {
        let (a, b) = (new_secret().unwrap(), new_secret().unwrap());
        assert_ne!(a, b);
        assert!(a.starts_with(PREFIX) && a.len() == PREFIX.len() + 43, "{a}");
        assert!(a.len() <= MAX_TOKEN_CHARS);
        // sha256("abc"), FIPS 180-2's example.
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn revoked_wins_over_used_which_wins_over_expired() {
        let now = Utc::now();
        let row = EnrollmentTokenRow {
            token: NewEnrollmentToken {
                id: Uuid::new_v4(),
                host: "h".into(),
                uses: 2,
                created_at: now,
                created_by: "a".into(),
                expires_at: now + Duration::hours(1),
            },
            used: 1,
            revocation: Revocation::default(),
        };
        assert_eq!(state(&row, now), EnrollmentTokenState::Unused);
        let later = now + Duration::hours(2);
        assert_eq!(state(&row, later), EnrollmentTokenState::Expired);
        let used = EnrollmentTokenRow {
            used: 2,
            ..row.clone()
        };
        assert_eq!(state(&used, later), EnrollmentTokenState::Used);
        let revoked = EnrollmentTokenRow {
            revocation: Revocation {
                revoked_at: Some(now),
                revoked_by: None,
            },
            ..used
        };
        assert_eq!(state(&revoked, now), EnrollmentTokenState::Revoked);
    }
}
