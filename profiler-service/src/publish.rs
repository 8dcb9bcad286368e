//! Everything the agent writes to Kafka: snapshots on `odp.stacks` (keyed by
//! profile id), events on `odp.events` (keyed by host id) and unusable
//! commands on the dead-letter topic (keyed as they came).
//!
//! One idempotent, LZ4-compressing producer is shared by all profiles; every
//! send awaits its delivery report so counts in `profile_finished` are what
//! the broker acknowledged.

use std::sync::Arc;
use std::time::Duration;

use odp_core::cost::CostEventKind;
use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::Snapshot;
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::ClientConfig;
use tracing::{debug, warn};

use crate::config::{Config, Topics};
use crate::metrics::AgentMetrics;
use crate::window::unix_ms;

/// How long a send may wait for room in the local queue.
const QUEUE_TIMEOUT: Duration = Duration::from_secs(5);

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
    metrics: Arc<AgentMetrics>,
}

impl Publisher {
    pub fn new(config: &Config, metrics: Arc<AgentMetrics>) -> Result<Self, KafkaError> {
        let mut client = ClientConfig::new();
        for (key, value) in &config.kafka_options {
            client.set(key, value);
        }
        let producer: FutureProducer = client
            .set("bootstrap.servers", &config.kafka_bootstrap)
            .set("client.id", format!("odp-agent-{}", config.agent_id))
            .set("enable.idempotence", "true")
            .set("compression.type", "lz4")
            // Give up on a message after a minute rather than librdkafka's
            // five: a profile's end (and shutdown) must not hang on a broker
            // that is gone.
            .set("message.timeout.ms", "60000")
            // A busy 10 s window of a large process can pass the 1 MB
            // default; the broker's own limit still applies.
            .set("message.max.bytes", "16777216")
            .create()?;
        Ok(Publisher {
            producer,
            topics: config.topics.clone(),
            host: config.host_id.clone(),
            agent_id: config.agent_id.clone(),
            metrics,
        })
    }

    /// Publishes one window, keyed by its profile id.
    pub async fn snapshot(&self, snapshot: &Snapshot) -> Result<(), KafkaError> {
        let key = snapshot.profile_id.to_string();
        let payload = snapshot.encode();
        let record = FutureRecord::to(&self.topics.stacks)
            .key(&key)
            .payload(&payload);
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

    /// Publishes an event about this agent, keyed by host id.
    pub async fn event(&self, kind: AgentEventKind) -> Result<(), KafkaError> {
        let event = AgentEvent {
            host: self.host.clone(),
            agent_id: self.agent_id.clone(),
            at_ms: unix_ms(),
            kind,
        };
        let payload = event.to_json();
        let record = FutureRecord::to(&self.topics.events)
            .key(&self.host)
            .payload(&payload);
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

    /// Publishes a cost-control report on the events topic.
    pub async fn cost_event(&self, kind: CostEventKind) -> Result<(), KafkaError> {
        self.event(AgentEventKind::Cost(kind)).await
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

fn event_name(kind: &AgentEventKind) -> &'static str {
    match kind {
        AgentEventKind::Heartbeat { .. } => "heartbeat",
        AgentEventKind::ProfileStarted { .. } => "profile_started",
        AgentEventKind::ProfileFinished { .. } => "profile_finished",
        AgentEventKind::ProfileFailed { .. } => "profile_failed",
        AgentEventKind::CommandRejected { .. } => "command_rejected",
        AgentEventKind::Cost(CostEventKind::ProfileAdjusted { .. }) => "profile_adjusted",
        AgentEventKind::Cost(CostEventKind::WindowStats { .. }) => "window_stats",
    }
}
