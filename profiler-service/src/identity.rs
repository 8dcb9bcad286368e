//! This agent's identity: its own Ed25519 key and the certificate the
//! api-server issued for it ([`odp_core::identity`]), loaded once at
//! start-up.
//!
//! Everything the agent publishes is signed with it ([`crate::publish`]):
//! the pipeline drops unsigned snapshots, so an agent without a usable
//! identity would profile for nothing and does not start. The same
//! api-server key decides which heartbeats of this host count when the
//! agent looks for another agent of its host ([`crate::peers`]).

use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use odp_core::identity::{
    AgentIdentity, AgentKey, Channel, IdentityError, MessageVerifier, CERTIFICATE_FILE, KEY_FILE,
};

use crate::error::Error;

pub mod enroll;

/// The agent key's PKCS#8 PEM, as contents (a deployer's way to hand it
/// over without a file).
pub const KEY_ENV: &str = "ODP_AGENT_KEY";
/// The certificate token, as contents.
pub const CERTIFICATE_ENV: &str = "ODP_AGENT_CERTIFICATE";

/// Text kept out of `Debug` output: a private key.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(pub String);

impl Secret {
    /// The variable's value; unset, empty or not UTF-8 reads as absent.
    pub fn from_env(name: &str) -> Option<Secret> {
        std::env::var(name)
            .ok()
            .filter(|value| !value.trim().is_empty())
            .map(Secret)
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The api-server's public key as the checker of agent messages, shared.
/// (A type of its own so that [`crate::Config`] stays `Debug`.)
#[derive(Clone)]
pub struct Verifier(Arc<MessageVerifier>);

impl Verifier {
    /// From the api-server's SPKI PEM public key.
    pub fn from_public_pem(pem: &str) -> Result<Verifier, IdentityError> {
        MessageVerifier::from_public_pem(pem).map(|v| Verifier(Arc::new(v)))
    }
}

impl Deref for Verifier {
    type Target = MessageVerifier;
    fn deref(&self) -> &MessageVerifier {
        &self.0
    }
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Verifier(..)")
    }
}

/// Where the identity is looked for.
#[derive(Debug, Clone)]
pub struct IdentityPlace {
    /// `agent-key.pem` and `agent-certificate.jwt` in this directory.
    pub dir: PathBuf,
    /// [`KEY_ENV`] and [`CERTIFICATE_ENV`]: used instead of `dir` when both
    /// are given.
    pub key: Option<Secret>,
    pub certificate: Option<String>,
}

impl IdentityPlace {
    /// Loads the identity and checks it is one the api-server (whose key
    /// `verifier` holds, read from `public_key`) issued for `host`, valid
    /// at `now_unix_s`. The error says what is wrong and how to get one.
    pub fn load(
        &self,
        verifier: &MessageVerifier,
        public_key: &Path,
        host: &str,
        now_unix_s: i64,
    ) -> Result<AgentIdentity, Error> {
        self.try_load(verifier, public_key, host, now_unix_s)
            .map_err(|problem| {
                Error::Config(format!(
                    "no usable identity for this agent of host {host}: {problem}. \
                     An agent needs a key and a certificate the api-server issued for its host: \
                     enroll it with `odpctl agents enroll {host} --out {dir}` (admin), \
                     start it with a token from `odpctl agents token create {host}` \
                     (--enrollment-token, with --api-url), or let the api-server deploy it",
                    dir = self.dir.display()
                ))
            })
    }

    fn try_load(
        &self,
        verifier: &MessageVerifier,
        public_key: &Path,
        host: &str,
        now_unix_s: i64,
    ) -> Result<AgentIdentity, String> {
        let half = |set: &str, unset: &str| {
            format!(
                "{set} is set but {unset} is not (set both, or neither to use {})",
                self.dir.display()
            )
        };
        let (key_pem, token, key_from, certificate_from) = match (&self.key, &self.certificate) {
            (Some(key), Some(certificate)) => (
                key.0.clone(),
                certificate.clone(),
                KEY_ENV.to_owned(),
                CERTIFICATE_ENV.to_owned(),
            ),
            (Some(_), None) => return Err(half(KEY_ENV, CERTIFICATE_ENV)),
            (None, Some(_)) => return Err(half(CERTIFICATE_ENV, KEY_ENV)),
            (None, None) => {
                let (key_path, cert_path) =
                    (self.dir.join(KEY_FILE), self.dir.join(CERTIFICATE_FILE));
                let (key, cert) = (
                    std::fs::read_to_string(&key_path),
                    std::fs::read_to_string(&cert_path),
                );
                if not_found(&key) && not_found(&cert) {
                    return Err(if self.dir.is_dir() {
                        format!(
                            "{} holds no identity (no {KEY_FILE} nor {CERTIFICATE_FILE})",
                            self.dir.display()
                        )
                    } else {
                        format!(
                            "the identity directory {} does not exist",
                            self.dir.display()
                        )
                    });
                }
                let contents = |path: &Path, read: io::Result<String>| {
                    read.map_err(|e| match e.kind() {
                        io::ErrorKind::NotFound => format!("{} is missing", path.display()),
                        _ => format!("cannot read {}: {e}", path.display()),
                    })
                };
                (
                    contents(&key_path, key)?,
                    contents(&cert_path, cert)?,
                    key_path.display().to_string(),
                    cert_path.display().to_string(),
                )
            }
        };
        let key = AgentKey::from_pem(&key_pem).map_err(|e| format!("{key_from}: {e}"))?;
        let token = token.trim();
        // Checked here one by one (AgentIdentity::new checks the same) to
        // say which of them is wrong.
        let certificate = verifier
            .certificate(token, now_unix_s)
            .map_err(|e| match e {
                IdentityError::CertificateExpired { id, expires_at } => format!(
                    "its certificate {id} ({certificate_from}) expired {} ago",
                    span(now_unix_s - expires_at)
                ),
                IdentityError::CertificateNotYetValid { id, issued_at } => format!(
                    "its certificate {id} ({certificate_from}) is valid only in {}: \
                     check this machine's clock",
                    span(issued_at - now_unix_s)
                ),
                other => format!(
                    "its certificate ({certificate_from}) was not issued with this \
                     api-server's key ({}): {other}",
                    public_key.display()
                ),
            })?;
        if certificate.host != host {
            return Err(format!(
                "its certificate ({certificate_from}) is for host {:?}, not {host:?} (--host-id)",
                certificate.host
            ));
        }
        if certificate.public_key != key.public_key() {
            return Err(format!(
                "its certificate ({certificate_from}) is for another key than {key_from}"
            ));
        }
        AgentIdentity::new(key, token, verifier, host, now_unix_s).map_err(|e| e.to_string())
    }
}

/// Checks that `identity` signs as an agent of `host` that `verifier`
/// trusts now: for a configuration built by hand.
pub fn check(
    identity: &AgentIdentity,
    verifier: &MessageVerifier,
    host: &str,
    now_unix_s: i64,
) -> Result<(), IdentityError> {
    let probe = identity.sign(Channel::Events, b"");
    verifier
        .verify(
            Channel::Events,
            b"",
            Some(probe.certificate.as_bytes()),
            Some(probe.signature.as_bytes()),
            now_unix_s,
        )?
        .check_host(host)
}

fn not_found(read: &io::Result<String>) -> bool {
    matches!(read, Err(e) if e.kind() == io::ErrorKind::NotFound)
}

/// A length of time as a person reads it.
fn span(secs: i64) -> String {
    let secs = secs.unsigned_abs();
    match secs {
        0..120 => format!("{secs} s"),
        120..7200 => format!("{} min", secs / 60),
        7200..172_800 => format!("{} h", secs / 3600),
        _ => format!("{} days", secs / 86_400),
    }
}

#[cfg(test)]
mod tests;
