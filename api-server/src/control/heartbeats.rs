//! Agents' heartbeats read straight off the events topic, so whether a
//! host has a live agent does not wait for the pipeline to store them.
//!
//! A deploy must never start a second agent while one is alive. The
//! `agents` table shows only what the pipeline has stored, and the
//! pipeline can be minutes behind (a restart, a backlog, Postgres away):
//! a start in that gap once deployed a second agent beside a live one.
//! Every api-server replica therefore also follows the events topic from
//! its end, without a consumer group (it commits nothing and takes no
//! partition from anyone), and remembers when each host was last heard.
//!
//! Only heartbeats an agent of the host signed count: the message must
//! verify against the command key's public half (its certificate and its
//! signature, [`odp_core::identity`]), its certificate must name the host
//! the heartbeat speaks for, and the certificate must not be revoked (the
//! revoked ones are read again every 30 s). Anyone who can write to the
//! events topic could otherwise make a dead host look live and keep a
//! deploy from starting its agent.
//!
//! Heartbeats also measure each host's clock ([`clocks`]): a host heard
//! from is dated by its clock less its offset, so a host whose clock runs
//! hours behind is still live, and the offsets are recorded for the
//! pipeline, which places a skewed host's windows by them.

mod clocks;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::identity::{Channel, IdentityError, MessageVerifier};
use odp_plumbing::{signed, Kafka};
use odp_store::{Database, FiringReport, Identities};
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use tokio::sync::mpsc;
use uuid::Uuid;

const METADATA_TIMEOUT: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(5);
/// How often the revoked identities are read again: a revocation takes
/// effect here within this long.
const RELOAD_REVOKED: Duration = Duration::from_secs(30);
/// At most one refused heartbeat is logged this often (unix ms): a host
/// of unsigned agents beats every few seconds.
const LOG_REFUSED_EVERY_MS: i64 = 60_000;
/// How often the hosts' clock offsets that changed are recorded.
const RECORD_CLOCKS: Duration = Duration::from_secs(10);

/// Why a heartbeat does not count.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    #[error(transparent)]
    Identity(#[from] IdentityError),
    #[error("its certificate {0} is revoked")]
    Revoked(Uuid),
}

/// When each host's agents were last heard, unix ms by the message
/// timestamps less the host's clock offset.
pub struct HeartbeatTracker {
    last_heard_ms: Mutex<HashMap<String, i64>>,
    /// Each host's clock offset, from its heartbeats.
    clocks: clocks::HostClocks,
    /// Each host's latest heartbeat's digest of the service definitions
    /// its agent holds (`None` from agents that predate them).
    services_digests: Mutex<HashMap<String, Option<String>>>,
    /// Checks heartbeats against the command key's public half.
    verifier: MessageVerifier,
    /// The ids of revoked certificates, as last read from the store.
    revoked: Mutex<HashSet<Uuid>>,
    /// When a refused heartbeat was last logged, unix ms.
    refusal_logged_ms: AtomicI64,
    /// Where verified trigger reports go ([`crate::trigger_firings`]).
    firings: mpsc::Sender<FiringReport>,
    /// Their receiving end, until the api-server takes it.
    firings_rx: Mutex<Option<mpsc::Receiver<FiringReport>>>,
}

/// Verified trigger reports waiting to be acted on: agents report a
/// trigger at most once per cooldown, so this is never long; past it, a
/// report is dropped with a warning (the agent reports again after its
/// cooldown).
const FIRINGS_QUEUED: usize = 1024;

impl HeartbeatTracker {
    /// Counts the heartbeats that `verifier` verifies.
    pub fn new(verifier: MessageVerifier) -> HeartbeatTracker {
        let (firings, firings_rx) = mpsc::channel(FIRINGS_QUEUED);
        HeartbeatTracker {
            firings,
            firings_rx: Mutex::new(Some(firings_rx)),
            last_heard_ms: Mutex::default(),
            clocks: clocks::HostClocks::default(),
            services_digests: Mutex::default(),
            verifier,
            revoked: Mutex::default(),
            refusal_logged_ms: AtomicI64::new(i64::MIN),
        }
    }

    /// Starts following `topic` in the background, refusing the
    /// identities `db` says are revoked and recording the hosts' clock
    /// offsets there.
    pub fn spawn(
        client: ClientConfig,
        topic: String,
        verifier: MessageVerifier,
        db: Database,
    ) -> Arc<HeartbeatTracker> {
        let tracker = Arc::new(HeartbeatTracker::new(verifier));
        tokio::spawn(reload_revoked(tracker.clone(), Identities::new(db.clone())));
        tokio::spawn(record_clocks(tracker.clone(), db));
        tokio::spawn(follow(tracker.clone(), client, topic));
        tracker
    }

    /// Whether an agent of `host` heartbeated within `within` of now.
    pub fn heard_within(&self, host: &str, within: Duration) -> bool {
        let now_ms = chrono::Utc::now().timestamp_millis();
        let heard = self.last_heard_ms.lock().expect("tracker lock");
        heard
            .get(host)
            .is_some_and(|&at| now_ms - at <= within.as_millis() as i64)
    }

    /// The hosts heard within `within` whose agents hold service
    /// definitions of another digest than `digest`, by host. Agents that
    /// report no digest predate the definitions and are left alone.
    pub fn hosts_holding_other_services(&self, digest: &str, within: Duration) -> Vec<String> {
        let stale: Vec<String> = {
            let digests = self.services_digests.lock().expect("tracker lock");
            digests
                .iter()
                .filter(|(_, held)| held.as_deref().is_some_and(|held| held != digest))
                .map(|(host, _)| host.clone())
                .collect()
        };
        let mut hosts: Vec<String> = stale
            .into_iter()
            .filter(|host| self.heard_within(host, within))
            .collect();
        hosts.sort();
        hosts
    }

    /// How far ahead `host`'s clock runs (negative: behind), in ms, if it
    /// was heard from in the last few minutes.
    pub fn clock_offset_ms(&self, host: &str) -> Option<i64> {
        self.clocks.offset_ms(host)
    }

    /// Replaces the revoked certificate ids.
    pub(crate) fn set_revoked(&self, ids: impl IntoIterator<Item = Uuid>) {
        *self.revoked.lock().expect("tracker lock") = ids.into_iter().collect();
    }

    /// The verified trigger reports, once: the api-server acts on them.
    pub(crate) fn take_firings(&self) -> Option<mpsc::Receiver<FiringReport>> {
        self.firings_rx.lock().expect("tracker lock").take()
    }

    /// Counts `message` when it is a heartbeat, and passes it on when it
    /// is a trigger report, signed by an agent of the host it names under
    /// an identity not revoked; says why not when it is one of those and
    /// is not. Other messages are passed over. `now_ms` is when it was
    /// received.
    pub(crate) fn note<M: Message>(&self, message: &M, now_ms: i64) -> Result<(), Refused> {
        let now_unix_s = now_ms.div_euclid(1000);
        let Some(Ok(event)) = message.payload().map(AgentEvent::from_json) else {
            return Ok(());
        };
        match event.kind {
            AgentEventKind::Heartbeat {
                services_digest, ..
            } => {
                self.verify(message, &event.host, now_unix_s)?;
                let sent = message.timestamp().to_millis().unwrap_or(event.at_ms);
                let offset = self.clocks.note(&event.host, sent, now_ms);
                self.record(event.host, sent.saturating_sub(offset), services_digest);
            }
            AgentEventKind::TriggerFired {
                trigger_id,
                observed,
                held_since_ms,
            } => {
                self.verify(message, &event.host, now_unix_s)?;
                let report = FiringReport {
                    trigger_id,
                    host: event.host,
                    held_since_ms,
                    observed: if observed.is_finite() { observed } else { 0.0 },
                };
                if self.firings.try_send(report).is_err() {
                    tracing::warn!(%trigger_id, "too many trigger reports waiting; one dropped");
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks that `message` is signed by an agent of `host` under an
    /// identity not revoked.
    fn verify<M: Message>(&self, message: &M, host: &str, now_unix_s: i64) -> Result<(), Refused> {
        let certificate = signed::verify(&self.verifier, Channel::Events, message, now_unix_s)?;
        certificate.check_host(host)?;
        if self
            .revoked
            .lock()
            .expect("tracker lock")
            .contains(&certificate.id)
        {
            return Err(Refused::Revoked(certificate.id));
        }
        Ok(())
    }

    /// Remembers a verified heartbeat, unless a later one is known.
    fn record(&self, host: String, at: i64, services_digest: Option<String>) {
        let mut heard = self.last_heard_ms.lock().expect("tracker lock");
        let last = heard.entry(host.clone()).or_insert(at);
        if at >= *last {
            *last = at;
            drop(heard);
            let mut digests = self.services_digests.lock().expect("tracker lock");
            digests.insert(host, services_digest);
        }
    }

    /// Logs `refused`, unless another refusal was logged within the last
    /// minute.
    fn log_refused(&self, refused: &Refused, now_ms: i64) {
        let last = self.refusal_logged_ms.load(Ordering::Relaxed);
        if now_ms.saturating_sub(last) < LOG_REFUSED_EVERY_MS {
            return;
        }
        self.refusal_logged_ms.store(now_ms, Ordering::Relaxed);
        tracing::warn!(
            reason = %refused,
            "a heartbeat or trigger report on the events topic is not believed (at most one \
             such warning a minute)"
        );
    }
}

/// Reads the revoked identities every [`RELOAD_REVOKED`], for as long as
/// it runs; a failed read keeps the last set.
async fn reload_revoked(tracker: Arc<HeartbeatTracker>, identities: Identities) {
    let mut tick = tokio::time::interval(RELOAD_REVOKED);
    loop {
        tick.tick().await;
        match identities.revoked().await {
            Ok(revoked) => tracker.set_revoked(revoked.into_keys()),
            Err(e) => tracing::warn!(error = %e, "reading the revoked agent identities failed"),
        }
    }
}

/// Records the hosts' clock offsets that changed every
/// [`RECORD_CLOCKS`]; a failed write is tried again at the next.
async fn record_clocks(tracker: Arc<HeartbeatTracker>, db: Database) {
    let mut tick = tokio::time::interval(RECORD_CLOCKS);
    loop {
        tick.tick().await;
        let now_ms = chrono::Utc::now().timestamp_millis();
        let due = tracker.clocks.due(now_ms);
        if due.is_empty() {
            continue;
        }
        match odp_store::record_host_clocks(&db, &due).await {
            Ok(()) => tracker.clocks.recorded(&due, now_ms),
            Err(e) => tracing::warn!(error = %e, "recording the hosts' clock offsets failed"),
        }
        for (host, offset_ms) in due
            .iter()
            .filter(|(_, o)| o.abs() >= odp_store::CLOCK_CORRECTED_FROM_MS)
        {
            tracing::warn!(%host, offset_ms, "the host's clock is off; its windows are moved by it");
        }
    }
}

async fn follow(tracker: Arc<HeartbeatTracker>, client: ClientConfig, topic: String) {
    let consumer = loop {
        let assign = tokio::task::spawn_blocking({
            let (client, topic) = (client.clone(), topic.clone());
            move || assign_from_end(&client, &topic)
        });
        match assign.await {
            Ok(Ok(consumer)) => break consumer,
            Ok(Err(e)) => {
                tracing::warn!(%topic, error = %e, "cannot follow heartbeats yet, retrying")
            }
            Err(e) => tracing::error!(error = %e, "heartbeat follower failed"),
        }
        tokio::time::sleep(RETRY).await;
    };
    tracing::info!(%topic, "following agents' heartbeats");
    loop {
        match consumer.recv().await {
            Ok(message) => {
                let now_ms = chrono::Utc::now().timestamp_millis();
                if let Err(refused) = tracker.note(&message, now_ms) {
                    tracker.log_refused(&refused, now_ms);
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "reading heartbeats failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// A consumer of every partition of `topic`, from its end.
fn assign_from_end(
    client: &ClientConfig,
    topic: &str,
) -> Result<StreamConsumer, rdkafka::error::KafkaError> {
    let consumer: StreamConsumer = client.create()?;
    let metadata = consumer.fetch_metadata(Some(topic), METADATA_TIMEOUT)?;
    let partitions = metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic && t.error().is_none())
        .map_or(0, |t| t.partitions().len());
    if partitions == 0 {
        return Err(rdkafka::error::KafkaError::MetadataFetch(
            rdkafka::types::RDKafkaErrorCode::UnknownTopicOrPartition,
        ));
    }
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions as i32 {
        assignment.add_partition_offset(topic, partition, Offset::End)?;
    }
    consumer.assign(&assignment)?;
    Ok(consumer)
}

/// The follower's client settings: a group id librdkafka requires but
/// never uses, as nothing is committed.
pub(crate) fn consumer_config(kafka: &Kafka) -> ClientConfig {
    let mut client = kafka.client(&[]);
    client
        .set(
            "group.id",
            format!("odp-api-heartbeats-{}", uuid::Uuid::new_v4().simple()),
        )
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false");
    client
}

#[cfg(test)]
mod tests;
