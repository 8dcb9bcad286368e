//! Whether a message may be stored as what it says it is.
//!
//! Anyone who can produce to Kafka could otherwise write any host's data
//! and move any profile. So every message on the stacks and events topics
//! must carry the certificate the api-server issued its sender and the
//! sender's signature ([`odp_core::identity`]); the payload must name the
//! host the certificate is for; the identity must not be revoked; and a
//! snapshot or lifecycle event must be for a profile that exists and was
//! started on that host. What fails goes to the dead-letter topic with the
//! reason.
//!
//! The first checks are pure and run as a batch is decoded
//! ([`Authenticator`]); the revoked identities are reloaded in the
//! background ([`refresh_revoked`]) and the profiles' hosts looked up once
//! per batch, before it is stored ([`reject_foreign_hosts`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use odp_core::identity::{Certificate, Channel, IdentityError, MessageVerifier};
use odp_store::{Database, Identities, StoreError};
use tokio::sync::watch;
use uuid::Uuid;

use crate::batch::{Decoded, RawMessage, Rejected};
use crate::metrics::PipelineMetrics;

/// How the reason of every message refused for its signature or
/// certificate begins.
pub(crate) const UNAUTHENTICATED: &str = "unauthenticated: ";

/// Revoked, unexpired identity ids and the host each was issued for.
pub(crate) type Revoked = HashMap<Uuid, String>;

/// What decoding a batch checks messages against. Borrowed, so decoding
/// stays free of I/O: the caller brings the revoked set as last loaded and
/// the time.
pub(crate) struct Authenticator<'a> {
    pub(crate) verifier: &'a MessageVerifier,
    pub(crate) revoked: &'a Revoked,
    pub(crate) now_unix_s: i64,
}

impl Authenticator<'_> {
    /// The certificate of a message sent on `channel`, or why the message
    /// is refused. The caller still compares the host its payload names.
    pub(crate) fn authenticate(
        &self,
        channel: Channel,
        message: &RawMessage,
    ) -> Result<Certificate, String> {
        let certificate = self
            .verifier
            .verify(
                channel,
                &message.payload,
                message.certificate.as_deref(),
                message.signature.as_deref(),
                self.now_unix_s,
            )
            .map_err(unauthenticated)?;
        if let Some(host) = self.revoked.get(&certificate.id) {
            return Err(format!(
                "{UNAUTHENTICATED}identity {} of host {host} was revoked",
                certificate.id
            ));
        }
        Ok(certificate)
    }
}

pub(crate) fn unauthenticated(error: IdentityError) -> String {
    format!("{UNAUTHENTICATED}{error}")
}

/// The state decoding threads read the revoked identities from, and the
/// verifier, whose cache of certificates they share.
#[derive(Clone)]
pub(crate) struct Trust {
    pub(crate) verifier: Arc<MessageVerifier>,
    pub(crate) revoked: watch::Receiver<Arc<Revoked>>,
}

impl Trust {
    /// Runs `f` with an authenticator as of now.
    pub(crate) fn with_authenticator<T>(&self, f: impl FnOnce(&Authenticator<'_>) -> T) -> T {
        let revoked = self.revoked.borrow().clone();
        f(&Authenticator {
            verifier: &self.verifier,
            revoked: &revoked,
            now_unix_s: odp_plumbing::signed::unix_now(),
        })
    }
}

pub(crate) async fn load_revoked(db: &Database) -> Result<Revoked, StoreError> {
    Identities::new(db.clone()).revoked().await
}

/// Reloads the revoked identities every `every` until `stop` turns true.
/// A failed reload keeps the set loaded before: a database that is away
/// stops storage as well, so nothing is stored meanwhile on a stale set
/// but what was sent in the window between a revocation and the reload.
pub(crate) async fn refresh_revoked(
    db: Database,
    every: Duration,
    revoked: watch::Sender<Arc<Revoked>>,
    metrics: Arc<PipelineMetrics>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|stopped| *stopped) => return,
        }
        match load_revoked(&db).await {
            Ok(loaded) => {
                let changed = **revoked.borrow() != loaded;
                if changed {
                    tracing::info!(revoked = loaded.len(), "revoked agent identities reloaded");
                }
                metrics.revoked_identities.set(loaded.len() as i64);
                revoked.send_replace(Arc::new(loaded));
            }
            Err(e) => {
                tracing::warn!(error = %e, "reloading revoked agent identities failed; keeping the last set")
            }
        }
    }
}

/// The profiles a batch's snapshots and events name, each once: what
/// [`reject_foreign_hosts`] needs the hosts of.
pub(crate) fn named_profiles(decoded: &Decoded) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = decoded
        .snapshots
        .iter()
        .map(|(_, s)| s.profile_id)
        .chain(decoded.events.iter().filter_map(|(_, e)| e.profile_id()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Why data from `host` must not be stored for `profile_id`, if it must
/// not: `hosts` are those of the existing profiles.
fn refusal(profile_id: Uuid, host: &str, hosts: &HashMap<Uuid, String>) -> Option<String> {
    match hosts.get(&profile_id) {
        None => Some(format!("no profile {profile_id}")),
        Some(started_on) if started_on != host => Some(format!(
            "profile {profile_id} runs on host {started_on}, not {host}"
        )),
        Some(_) => None,
    }
}

/// Moves to the rejected the snapshots and events for a profile that does
/// not exist or was started on another host than the one their (verified)
/// sender is of. `hosts` are the hosts of the profiles
/// [`named_profiles`] found, as the store has them.
pub(crate) fn reject_foreign_hosts(decoded: &mut Decoded, hosts: &HashMap<Uuid, String>) {
    for (message, snapshot) in std::mem::take(&mut decoded.snapshots) {
        match refusal(snapshot.profile_id, &snapshot.host, hosts) {
            Some(reason) => decoded.rejected.push(Rejected { message, reason }),
            None => decoded.snapshots.push((message, snapshot)),
        }
    }
    for (message, event) in std::mem::take(&mut decoded.events) {
        let refused = event
            .profile_id()
            .and_then(|id| refusal(id, &event.host, hosts));
        match refused {
            Some(reason) => decoded.rejected.push(Rejected { message, reason }),
            None => decoded.events.push((message, event)),
        }
    }
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
