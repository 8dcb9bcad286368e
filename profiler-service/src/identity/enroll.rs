//! Enrollment with a one-time token (`--enrollment-token`): an agent
//! started without an identity makes its own key pair, sends only the
//! public half with the token to the api-server (`POST
//! /api/v1/agents/enroll`), and writes the key (mode 0600) and the
//! certificate it gets back into its identity directory, from which it
//! then starts as any agent does. Once the directory holds an identity the
//! token is not used again, so a restart with the same environment is an
//! ordinary start.

use std::path::Path;
use std::time::Duration;

use odp_client::types::EnrollAgentRequest;
use odp_client::ApiClient;
use odp_core::command::public_pem_of;
use odp_core::identity::{AgentIdentity, AgentKey, CERTIFICATE_FILE, KEY_FILE};
use tracing::info;
use uuid::Uuid;

use super::{IdentityPlace, Secret};

/// Tries of an api-server that does not answer (it may be starting too),
/// with the wait before the next doubling from [`FIRST_WAIT`]: about 30 s.
const TRIES: u32 = 5;
const FIRST_WAIT: Duration = Duration::from_secs(2);

/// What the agent enrolls with.
#[derive(Debug, Clone)]
pub struct Enrollment {
    pub token: Secret,
    /// The api-server's base URL, e.g. `https://odp.example.com:8443`.
    pub api_url: String,
    /// The CA certificates (PEM) the api-server's TLS certificate is
    /// checked with; none for a plain-HTTP API.
    pub ca_pem: Option<Vec<u8>>,
}

/// What [`IdentityPlace::enroll_if_new`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enrolled {
    /// The identity just issued, written into the directory.
    Now(Uuid),
    /// The agent has an identity (in the directory or the environment);
    /// the token was not used.
    Already,
}

impl IdentityPlace {
    /// Enrolls an agent of `host` with `enrollment` when this place holds
    /// no identity at all (a half one is left for [`IdentityPlace::load`]
    /// to report). Blocks: it runs before the agent's runtime starts.
    pub fn enroll_if_new(&self, enrollment: &Enrollment, host: &str) -> Result<Enrolled, String> {
        let in_dir = [KEY_FILE, CERTIFICATE_FILE]
            .iter()
            .any(|file| self.dir.join(file).exists());
        if self.key.is_some() || self.certificate.is_some() || in_dir {
            info!(dir = %self.dir.display(), "the agent has an identity; its enrollment token is not used");
            return Ok(Enrolled::Already);
        }
        // A thread of its own, so that this works from any context,
        // inside an async runtime too.
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| format!("cannot start the enrollment's runtime: {e}"))?
                        .block_on(enroll(enrollment, host, &self.dir))
                })
                .join()
                .unwrap_or_else(|_| Err("the enrollment thread panicked".to_owned()))
        })
        .map(Enrolled::Now)
    }
}

async fn enroll(enrollment: &Enrollment, host: &str, dir: &Path) -> Result<Uuid, String> {
    let client = match &enrollment.ca_pem {
        Some(pem) => ApiClient::with_ca(&enrollment.api_url, "", pem).map_err(|e| e.to_string())?,
        None => ApiClient::new(&enrollment.api_url, ""),
    };
    let key = AgentKey::generate().map_err(|e| e.to_string())?;
    let request = EnrollAgentRequest {
        token: enrollment.token.0.trim().to_owned(),
        host: host.to_owned(),
        // Only the public half leaves this machine.
        public_key: public_pem_of(&key.to_pem()).map_err(|e| e.to_string())?,
    };
    let mut wait = FIRST_WAIT;
    let mut tries = 1;
    let issued = loop {
        match client.enroll_agent(&request).await {
            Ok(issued) => break issued,
            // 4xx: the token or the request; asking again changes nothing.
            Err(e) if e.status().is_some_and(|s| (400..500).contains(&s)) => {
                return Err(format!(
                    "the api-server refused the enrollment of host {host}: {e}"
                ))
            }
            Err(e) if tries >= TRIES => {
                return Err(format!(
                    "could not enroll with {} after {tries} tries: {e}",
                    enrollment.api_url
                ))
            }
            Err(e) => {
                info!(error = %e, retry_in = ?wait, "enrollment failed; trying again");
                tokio::time::sleep(wait).await;
                wait *= 2;
                tries += 1;
            }
        }
    };
    AgentIdentity::save(&key, &issued.certificate, dir).map_err(|e| e.to_string())?;
    info!(identity = %issued.id, host, dir = %dir.display(), expires_at = %issued.expires_at,
          "enrolled with the enrollment token");
    Ok(issued.id)
}

#[cfg(test)]
mod tests;
