//! Bearer-token authentication and role-based authorization.
//!
//! Tokens are JWTs signed with the configured HS256 secret; `exp`, `nbf`,
//! `iss` and `aud` are validated. Claims carry a role — `viewer` reads,
//! `profiler` also starts and stops profiles of the services its
//! `services` glob patterns match, `admin` may do everything — so CI jobs
//! and performance tests get narrowly scoped service tokens the same way
//! people do.

use std::fmt;
use std::str::FromStr;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::AppState;

pub const ISSUER: &str = "odp";
pub const AUDIENCE: &str = "odp-api";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Viewer,
    Profiler,
    Admin,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Viewer => "viewer",
            Role::Profiler => "profiler",
            Role::Admin => "admin",
        })
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "viewer" => Ok(Role::Viewer),
            "profiler" => Ok(Role::Profiler),
            "admin" => Ok(Role::Admin),
            other => Err(format!(
                "unknown role {other:?} (viewer, profiler or admin)"
            )),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    iss: String,
    aud: String,
    iat: i64,
    nbf: i64,
    exp: i64,
    role: Role,
    /// Glob patterns (`*`, `?`) of the services a profiler may profile.
    #[serde(default)]
    services: Vec<String>,
}

/// What a token grants, for minting one.
#[derive(Debug, Clone)]
pub struct Grant {
    pub subject: String,
    pub role: Role,
    pub services: Vec<String>,
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

    /// Mints a token for `grant`, valid for `ttl_secs` from `now`.
    pub fn mint(
        &self,
        grant: &Grant,
        now: i64,
        ttl_secs: i64,
    ) -> Result<String, jsonwebtoken::errors::Error> {
        let claims = Claims {
            sub: grant.subject.clone(),
            iss: ISSUER.to_owned(),
            aud: AUDIENCE.to_owned(),
            iat: now,
            nbf: now,
            exp: now + ttl_secs,
            role: grant.role,
            services: grant.services.clone(),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
    }

    fn verify(&self, token: &str) -> Result<Caller, ApiError> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "nbf", "sub", "iss", "aud"]);
        let claims = jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)
            .map_err(|e| ApiError::Unauthorized(format!("invalid bearer token: {e}")))?
            .claims;
        Ok(Caller {
            subject: claims.sub,
            role: claims.role,
            services: claims.services,
        })
    }
}

/// The authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    pub subject: String,
    pub role: Role,
    pub services: Vec<String>,
}

impl Caller {
    /// Fails with 403 unless the caller has at least `role`.
    pub fn require(&self, role: Role) -> Result<(), ApiError> {
        if self.role >= role {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "this needs the {role} role; the token has {}",
                self.role
            )))
        }
    }

    /// Fails with 403 unless the caller may start or stop profiles of
    /// `service`.
    pub fn require_profiling(&self, service: &str) -> Result<(), ApiError> {
        self.require(Role::Profiler)?;
        if self.role == Role::Admin || self.services.iter().any(|p| glob_match(p, service)) {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "the token may profile services {:?}, not {service:?}",
                self.services
            )))
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
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
            .ok_or_else(|| {
                ApiError::Unauthorized("Authorization must be `Bearer <token>`".into())
            })?;
        state.auth.verify(token.trim())
    }
}

/// Shell-style glob: `*` matches any run of characters, `?` any one.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // Iterative matcher with one backtrack point: linear in practice and
    // immune to the exponential blow-up of naive recursion on `a*a*a*b`.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(role: Role, services: &[&str]) -> Grant {
        Grant {
            subject: "alice".into(),
            role,
            services: services.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn minted_tokens_verify_and_others_do_not() {
        let auth = Authenticator::from_secret(b"secret");
        let now = chrono::Utc::now().timestamp();
        let token = auth.mint(&grant(Role::Viewer, &[]), now, 60).unwrap();
        let caller = auth.verify(&token).unwrap();
        assert_eq!(
            (caller.subject.as_str(), caller.role),
            ("alice", Role::Viewer)
        );
        let expired = auth.mint(&grant(Role::Admin, &[]), now - 3600, 60).unwrap();
        assert!(auth.verify(&expired).is_err());
        let not_yet = auth.mint(&grant(Role::Admin, &[]), now + 3600, 60).unwrap();
        assert!(auth.verify(&not_yet).is_err(), "nbf is enforced");
        let other = Authenticator::from_secret(b"other")
            .mint(&grant(Role::Admin, &[]), now, 60)
            .unwrap();
        assert!(auth.verify(&other).is_err());
        assert!(auth.verify("not-a-token").is_err());
    }

    #[test]
    fn roles_and_service_patterns_limit_what_a_caller_may_do() {
        let caller = |role, services: &[&str]| Caller {
            subject: "x".into(),
            role,
            services: services.iter().map(|s| s.to_string()).collect(),
        };
        assert!(caller(Role::Viewer, &["*"])
            .require_profiling("checkout")
            .is_err());
        assert!(caller(Role::Profiler, &["check*"])
            .require_profiling("checkout")
            .is_ok());
        assert!(caller(Role::Profiler, &["check*"])
            .require_profiling("search")
            .is_err());
        assert!(caller(Role::Admin, &[])
            .require_profiling("anything")
            .is_ok());
        assert!(caller(Role::Profiler, &[]).require(Role::Admin).is_err());
        assert!(caller(Role::Viewer, &[]).require(Role::Viewer).is_ok());
    }

    #[test]
    fn globs() {
        for (p, t, want) in [
            ("*", "", true),
            ("*", "abc", true),
            ("a*c", "abbbc", true),
            ("a*c", "abbb", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("checkout-*-eu", "checkout-api-eu", true),
            (
                "a*a*a*a*b",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                false,
            ),
            ("", "", true),
            ("", "x", false),
        ] {
            assert_eq!(glob_match(p, t), want, "{p} ~ {t}");
        }
    }
}
