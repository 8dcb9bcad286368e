//! API bearer tokens: the claims ODP puts in a JWT, minting them with the
//! shared HS256 secret, and verifying them against that secret and/or the
//! public keys of a JWKS (RS256, PS256, ES256, EdDSA), so an organisation's
//! own identity provider can issue tokens without sharing a secret.
//!
//! Claims carry a role — `ingest` only sends profiles of its services,
//! `viewer` reads, `profiler` also starts and stops
//! profiles of the services its `services` glob patterns match, `admin`
//! may do everything — so CI jobs get narrowly scoped tokens the same way
//! people do.

use std::fmt;
use std::str::FromStr;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

pub const ISSUER: &str = "odp";
pub const AUDIENCE: &str = "odp-api";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Only sends profiles (OTLP, Pyroscope's ingest API) of the services
    /// its patterns match, and reads nothing: the token a fleet's
    /// profilers are configured with.
    Ingest,
    Viewer,
    Profiler,
    Admin,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Ingest => "ingest",
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
            "ingest" => Ok(Role::Ingest),
            "viewer" => Ok(Role::Viewer),
            "profiler" => Ok(Role::Profiler),
            "admin" => Ok(Role::Admin),
            other => Err(format!(
                "unknown role {other:?} (ingest, viewer, profiler or admin)"
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub iss: String,
    /// The audience. A token may name several (`aud` as an array, RFC 7519
    /// §4.1.3); then this is [`AUDIENCE`] when it is among them (which
    /// [`TokenVerifier::verify`] requires), else the first one named.
    #[serde(deserialize_with = "one_or_more_audiences")]
    pub aud: String,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    pub role: Role,
    /// Glob patterns (`*`, `?`) of the services a profiler may profile.
    #[serde(default)]
    pub services: Vec<String>,
}

/// `aud` as one string or an array of them (RFC 7519 §4.1.3).
fn one_or_more_audiences<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Audience {
        One(String),
        Several(Vec<String>),
    }
    Ok(match Audience::deserialize(deserializer)? {
        Audience::One(audience) => audience,
        Audience::Several(audiences) if audiences.iter().any(|a| a == AUDIENCE) => {
            AUDIENCE.to_owned()
        }
        Audience::Several(audiences) => audiences.into_iter().next().unwrap_or_default(),
    })
}

/// What a token grants, for minting one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub subject: String,
    pub role: Role,
    pub services: Vec<String>,
}

impl Grant {
    /// The claims of a token for this grant valid `ttl_secs` from `now`.
    pub fn claims(&self, now: i64, ttl_secs: i64) -> Claims {
        Claims {
            sub: self.subject.clone(),
            iss: ISSUER.to_owned(),
            aud: AUDIENCE.to_owned(),
            iat: now,
            nbf: now,
            exp: now + ttl_secs,
            role: self.role,
            services: self.services.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("invalid key set: {0}")]
    KeySet(String),
    #[error("no verification key configured for {0:?} tokens")]
    NoKeyFor(Algorithm),
    #[error("{0}")]
    Invalid(String),
}

/// Mints an HS256 token for `grant`, valid for `ttl_secs` from `now`.
pub fn mint_hs256(
    secret: &[u8],
    grant: &Grant,
    now: i64,
    ttl_secs: i64,
) -> Result<String, TokenError> {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &grant.claims(now, ttl_secs),
        &EncodingKey::from_secret(secret),
    )
    .map_err(|e| TokenError::Invalid(e.to_string()))
}

/// One public key of the JWKS and the single algorithm it may verify, so
/// a token cannot choose a weaker algorithm for a key than its owner did.
struct PublicKey {
    kid: Option<String>,
    algorithm: Algorithm,
    key: DecodingKey,
}

/// Verifies bearer tokens against the configured secret and public keys.
pub struct TokenVerifier {
    secret: Option<DecodingKey>,
    public_keys: Vec<PublicKey>,
}

impl TokenVerifier {
    /// `secret` enables HS256 tokens; `jwks` (a JSON Web Key Set document)
    /// enables tokens signed by its keys. At least one must be given.
    pub fn new(secret: Option<&[u8]>, jwks: Option<&str>) -> Result<Self, TokenError> {
        let public_keys = match jwks {
            Some(text) => parse_jwks(text)?,
            None => Vec::new(),
        };
        if secret.is_none() && public_keys.is_empty() {
            return Err(TokenError::KeySet(
                "configure an HS256 secret or a JWKS with at least one key".into(),
            ));
        }
        Ok(TokenVerifier {
            secret: secret.map(DecodingKey::from_secret),
            public_keys,
        })
    }

    /// Checks signature, `exp`, `nbf`, `iss` and `aud` (one string, or an
    /// array that must name [`AUDIENCE`]), refuses critical header
    /// extensions, and returns the claims.
    pub fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| TokenError::Invalid(e.to_string()))?;
        refuse_critical_extensions(token)?;
        let (algorithm, key) = self.key_for(&header)?;
        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "nbf", "sub", "iss", "aud"]);
        jsonwebtoken::decode::<Claims>(token, key, &validation)
            .map(|data| data.claims)
            .map_err(|e| TokenError::Invalid(e.to_string()))
    }

    fn key_for(&self, header: &Header) -> Result<(Algorithm, &DecodingKey), TokenError> {
        if header.alg == Algorithm::HS256 {
            return self
                .secret
                .as_ref()
                .map(|key| (Algorithm::HS256, key))
                .ok_or(TokenError::NoKeyFor(Algorithm::HS256));
        }
        let candidates: Vec<&PublicKey> = self
            .public_keys
            .iter()
            .filter(|k| k.algorithm == header.alg)
            .filter(|k| match &header.kid {
                Some(kid) => k.kid.as_deref() == Some(kid.as_str()),
                None => true,
            })
            .collect();
        match candidates.as_slice() {
            [key] => Ok((key.algorithm, &key.key)),
            [] => match &header.kid {
                Some(kid) => Err(TokenError::Invalid(format!(
                    "no {:?} key with kid {kid:?} in the key set",
                    header.alg
                ))),
                None => Err(TokenError::NoKeyFor(header.alg)),
            },
            _ => Err(TokenError::Invalid(format!(
                "the key set holds several {:?} keys; the token must name one with `kid`",
                header.alg
            ))),
        }
    }
}

/// Refuses a token whose header has a `crit` parameter: it names
/// extensions the recipient must understand or else reject the token
/// (RFC 7515 §4.1.11), and ODP understands none. `jsonwebtoken`'s
/// [`Header`] drops unknown parameters, so this reads the header itself.
fn refuse_critical_extensions(token: &str) -> Result<(), TokenError> {
    use base64::Engine as _;
    let encoded = token.split('.').next().unwrap_or_default();
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|e| TokenError::Invalid(format!("token header: {e}")))?;
    let header: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&json)
        .map_err(|e| TokenError::Invalid(format!("token header: {e}")))?;
    match header.get("crit") {
        Some(crit) => Err(TokenError::Invalid(format!(
            "the token header marks extensions critical ({crit}); none is supported"
        ))),
        None => Ok(()),
    }
}

fn parse_jwks(text: &str) -> Result<Vec<PublicKey>, TokenError> {
    let set: JwkSet = serde_json::from_str(text).map_err(|e| TokenError::KeySet(e.to_string()))?;
    set.keys
        .iter()
        .enumerate()
        .map(|(index, jwk)| {
            let describe = |m: String| {
                let kid = jwk.common.key_id.as_deref().unwrap_or("-");
                TokenError::KeySet(format!("key {index} (kid {kid}): {m}"))
            };
            let algorithm = signing_algorithm(jwk).map_err(describe)?;
            let key = DecodingKey::from_jwk(jwk).map_err(|e| describe(e.to_string()))?;
            Ok(PublicKey {
                kid: jwk.common.key_id.clone(),
                algorithm,
                key,
            })
        })
        .collect()
}

/// The algorithm a JWK verifies: its `alg` when given (and consistent with
/// the key type), else the usual one for the key type.
fn signing_algorithm(jwk: &Jwk) -> Result<Algorithm, String> {
    let declared = jwk.common.key_algorithm;
    let algorithm = match (&jwk.algorithm, declared) {
        (AlgorithmParameters::RSA(_), None | Some(KeyAlgorithm::RS256)) => Algorithm::RS256,
        (AlgorithmParameters::RSA(_), Some(KeyAlgorithm::RS384)) => Algorithm::RS384,
        (AlgorithmParameters::RSA(_), Some(KeyAlgorithm::RS512)) => Algorithm::RS512,
        (AlgorithmParameters::RSA(_), Some(KeyAlgorithm::PS256)) => Algorithm::PS256,
        (AlgorithmParameters::RSA(_), Some(KeyAlgorithm::PS384)) => Algorithm::PS384,
        (AlgorithmParameters::RSA(_), Some(KeyAlgorithm::PS512)) => Algorithm::PS512,
        (AlgorithmParameters::EllipticCurve(p), None | Some(KeyAlgorithm::ES256))
            if p.curve == EllipticCurve::P256 =>
        {
            Algorithm::ES256
        }
        (AlgorithmParameters::EllipticCurve(p), None | Some(KeyAlgorithm::ES384))
            if p.curve == EllipticCurve::P384 =>
        {
            Algorithm::ES384
        }
        (AlgorithmParameters::OctetKeyPair(p), None | Some(KeyAlgorithm::EdDSA))
            if p.curve == EllipticCurve::Ed25519 =>
        {
            Algorithm::EdDSA
        }
        (AlgorithmParameters::OctetKey(_), _) => {
            return Err("symmetric keys do not belong in a public key set".into())
        }
        (_, declared) => {
            return Err(format!(
                "unsupported key type and algorithm combination ({declared:?})"
            ))
        }
    };
    Ok(algorithm)
}

#[cfg(test)]
mod tests;
