//! Agent identities: why the pipeline, the api-server and other agents can
//! believe that a message on `odp.stacks` or `odp.events` came from an
//! agent of the host it names.
//!
//! Each agent holds an Ed25519 key pair of its own. The api-server, once
//! it has decided that the key belongs to an agent of host `H` (it deployed
//! the agent, or an admin enrolled it), issues a **certificate**: a JWT
//! signed with the api-server's command key, whose claims name the host
//! and carry the agent's public key. The agent sends the certificate with
//! every message, and signs each message's bytes with its own key
//! ([`AgentIdentity::sign`]). Anyone holding the api-server's public key
//! (agents, the pipeline, the api-server itself) checks both
//! ([`MessageVerifier::verify`]) and so learns the host the message may
//! speak for; the payload must name that host.
//!
//! A signature covers the channel (stacks or events) and the payload, so a
//! signed heartbeat cannot be replayed as a snapshot. It does not stop a
//! replay of a message as it was sent: storage drops a window it already
//! has, and lifecycle events are idempotent.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::DecodingKey;
use ring::signature::{Ed25519KeyPair, KeyPair as _, UnparsedPublicKey, ED25519};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use uuid::Uuid;

use crate::command::{pem, pem_der, validation_for, CommandSigner, ED25519_SPKI_PREFIX, ISSUER};

/// The `aud` of an agent certificate: never accepted as a command.
pub const CERTIFICATE_AUDIENCE: &str = "odp-agent-identity";
/// Kafka header carrying the sender's certificate.
pub const CERTIFICATE_HEADER: &str = "odp-agent-certificate";
/// Kafka header carrying the sender's signature (base64url, no padding).
pub const SIGNATURE_HEADER: &str = "odp-agent-signature";
/// How long a certificate is valid by default: a year. An agent given a new
/// identity (redeployed, or enrolled again) gets a new one.
pub const DEFAULT_CERTIFICATE_DAYS: i64 = 365;
/// Clock skew tolerated on a certificate's times.
const LEEWAY_SECS: i64 = 300;
/// File names of an identity kept in a directory.
pub const KEY_FILE: &str = "agent-key.pem";
pub const CERTIFICATE_FILE: &str = "agent-certificate.jwt";
/// Certificates remembered as verified; past this the memory is cleared.
const MAX_CACHED_CERTIFICATES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IdentityError {
    #[error("unsigned: the message has no {0} header")]
    Unsigned(&'static str),
    #[error("invalid certificate: {0}")]
    Certificate(String),
    #[error("certificate {id} expired at {expires_at}")]
    CertificateExpired { id: Uuid, expires_at: i64 },
    #[error("certificate {id} is not valid before {issued_at}")]
    CertificateNotYetValid { id: Uuid, issued_at: i64 },
    #[error("the signature does not match the message and its certificate's key")]
    BadSignature,
    #[error(
        "signed by an agent of host {certified:?}, but the message speaks for host {claimed:?}"
    )]
    WrongHost { certified: String, claimed: String },
    #[error("certificate {id} was revoked")]
    Revoked { id: Uuid },
    #[error("invalid key: {0}")]
    Key(String),
    #[error("{what}: {error}")]
    Io { what: String, error: String },
}

/// Which topic a message is for; part of what is signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Stacks,
    Events,
}

impl Channel {
    fn domain(self) -> &'static [u8] {
        match self {
            Channel::Stacks => b"odp-agent-message/1 stacks\n",
            Channel::Events => b"odp-agent-message/1 events\n",
        }
    }
}

/// What a verified certificate says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    /// The identity's id, unique per issue.
    pub id: Uuid,
    pub host: String,
    pub public_key: [u8; 32],
    pub issued_at: i64,
    pub expires_at: i64,
}

impl Certificate {
    /// Errors unless `host` is the certified one.
    pub fn check_host(&self, host: &str) -> Result<(), IdentityError> {
        if self.host == host {
            Ok(())
        } else {
            Err(IdentityError::WrongHost {
                certified: self.host.clone(),
                claimed: host.to_owned(),
            })
        }
    }

    fn check_time(&self, now_unix_s: i64) -> Result<(), IdentityError> {
        if self.expires_at.saturating_add(LEEWAY_SECS) < now_unix_s {
            return Err(IdentityError::CertificateExpired {
                id: self.id,
                expires_at: self.expires_at,
            });
        }
        if self.issued_at.saturating_sub(LEEWAY_SECS) > now_unix_s {
            return Err(IdentityError::CertificateNotYetValid {
                id: self.id,
                issued_at: self.issued_at,
            });
        }
        Ok(())
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    jti: Uuid,
    iss: String,
    aud: String,
    sub: String,
    iat: i64,
    exp: i64,
    /// The agent's Ed25519 public key, raw, base64url without padding.
    key: String,
}

/// Issues a certificate for `public_key` as an agent of `host`, valid from
/// `issued_at` to `expires_at` (unix s). Returns its id and the token.
pub fn issue_certificate(
    signer: &CommandSigner,
    host: &str,
    public_key: &[u8; 32],
    issued_at: i64,
    expires_at: i64,
) -> Result<(Uuid, String), IdentityError> {
    let id = Uuid::new_v4();
    let claims = Claims {
        jti: id,
        iss: ISSUER.to_owned(),
        aud: CERTIFICATE_AUDIENCE.to_owned(),
        sub: host.to_owned(),
        iat: issued_at,
        exp: expires_at,
        key: encode_public_key(public_key),
    };
    let token = signer
        .sign_claims(&claims)
        .map_err(|e| IdentityError::Key(e.to_string()))?;
    Ok((id, token))
}

/// An agent's own Ed25519 key pair.
pub struct AgentKey {
    pair: Ed25519KeyPair,
    pkcs8: Vec<u8>,
}

impl std::fmt::Debug for AgentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentKey")
            .field("public_key", &URL_SAFE_NO_PAD.encode(self.public_key()))
            .finish_non_exhaustive()
    }
}

impl AgentKey {
    pub fn generate() -> Result<AgentKey, IdentityError> {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 =
            Ed25519KeyPair::generate_pkcs8(&rng).map_err(|e| IdentityError::Key(e.to_string()))?;
        Self::from_pkcs8(pkcs8.as_ref())
    }

    fn from_pkcs8(der: &[u8]) -> Result<AgentKey, IdentityError> {
        let pair = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der)
            .map_err(|e| IdentityError::Key(format!("not an Ed25519 PKCS#8 key: {e}")))?;
        Ok(AgentKey {
            pair,
            pkcs8: der.to_vec(),
        })
    }

    /// From a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    pub fn from_pem(pem: &str) -> Result<AgentKey, IdentityError> {
        Self::from_pkcs8(&pem_der(pem).map_err(IdentityError::Key)?)
    }

    pub fn to_pem(&self) -> String {
        pem("PRIVATE KEY", &self.pkcs8)
    }

    pub fn public_key(&self) -> [u8; 32] {
        self.pair
            .public_key()
            .as_ref()
            .try_into()
            .expect("an Ed25519 public key is 32 bytes")
    }
}

/// A public key as certificates and the store write it: base64url of its
/// 32 raw bytes, without padding.
pub fn encode_public_key(public_key: &[u8; 32]) -> String {
    URL_SAFE_NO_PAD.encode(public_key)
}

/// Parses a public key given as base64 (standard or url-safe) of its 32
/// raw bytes, or as an SPKI PEM.
pub fn parse_public_key(text: &str) -> Result<[u8; 32], IdentityError> {
    let text = text.trim();
    let der_or_raw = if text.starts_with("-----BEGIN PUBLIC KEY-----") {
        pem_der(text).map_err(IdentityError::Key)?
    } else {
        let trimmed = text.trim_end_matches('=');
        URL_SAFE_NO_PAD
            .decode(trimmed)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(trimmed))
            .map_err(|e| IdentityError::Key(format!("not base64: {e}")))?
    };
    // SPKI for Ed25519 is a fixed 12-byte prefix and the key (RFC 8410).
    let raw = match der_or_raw.len() {
        32 => &der_or_raw[..],
        44 if der_or_raw[..12] == ED25519_SPKI_PREFIX => &der_or_raw[12..],
        n => {
            return Err(IdentityError::Key(format!(
                "an Ed25519 public key is 32 bytes (or a 44-byte SPKI), not {n}"
            )))
        }
    };
    Ok(raw.try_into().expect("checked to be 32 bytes"))
}

/// The two header values that authenticate one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageSignature<'a> {
    pub certificate: &'a str,
    pub signature: String,
}

/// An agent's key and the certificate the api-server issued for it.
#[derive(Debug)]
pub struct AgentIdentity {
    key: AgentKey,
    token: String,
    certificate: Certificate,
}

impl AgentIdentity {
    /// Pairs a key with its certificate, checking the certificate (against
    /// the api-server's key) names this key and `host`.
    pub fn new(
        key: AgentKey,
        token: &str,
        verifier: &MessageVerifier,
        host: &str,
        now_unix_s: i64,
    ) -> Result<AgentIdentity, IdentityError> {
        let token = token.trim().to_owned();
        let certificate = verifier.certificate(&token, now_unix_s)?;
        certificate.check_host(host)?;
        if certificate.public_key != key.public_key() {
            return Err(IdentityError::Certificate(format!(
                "certificate {} is for another key than this agent's",
                certificate.id
            )));
        }
        Ok(AgentIdentity {
            key,
            token,
            certificate,
        })
    }

    /// Reads `agent-key.pem` and `agent-certificate.jwt` from `dir`.
    pub fn load(
        dir: &Path,
        verifier: &MessageVerifier,
        host: &str,
        now_unix_s: i64,
    ) -> Result<AgentIdentity, IdentityError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|e| IdentityError::Io {
                what: format!("reading {}", path.display()),
                error: e.to_string(),
            })
        };
        let key = AgentKey::from_pem(&read(KEY_FILE)?)?;
        Self::new(key, &read(CERTIFICATE_FILE)?, verifier, host, now_unix_s)
    }

    /// Writes the key (mode 0600) and certificate into `dir`.
    pub fn save(key: &AgentKey, token: &str, dir: &Path) -> Result<(), IdentityError> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let io = |what: String| {
            move |e: std::io::Error| IdentityError::Io {
                what,
                error: e.to_string(),
            }
        };
        std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
        let key_path = dir.join(KEY_FILE);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&key_path)
            .map_err(io(format!("writing {}", key_path.display())))?;
        file.write_all(key.to_pem().as_bytes())
            .map_err(io(format!("writing {}", key_path.display())))?;
        let cert_path = dir.join(CERTIFICATE_FILE);
        std::fs::write(&cert_path, format!("{}\n", token.trim()))
            .map_err(io(format!("writing {}", cert_path.display())))
    }

    pub fn certificate(&self) -> &Certificate {
        &self.certificate
    }

    /// The header values for `payload` sent on `channel`.
    pub fn sign(&self, channel: Channel, payload: &[u8]) -> MessageSignature<'_> {
        let mut signed = Vec::with_capacity(channel.domain().len() + payload.len());
        signed.extend_from_slice(channel.domain());
        signed.extend_from_slice(payload);
        MessageSignature {
            certificate: &self.token,
            signature: URL_SAFE_NO_PAD.encode(self.key.pair.sign(&signed).as_ref()),
        }
    }
}

/// Checks certificates and message signatures against the api-server's
/// public key. Verified certificates are remembered, so a stream of
/// messages from one agent costs one signature check each.
pub struct MessageVerifier {
    key: DecodingKey,
    verified: Mutex<HashMap<String, Certificate>>,
}

impl MessageVerifier {
    /// From the api-server's SPKI PEM public key (the command key's).
    pub fn from_public_pem(pem: &str) -> Result<MessageVerifier, IdentityError> {
        let key = DecodingKey::from_ed_pem(pem.as_bytes())
            .map_err(|e| IdentityError::Key(e.to_string()))?;
        Ok(MessageVerifier {
            key,
            verified: Mutex::new(HashMap::new()),
        })
    }

    /// Verifies a certificate token and its validity at `now_unix_s`.
    pub fn certificate(&self, token: &str, now_unix_s: i64) -> Result<Certificate, IdentityError> {
        let cached = self
            .verified
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(token)
            .cloned();
        let certificate = match cached {
            Some(certificate) => certificate,
            None => {
                let certificate = self.decode(token)?;
                let mut verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
                if verified.len() >= MAX_CACHED_CERTIFICATES {
                    verified.clear();
                }
                verified.insert(token.to_owned(), certificate.clone());
                certificate
            }
        };
        certificate.check_time(now_unix_s)?;
        Ok(certificate)
    }

    fn decode(&self, token: &str) -> Result<Certificate, IdentityError> {
        // Times are checked against the caller's clock (check_time).
        let validation = validation_for(CERTIFICATE_AUDIENCE);
        let claims = jsonwebtoken::decode::<Claims>(token, &self.key, &validation)
            .map_err(|e| IdentityError::Certificate(e.to_string()))?
            .claims;
        let public_key = parse_public_key(&claims.key)
            .map_err(|e| IdentityError::Certificate(format!("its key: {e}")))?;
        Ok(Certificate {
            id: claims.jti,
            host: claims.sub,
            public_key,
            issued_at: claims.iat,
            expires_at: claims.exp,
        })
    }

    /// Verifies one message: its certificate, then its signature over
    /// `channel` and `payload`. Returns the certificate, whose host the
    /// caller compares with the host the payload names.
    pub fn verify(
        &self,
        channel: Channel,
        payload: &[u8],
        certificate: Option<&[u8]>,
        signature: Option<&[u8]>,
        now_unix_s: i64,
    ) -> Result<Certificate, IdentityError> {
        let token = certificate.ok_or(IdentityError::Unsigned(CERTIFICATE_HEADER))?;
        let signature = signature.ok_or(IdentityError::Unsigned(SIGNATURE_HEADER))?;
        let token = std::str::from_utf8(token)
            .map_err(|_| IdentityError::Certificate("not UTF-8".into()))?;
        let certificate = self.certificate(token, now_unix_s)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| IdentityError::BadSignature)?;
        let mut signed = Vec::with_capacity(channel.domain().len() + payload.len());
        signed.extend_from_slice(channel.domain());
        signed.extend_from_slice(payload);
        UnparsedPublicKey::new(&ED25519, certificate.public_key)
            .verify(&signed, &signature)
            .map_err(|_| IdentityError::BadSignature)?;
        Ok(certificate)
    }
}

#[cfg(test)]
mod tests;
