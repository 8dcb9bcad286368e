//! Bearer-token authentication: HS256 JWTs signed with the configured
//! secret. Every `/api` route requires one; the subject is recorded as who
//! asked for each request.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::AppState;

pub const ISSUER: &str = "odp";

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    iss: String,
    iat: i64,
    exp: i64,
}

pub struct Authenticator {
    decoding: DecodingKey,
    encoding: EncodingKey,
}

impl Authenticator {
    pub fn from_secret(secret: &[u8]) -> Self {
        Authenticator {
            decoding: DecodingKey::from_secret(secret),
            encoding: EncodingKey::from_secret(secret),
        }
    }

    /// Mints a token for `subject`, valid for `ttl_secs` from `now`.
    pub fn mint(
        &self,
        subject: &str,
        now: i64,
        ttl_secs: i64,
    ) -> Result<String, jsonwebtoken::errors::Error> {
        let claims = Claims {
            sub: subject.to_owned(),
            iss: ISSUER.to_owned(),
            iat: now,
            exp: now + ttl_secs,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
    }

    fn verify(&self, token: &str) -> Result<String, ApiError> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_required_spec_claims(&["exp", "sub", "iss"]);
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)
            .map(|data| data.claims.sub)
            .map_err(|e| ApiError::Unauthorized(format!("invalid bearer token: {e}")))
    }
}

/// The authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    pub subject: String,
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        authenticate(parts, &state.auth)
    }
}

fn authenticate(parts: &Parts, auth: &Arc<Authenticator>) -> Result<Caller, ApiError> {
    let header = parts
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .ok_or_else(|| ApiError::Unauthorized("missing Authorization: Bearer token".into()))?;
    let value = header
        .to_str()
        .map_err(|_| ApiError::Unauthorized("Authorization header is not text".into()))?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .ok_or_else(|| ApiError::Unauthorized("Authorization must be `Bearer <token>`".into()))?;
    let subject = auth.verify(token.trim())?;
    Ok(Caller { subject })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_tokens_verify_and_others_do_not() {
        let auth = Authenticator::from_secret(b"secret");
        let now = chrono::Utc::now().timestamp();
        let token = auth.mint("alice", now, 60).unwrap();
        assert_eq!(auth.verify(&token).unwrap(), "alice");
        let expired = auth.mint("alice", now - 3600, 60).unwrap();
        assert!(auth.verify(&expired).is_err());
        let other = Authenticator::from_secret(b"other")
            .mint("mallory", now, 60)
            .unwrap();
        assert!(auth.verify(&other).is_err());
        assert!(auth.verify("not-a-token").is_err());
    }
}
