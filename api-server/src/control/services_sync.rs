//! Keeps every live agent's service definitions, the identities revoked,
//! and the continuous profiles, current.
//!
//! An agent reports in each heartbeat the digest of the definitions it
//! holds; the api-server sends a signed `sync_services` with the whole set
//! to each live host whose digest differs from the store's: after a
//! service is defined, changed or deleted, and to a new or restarted agent
//! whose set is empty or old. A host is sent the same set again only after
//! `RESEND_AFTER`, long enough for its agent to heartbeat the new digest,
//! so a slow agent is not flooded and a lost command is retried.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use odp_core::command::CommandAction;
use odp_core::service::{ServiceDefinition, SyncServices};
use odp_store::{ContinuousProfiles, Database, Identities, Services, Triggers};

use crate::control::dispatch::Dispatcher;
use crate::control::heartbeats::HeartbeatTracker;

/// How often the definitions and the agents' digests are compared.
const CHECK_EVERY: Duration = Duration::from_secs(2);
/// How long a host is given to report a set it was sent before it is sent
/// again: a few heartbeat intervals.
const RESEND_AFTER: Duration = Duration::from_secs(30);

/// What was last sent to each host: the digest, and when.
#[derive(Debug, Default)]
struct Sent {
    by_host: HashMap<String, (String, Instant)>,
}

impl Sent {
    /// The hosts of `stale` to send `digest` now: those not sent it within
    /// `resend_after` of `now`.
    fn due(
        &mut self,
        stale: Vec<String>,
        digest: &str,
        now: Instant,
        resend_after: Duration,
    ) -> Vec<String> {
        let due: Vec<String> = stale
            .into_iter()
            .filter(|host| match self.by_host.get(host) {
                Some((sent, at)) => sent != digest || now.duration_since(*at) >= resend_after,
                None => true,
            })
            .collect();
        for host in &due {
            self.by_host.insert(host.clone(), (digest.to_owned(), now));
        }
        due
    }
}

/// The sync of the services the store defines now, with the identities
/// revoked and not yet expired (agents ignore what those sign), the
/// enabled continuous profiles and the enabled triggers.
async fn current_sync(db: &Database) -> Result<SyncServices, odp_store::StoreError> {
    let revoked = Identities::new(db).revoked().await?.into_keys().collect();
    let continuous = ContinuousProfiles::new(db.clone()).assignments().await?;
    let definitions: Vec<ServiceDefinition> = Services::new(db)
        .list()
        .await?
        .into_iter()
        .map(|row| ServiceDefinition {
            name: row.service.name,
            target: row.service.target,
        })
        .collect();
    let triggers = Triggers::new(db.clone()).assignments().await?;
    Ok(SyncServices::with_continuous(definitions, revoked, continuous).with_triggers(triggers))
}

/// Compares and sends, every [`CHECK_EVERY`], for as long as the server
/// runs. Hosts count as live while heard within `live_within`.
pub(crate) async fn sync_forever(
    db: Database,
    dispatcher: Arc<Dispatcher>,
    tracker: Arc<HeartbeatTracker>,
    live_within: Duration,
) {
    let mut sent = Sent::default();
    let mut tick = tokio::time::interval(CHECK_EVERY);
    loop {
        tick.tick().await;
        let sync = match current_sync(&db).await {
            Ok(sync) => sync,
            Err(e) => {
                tracing::warn!(error = %e, "reading the service definitions failed");
                continue;
            }
        };
        let stale = tracker.hosts_holding_other_services(&sync.digest, live_within);
        for host in sent.due(stale, &sync.digest, Instant::now(), RESEND_AFTER) {
            let action = CommandAction::SyncServices(sync.clone());
            match dispatcher.send(&host, action).await {
                Ok(_) => tracing::info!(
                    %host,
                    services = sync.services.len(),
                    continuous = sync.continuous.len(),
                    digest = %sync.digest,
                    "service definitions sent"
                ),
                Err(e) => tracing::warn!(%host, error = %e, "sending service definitions failed"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_host_is_sent_a_set_once_until_it_is_due_again() {
        let mut sent = Sent::default();
        let start = Instant::now();
        let wait = Duration::from_secs(30);
        assert_eq!(sent.due(hosts(&["a", "b"]), "d1", start, wait), ["a", "b"]);
        // Still reporting the old set a heartbeat later: not sent again yet.
        let soon = start + Duration::from_secs(5);
        assert!(sent.due(hosts(&["a", "b"]), "d1", soon, wait).is_empty());
        // A new set goes out at once.
        assert_eq!(sent.due(hosts(&["a"]), "d2", soon, wait), ["a"]);
        // The same set again once the host had time to report it.
        let later = start + Duration::from_secs(31);
        assert_eq!(sent.due(hosts(&["b"]), "d1", later, wait), ["b"]);
    }
}
