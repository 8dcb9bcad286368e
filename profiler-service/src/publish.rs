//! Everything the agent writes to Kafka: snapshots on `odp.stacks` (keyed by
//! profile id), events on `odp.events` (keyed by host id) and unusable
//! commands on the dead-letter topic (keyed as they came).
//!
//! One idempotent, LZ4-compressing producer is shared by all profiles; every
//! send awaits its delivery report so counts in `profile_finished` are what
//! the broker acknowledged.
//!
//! A snapshot the broker does not take (delivery failed or timed out after
//! `message.timeout.ms`) goes to the on-disk [`Spool`], and so does every
//! snapshot while the spool is not empty: that keeps each profile's windows
//! in order, since a profile publishes one window at a time and the spool is
//! FIFO. [`Publisher::spawn_resender`] sends the spool's files oldest first,
//! deleting each only once acknowledged (at least once: a resend cut short
//! by a shutdown may be delivered twice).
//!
//! Every snapshot and event carries the agent's certificate and its
//! signature of the exact bytes sent ([`crate::identity`]), signed when
//! sent: a spooled snapshot is signed by the agent that resends it.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odp_core::cost::CostEventKind;
use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::identity::{AgentIdentity, Channel};
use odp_core::Snapshot;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use odp_plumbing::{Backoff, Topics};

use crate::config::Config;
use crate::error::Error;
use crate::metrics::AgentMetrics;
use crate::spool::{Finished, Spool};
use crate::window::unix_ms;

/// How long a send may wait for room in the local queue.
const QUEUE_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause after a failed resend: 500 ms, doubled up to 30 s while the
/// broker stays away (each attempt already waits up to `message.timeout.ms`).
const RESEND_BACKOFF: Backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(30));

/// What became of a snapshot handed to [`Publisher::snapshot`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// The broker acknowledged it.
    Acknowledged,
    /// Written to the spool, to be resent; not acknowledged yet.
    Spooled,
}

/// Why a snapshot was neither acknowledged nor spooled. (Whether its
/// bytes are a valid snapshot is `odp_core::snapshot::SnapshotError`'s
/// business.)
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// Not delivered and there is no spool.
    #[error("kafka: {0}")]
    Kafka(#[from] KafkaError),
    #[error("cannot spool snapshot: {0}")]
    Spool(#[source] io::Error),
    #[error("snapshot of {0} bytes is larger than the whole spool; dropped")]
    TooLarge(usize),
}

/// The spool shared by the publishing side and the resender.
struct Shared {
    spool: Mutex<Spool>,
    /// Spooled files, readable without the lock (which may be held over
    /// file I/O) for the per-snapshot "is there a backlog" check.
    pending: AtomicUsize,
    /// Wakes the resender when something is spooled.
    wake: Notify,
}

/// Where an unusable command came from, for the dead-letter headers.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
}

#[derive(Clone)]
pub struct Publisher {
    producer: FutureProducer,
    topics: Topics,
    host: String,
    agent_id: String,
    identity: Arc<AgentIdentity>,
    metrics: Arc<AgentMetrics>,
    spool: Option<Arc<Shared>>,
}

impl Publisher {
    /// Creates the producer and opens the spool (indexing the files an
    /// earlier run left, which [`Self::spawn_resender`] sends first).
    pub fn new(config: &Config, metrics: Arc<AgentMetrics>) -> Result<Self, Error> {
        // Windows are cut to --max-message-bytes; the rest is the record's
        // key, headers and batch framing.
        let message_max = (config.max_message_bytes + (64 << 10)).to_string();
        // Defaults an operator may override with --kafka-option (a shorter
        // message.timeout.ms spools sooner when the broker is gone).
        let defaults = [
            ("compression.type", "lz4"),
            // Give up on a message after a minute rather than librdkafka's
            // five: a profile's end (and shutdown) must not hang on a broker
            // that is gone; its snapshots go to the spool instead.
            ("message.timeout.ms", "60000"),
            ("message.max.bytes", message_max.as_str()),
            // No duplicate or reordered batch on a retry. The pipeline
            // drops duplicates by (agent, profile, sequence) anyway, so a
            // broker that cannot take librdkafka's epoch bump may turn it
            // off (the dev stack does: odp_devstack::TANSU_KAFKA_OPTIONS).
            ("enable.idempotence", "true"),
        ];
        let producer: FutureProducer = config
            .kafka
            .client(&defaults)
            .set("client.id", format!("odp-agent-{}", config.agent_id))
            // Events are keyed by host id: with the partitioner the
            // api-server keys commands with, agents find their host's
            // heartbeats in one known partition (`crate::peers`).
            .set("partitioner", "murmur2_random")
            .create()?;
        let spool = match config.spool.max_bytes {
            0 => None,
            max_bytes => {
                let dir = &config.spool.dir;
                let spool = Spool::open(dir, max_bytes)
                    .map_err(|e| Error::Config(format!("--spool-dir {}: {e}", dir.display())))?
                    .replacing_with(record_of_loss);
                if !spool.is_empty() {
                    info!(dir = %dir.display(), snapshots = spool.len(), bytes = spool.bytes(),
                        "spooled snapshots from an earlier run will be resent first");
                }
                metrics.spool_snapshots.set(spool.len() as i64);
                metrics.spool_bytes.set(spool.bytes() as i64);
                Some(Arc::new(Shared {
                    pending: AtomicUsize::new(spool.len()),
                    spool: Mutex::new(spool),
                    wake: Notify::new(),
                }))
            }
        };
        Ok(Publisher {
            producer,
            topics: config.topics.clone(),
            host: config.host_id.clone(),
            agent_id: config.agent_id.clone(),
            identity: Arc::clone(&config.identity),
            metrics,
            spool,
        })
    }

    /// The headers that authenticate `payload` sent on `channel`.
    fn signed(&self, channel: Channel, payload: &[u8]) -> OwnedHeaders {
        odp_plumbing::signed::headers(&self.identity.sign(channel, payload))
    }

    /// Publishes one window, keyed by its profile id, or spools it when the
    /// broker does not take it or older snapshots are still spooled.
    pub async fn snapshot(&self, snapshot: &Snapshot) -> Result<Sent, PublishError> {
        let payload = snapshot.encode();
        let backlog = self
            .spool
            .as_ref()
            .is_some_and(|s| s.pending.load(Ordering::Acquire) > 0);
        if backlog {
            return self.spool(snapshot, payload).await;
        }
        match self.send_stacks(snapshot, &payload).await {
            Ok(()) => Ok(Sent::Acknowledged),
            Err(e) if self.spool.is_some() && !permanent(&e) => {
                warn!(profile_id = %snapshot.profile_id, sequence = snapshot.sequence,
                    error = %e, "snapshot not delivered, spooling it");
                self.spool(snapshot, payload).await
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Sends encoded snapshot bytes and awaits the acknowledgement.
    async fn send_stacks(&self, snapshot: &Snapshot, payload: &[u8]) -> Result<(), KafkaError> {
        let key = snapshot.profile_id.to_string();
        let record = FutureRecord::to(&self.topics.stacks)
            .key(&key)
            .payload(payload)
            .headers(self.signed(Channel::Stacks, payload));
        let delivery = self
            .producer
            .send(record, QUEUE_TIMEOUT)
            .await
            .map_err(|(e, _)| {
                self.metrics.publish_failures.inc();
                e
            })?;
        self.metrics.snapshots_published.inc();
        self.metrics
            .samples_published
            .inc_by(snapshot.total_samples());
        self.metrics.snapshot_bytes.inc_by(payload.len() as u64);
        debug!(profile_id = %snapshot.profile_id, sequence = snapshot.sequence,
            bytes = payload.len(), partition = delivery.partition, offset = delivery.offset,
            "snapshot delivered");
        Ok(())
    }

    async fn spool(&self, snapshot: &Snapshot, payload: Vec<u8>) -> Result<Sent, PublishError> {
        let shared = self.spool.clone().expect("only called with a spool");
        let len = payload.len();
        let pushed = self
            .with_spool(move |spool| spool.push(&payload))
            .await
            .map_err(|e| {
                // Lost: counted with the spool's drops, never silently.
                self.metrics.spool_dropped.inc();
                PublishError::Spool(e)
            })?;
        if pushed.dropped > 0 {
            self.metrics.spool_dropped.inc_by(pushed.dropped);
            warn!(
                dropped = pushed.dropped,
                reported_lost = pushed.replaced,
                "spool full: oldest spooled snapshots dropped"
            );
        }
        if pushed.rejected {
            self.metrics.spool_dropped.inc();
            warn!(profile_id = %snapshot.profile_id, sequence = snapshot.sequence, bytes = len,
                "snapshot larger than the whole spool dropped");
            return Err(PublishError::TooLarge(len));
        }
        self.metrics.snapshots_spooled.inc();
        debug!(profile_id = %snapshot.profile_id, sequence = snapshot.sequence,
            bytes = len, "snapshot spooled");
        shared.wake.notify_one();
        Ok(Sent::Spooled)
    }

    /// Runs a spool operation off the async threads, then refreshes the
    /// pending count and the gauges.
    async fn with_spool<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Spool) -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let shared = self.spool.clone().expect("only called with a spool");
        let metrics = self.metrics.clone();
        tokio::task::spawn_blocking(move || {
            let mut spool = shared.spool.lock().unwrap_or_else(|e| e.into_inner());
            let result = op(&mut spool);
            shared.pending.store(spool.len(), Ordering::Release);
            metrics.spool_snapshots.set(spool.len() as i64);
            metrics.spool_bytes.set(spool.bytes() as i64);
            result
        })
        .await
        .map_err(io::Error::other)?
    }

    /// Starts the task that resends spooled snapshots oldest first (those of
    /// an earlier run included); `None` without a spool.
    pub fn spawn_resender(&self) -> Option<tokio::task::JoinHandle<()>> {
        let shared = self.spool.clone()?;
        let publisher = self.clone();
        Some(tokio::spawn(async move {
            let mut waits = RESEND_BACKOFF.waits();
            loop {
                match publisher.resend_one().await {
                    Ok(true) => waits.reset(),
                    Ok(false) if shared.pending.load(Ordering::Acquire) == 0 => {
                        shared.wake.notified().await;
                    }
                    Ok(false) | Err(_) => tokio::time::sleep(waits.failed()).await,
                }
            }
        }))
    }

    /// Sends the oldest spooled snapshot: `Ok(true)` when the spool moved
    /// on (delivered or discarded), `Ok(false)` when there was nothing to
    /// send or it must be retried.
    async fn resend_one(&self) -> io::Result<bool> {
        let Some((seq, payload)) = self.with_spool(Spool::begin).await? else {
            return Ok(false);
        };
        let snapshot = match Snapshot::decode(&payload) {
            Ok(snapshot) => snapshot,
            Err(e) => {
                // Cannot happen with rename-into-place unless the disk lies;
                // counted with the drops so it is not silent either.
                self.with_spool(move |spool| spool.discard(seq)).await?;
                self.metrics.spool_dropped.inc();
                warn!(seq, error = %e, "undecodable spool file dropped");
                return Ok(true);
            }
        };
        if snapshot.host != self.host {
            // This agent's certificate speaks for its host only: signed by
            // it, the snapshot would be refused as another host's.
            self.with_spool(move |spool| spool.discard(seq)).await?;
            self.metrics.spool_dropped.inc();
            warn!(seq, host = %snapshot.host, profile_id = %snapshot.profile_id,
                "spooled snapshot of another host dropped");
            return Ok(true);
        }
        let delivered = self.send_stacks(&snapshot, &payload).await;
        let ok = delivered.is_ok();
        let finished = self.with_spool(move |spool| spool.finish(seq, ok)).await?;
        match (finished, delivered) {
            (Finished::Delivered, _) => {
                debug!(profile_id = %snapshot.profile_id, sequence = snapshot.sequence,
                    "spooled snapshot resent");
                Ok(true)
            }
            (Finished::Dropped, _) => {
                self.metrics.spool_dropped.inc();
                warn!(profile_id = %snapshot.profile_id, sequence = snapshot.sequence,
                    "spool full: oldest spooled snapshot dropped; its samples are reported lost");
                self.with_spool(move |spool| spool.push_replacement_of(&payload))
                    .await?;
                Ok(true)
            }
            (Finished::Kept, Err(e)) if permanent(&e) => {
                // Retrying would block every snapshot queued behind it.
                self.with_spool(move |spool| spool.discard(seq)).await?;
                self.metrics.spool_dropped.inc();
                warn!(profile_id = %snapshot.profile_id, sequence = snapshot.sequence,
                    error = %e, "spooled snapshot refused by the broker, dropped");
                Ok(true)
            }
            (Finished::Kept, Err(e)) => {
                debug!(error = %e, "resend failed, broker still unreachable");
                Ok(false)
            }
            (Finished::Kept, Ok(())) => Ok(false),
        }
    }

    /// Whether undelivered snapshots go to disk (else they are lost).
    pub fn has_spool(&self) -> bool {
        self.spool.is_some()
    }

    /// Spools a window without trying the broker first: for when deliveries
    /// are already waiting on a slow broker and the window must not wait
    /// behind them. Only with a spool ([`Self::has_spool`]).
    pub async fn spool_now(&self, snapshot: &Snapshot) -> Result<Sent, PublishError> {
        self.spool(snapshot, snapshot.encode()).await
    }

    fn event_json(&self, kind: AgentEventKind) -> Vec<u8> {
        AgentEvent {
            host: self.host.clone(),
            agent_id: self.agent_id.clone(),
            at_ms: unix_ms(),
            kind,
        }
        .to_json()
    }

    /// Queues an event now, in order with the others, and leaves its
    /// delivery to a task of its own that logs a failure: for the sampling
    /// side's events, which must not wait for a slow broker.
    pub fn event_detached(&self, kind: AgentEventKind) {
        let name = event_name(&kind);
        let payload = self.event_json(kind);
        let record = FutureRecord::to(&self.topics.events)
            .key(&self.host)
            .payload(&payload)
            .headers(self.signed(Channel::Events, &payload));
        match self.producer.send_result(record) {
            Ok(delivery) => {
                tokio::spawn(async move {
                    match delivery.await {
                        Ok(Ok(_)) => {}
                        Ok(Err((e, _))) => warn!(event = name, error = %e, "event not delivered"),
                        Err(_) => warn!(event = name, "event dropped with the producer"),
                    }
                });
            }
            Err((e, _)) => warn!(event = name, error = %e, "cannot queue event"),
        }
    }

    /// Publishes an event about this agent, keyed by host id.
    pub async fn event(&self, kind: AgentEventKind) -> Result<(), KafkaError> {
        let payload = self.event_json(kind);
        let record = FutureRecord::to(&self.topics.events)
            .key(&self.host)
            .payload(&payload)
            .headers(self.signed(Channel::Events, &payload));
        self.producer
            .send(record, QUEUE_TIMEOUT)
            .await
            .map_err(|(e, _)| e)?;
        Ok(())
    }

    /// Like [`Self::event`], but a failure is only logged: losing one
    /// lifecycle event must not stop the agent.
    pub async fn event_or_warn(&self, kind: AgentEventKind) {
        let name = event_name(&kind);
        if let Err(e) = self.event(kind).await {
            warn!(event = name, error = %e, "cannot publish event");
        }
    }

    /// Copies an unusable command to the dead-letter topic with the reason
    /// and its origin in headers, the payload untouched.
    pub async fn dead_letter(
        &self,
        key: Option<&[u8]>,
        payload: Option<&[u8]>,
        reason: &str,
        origin: Origin<'_>,
    ) -> Result<(), KafkaError> {
        let partition = origin.partition.to_string();
        let offset = origin.offset.to_string();
        let headers = OwnedHeaders::new()
            .insert(Header {
                key: "odp-reason",
                value: Some(reason),
            })
            .insert(Header {
                key: "odp-source",
                value: Some("profiler-service"),
            })
            .insert(Header {
                key: "odp-host",
                value: Some(self.host.as_str()),
            })
            .insert(Header {
                key: "odp-topic",
                value: Some(origin.topic),
            })
            .insert(Header {
                key: "odp-partition",
                value: Some(partition.as_str()),
            })
            .insert(Header {
                key: "odp-offset",
                value: Some(offset.as_str()),
            });
        let mut record: FutureRecord<'_, [u8], [u8]> =
            FutureRecord::to(&self.topics.dead_letter).headers(headers);
        if let Some(key) = key {
            record = record.key(key);
        }
        if let Some(payload) = payload {
            record = record.payload(payload);
        }
        self.producer
            .send(record, QUEUE_TIMEOUT)
            .await
            .map_err(|(e, _)| e)?;
        Ok(())
    }

    /// Waits for every queued message (blocking: runs off the async threads).
    pub async fn flush(&self, timeout: Duration) {
        let producer = self.producer.clone();
        let result = tokio::task::spawn_blocking(move || producer.flush(timeout)).await;
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => warn!(error = %e, "producer flush incomplete"),
            Err(e) => warn!(error = %e, "producer flush task failed"),
        }
    }
}

/// Refusals that resending cannot change: such a snapshot is not spooled
/// (it would stay first in line forever, holding back the rest).
fn permanent(e: &KafkaError) -> bool {
    use RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(
            C::InvalidMessage
                | C::InvalidMessageSize
                | C::MessageSizeTooLarge
                | C::InvalidRecord
                | C::TopicAuthorizationFailed
                | C::ClusterAuthorizationFailed
        )
    )
}

fn event_name(kind: &AgentEventKind) -> &'static str {
    match kind {
        AgentEventKind::Heartbeat { .. } => "heartbeat",
        AgentEventKind::ProfileStarted { .. } => "profile_started",
        AgentEventKind::ProfileFinished { .. } => "profile_finished",
        AgentEventKind::ProfileFailed { .. } => "profile_failed",
        AgentEventKind::CommandRejected { .. } => "command_rejected",
        AgentEventKind::TriggerFired { .. } => "trigger_fired",
        AgentEventKind::Cost(CostEventKind::ProfileAdjusted { .. }) => "profile_adjusted",
        AgentEventKind::Cost(CostEventKind::WindowStats { .. }) => "window_stats",
        AgentEventKind::Cost(CostEventKind::WaitsSampled { .. }) => "waits_sampled",
    }
}

/// The spool's [`crate::spool::Replace`]: an evicted window becomes the
/// record of its loss, which the pipeline stores in its place.
fn record_of_loss(payload: &[u8]) -> Option<Vec<u8>> {
    Some(
        Snapshot::decode(payload)
            .ok()?
            .lost_in_transport()?
            .encode(),
    )
}
