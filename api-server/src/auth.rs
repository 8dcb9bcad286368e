//! Bearer-token authentication and role-based authorization.
//!
//! Tokens are JWTs signed with the configured HS256 secret or by a key of
//! the configured JWKS (see `odp_core::token`); `exp`, `nbf`, `iss` and
//! `aud` are validated (`aud` may be an array naming ODP's audience among
//! others), and a token whose header marks any extension critical (`crit`)
//! is refused, since ODP understands none. Claims carry a role — `ingest`
//! only sends profiles of its services (and is refused everywhere else),
//! `viewer` reads,
//! `profiler` also starts and stops profiles of the services its
//! `services` glob patterns match, `admin` may do everything — so CI jobs
//! and performance tests get narrowly scoped service tokens the same way
//! people do.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
pub use odp_core::token::Grant;
pub(crate) use odp_core::token::Role;
use odp_core::token::{TokenError, TokenVerifier};

use crate::error::ApiError;
use crate::service_error::ServiceError;
use crate::AppState;

pub struct Authenticator {
    verifier: TokenVerifier,
}

impl Authenticator {
    pub fn from_secret(secret: &[u8]) -> Self {
        Authenticator {
            verifier: TokenVerifier::new(Some(secret), None).expect("a secret alone is valid"),
        }
    }

    /// Verifies HS256 tokens with `secret` when given and tokens signed by
    /// the keys of the `jwks` document when given.
    pub fn new(secret: Option<&[u8]>, jwks: Option<&str>) -> Result<Self, TokenError> {
        Ok(Authenticator {
            verifier: TokenVerifier::new(secret, jwks)?,
        })
    }

    fn verify(&self, token: &str) -> Result<Caller, ApiError> {
        let claims = self
            .verifier
            .verify(token)
            .map_err(|e| ApiError::Unauthorized(format!("invalid bearer token: {e}")))?;
        Ok(Caller {
            subject: claims.sub,
            role: claims.role,
            services: claims.services,
        })
    }
}

/// The authenticated caller.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub subject: String,
    pub role: Role,
    pub services: Vec<String>,
}

impl Caller {
    /// Fails with 403 unless the caller has at least `role`.
    pub(crate) fn require(&self, role: Role) -> Result<(), ServiceError> {
        if self.role >= role {
            Ok(())
        } else {
            Err(ServiceError::Forbidden(format!(
                "this needs the {role} role; the token has {}",
                self.role
            )))
        }
    }

    /// Fails with 403 unless the caller may start or stop profiles of
    /// `service`.
    pub(crate) fn require_profiling(&self, service: &str) -> Result<(), ServiceError> {
        self.require(Role::Profiler)?;
        if self.role == Role::Admin || self.services.iter().any(|p| glob_match(p, service)) {
            Ok(())
        } else {
            Err(ServiceError::Forbidden(format!(
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
        let caller = state.auth.verify(bearer_token(parts)?)?;
        if caller.role == Role::Ingest {
            return Err(ApiError::Forbidden(
                "an ingest token only sends profiles (POST /ingest, \
                 /push.v1.PusherService/Push, /v1development/profiles)"
                    .into(),
            ));
        }
        Ok(caller)
    }
}

/// The caller of an ingest route: any role, checked per service with
/// [`Ingester::require_ingest`].
#[derive(Debug, Clone)]
pub(crate) struct Ingester(pub Caller);

impl Ingester {
    /// Fails with 403 unless the token may send profiles of `service`:
    /// an ingest token or a profiler's for a service its patterns match,
    /// or an admin's. Viewers only read.
    pub(crate) fn require_ingest(&self, service: &str) -> Result<(), ApiError> {
        let caller = &self.0;
        match caller.role {
            Role::Admin => Ok(()),
            Role::Ingest | Role::Profiler
                if caller.services.iter().any(|p| glob_match(p, service)) =>
            {
                Ok(())
            }
            Role::Ingest | Role::Profiler => Err(ApiError::Forbidden(format!(
                "the token may send profiles of services {:?}, not {service:?}",
                caller.services
            ))),
            Role::Viewer => Err(ApiError::Forbidden(
                "a viewer token reads; sending profiles needs an ingest, profiler or admin token"
                    .into(),
            )),
        }
    }
}

impl FromRequestParts<AppState> for Ingester {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(Ingester(state.auth.verify(bearer_token(parts)?)?))
    }
}

fn bearer_token(parts: &Parts) -> Result<&str, ApiError> {
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
    Ok(token.trim())
}

/// Shell-style glob: `*` matches any run of characters, `?` any one.
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
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
        let token = odp_core::token::mint_hs256(b"secret", &grant(Role::Viewer, &[]), now, 60);
        let caller = auth.verify(&token.unwrap()).unwrap();
        assert_eq!(
            (caller.subject.as_str(), caller.role),
            ("alice", Role::Viewer)
        );
        let other = odp_core::token::mint_hs256(b"other", &grant(Role::Admin, &[]), now, 60);
        assert!(matches!(
            auth.verify(&other.unwrap()),
            Err(ApiError::Unauthorized(_))
        ));
    }

    /// Unpadded base64url (RFC 4648 §5), as JWTs encode their parts.
    fn base64url(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..=chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            }
        }
        out
    }

    /// An HS256 token signed with `secret` whose header and claims are
    /// exactly the given JSON, so it may carry what `mint_hs256` never
    /// writes.
    fn sign_raw(secret: &[u8], header: serde_json::Value, claims: serde_json::Value) -> String {
        let input = format!(
            "{}.{}",
            base64url(header.to_string().as_bytes()),
            base64url(claims.to_string().as_bytes())
        );
        let key = jsonwebtoken::EncodingKey::from_secret(secret);
        let signature =
            jsonwebtoken::crypto::sign(input.as_bytes(), &key, jsonwebtoken::Algorithm::HS256)
                .unwrap();
        format!("{input}.{signature}")
    }

    /// The claims of a valid viewer token, as JSON to tamper with.
    fn viewer_claims() -> serde_json::Value {
        let now = chrono::Utc::now().timestamp();
        serde_json::to_value(grant(Role::Viewer, &[]).claims(now, 60)).unwrap()
    }

    #[test]
    fn the_raw_signer_makes_tokens_the_authenticator_accepts() {
        let auth = Authenticator::from_secret(b"secret");
        let header = serde_json::json!({"alg": "HS256", "typ": "JWT"});
        let token = sign_raw(b"secret", header, viewer_claims());
        assert_eq!(auth.verify(&token).unwrap().subject, "alice");
    }

    #[test]
    fn tokens_with_critical_header_extensions_are_refused() {
        let auth = Authenticator::from_secret(b"secret");
        for crit in [
            serde_json::json!(["exp"]),
            serde_json::json!(["x"]),
            serde_json::json!([]),
            serde_json::json!("x"),
        ] {
            let header = serde_json::json!({"alg": "HS256", "typ": "JWT", "crit": crit, "x": 1});
            let token = sign_raw(b"secret", header, viewer_claims());
            match auth.verify(&token) {
                Err(ApiError::Unauthorized(message)) => {
                    assert!(message.contains("critical"), "{crit}: {message}")
                }
                other => panic!("crit {crit}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_audience_array_must_name_odp() {
        let auth = Authenticator::from_secret(b"secret");
        let header = serde_json::json!({"alg": "HS256", "typ": "JWT"});
        let with_audience = |aud: serde_json::Value| {
            let mut claims = viewer_claims();
            claims["aud"] = aud;
            sign_raw(b"secret", header.clone(), claims)
        };
        let audience = odp_core::token::AUDIENCE;
        for accepted in [
            serde_json::json!([audience]),
            serde_json::json!(["other-api", audience]),
        ] {
            let caller = auth.verify(&with_audience(accepted.clone()));
            assert_eq!(caller.unwrap().role, Role::Viewer, "{accepted}");
        }
        for refused in [
            serde_json::json!(["other-api"]),
            serde_json::json!([]),
            serde_json::json!("other-api"),
            serde_json::json!([format!("{audience}-x"), "x"]),
            serde_json::json!(7),
        ] {
            assert!(
                matches!(
                    auth.verify(&with_audience(refused.clone())),
                    Err(ApiError::Unauthorized(_))
                ),
                "{refused}"
            );
        }
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
        assert!(caller(Role::Ingest, &["*"]).require(Role::Viewer).is_err());
        assert!(caller(Role::Ingest, &["*"])
            .require_profiling("checkout")
            .is_err());
    }

    #[test]
    fn ingest_tokens_send_profiles_of_their_services_only() {
        let ingester = |role, services: &[&str]| {
            Ingester(Caller {
                subject: "x".into(),
                role,
                services: services.iter().map(|s| s.to_string()).collect(),
            })
        };
        assert!(ingester(Role::Ingest, &["check*"])
            .require_ingest("checkout")
            .is_ok());
        assert!(ingester(Role::Ingest, &["check*"])
            .require_ingest("search")
            .is_err());
        assert!(ingester(Role::Profiler, &["search"])
            .require_ingest("search")
            .is_ok());
        assert!(ingester(Role::Viewer, &["*"])
            .require_ingest("search")
            .is_err());
        assert!(ingester(Role::Admin, &[]).require_ingest("any").is_ok());
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
