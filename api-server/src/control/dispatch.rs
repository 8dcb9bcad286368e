//! Signing commands and publishing them to `odp.commands`, keyed by host.
//!
//! The [`Dispatcher`] signs; a [`CommandPublisher`] carries the signed
//! command. In production that is [`KafkaPublisher`], whose producer uses
//! the Java client's murmur2 partitioner so that the agent, which computes
//! the same hash (`odp_core::partition`), reads only the partition that
//! carries its host's commands. Tests drive the router in-process with a
//! publisher that records what it was given.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use odp_core::command::{Command, CommandAction, CommandSigner};
use odp_plumbing::Kafka;
use rdkafka::producer::{FutureProducer, FutureRecord};
use uuid::Uuid;

use crate::metrics::ApiMetrics;
use crate::service_error::ServiceError;

/// What publishing answers: `Err` says why the broker does not have it.
pub(crate) type PublishFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// Carries a signed command to the agents.
pub(crate) trait CommandPublisher: Send + Sync {
    /// Publishes `token` keyed by `host`; done once the broker has it.
    fn publish<'a>(&'a self, host: &'a str, token: &'a str) -> PublishFuture<'a>;
}

/// Publishes to a Kafka topic with the murmur2 partitioner.
pub(crate) struct KafkaPublisher {
    producer: FutureProducer,
    topic: String,
}

impl KafkaPublisher {
    pub(crate) fn new(kafka: &Kafka, topic: &str) -> Result<Self, rdkafka::error::KafkaError> {
        // Defaults an operator may override with --kafka-option.
        let producer = kafka
            .client(&[
                ("enable.idempotence", "true"),
                ("message.timeout.ms", "15000"),
            ])
            .set("partitioner", "murmur2_random")
            .create()?;
        Ok(KafkaPublisher {
            producer,
            topic: topic.to_owned(),
        })
    }
}

impl CommandPublisher for KafkaPublisher {
    fn publish<'a>(&'a self, host: &'a str, token: &'a str) -> PublishFuture<'a> {
        Box::pin(async move {
            let record = FutureRecord::to(&self.topic).key(host).payload(token);
            self.producer
                .send(record, Duration::from_secs(15))
                .await
                .map(drop)
                .map_err(|(e, _)| e.to_string())
        })
    }
}

pub struct Dispatcher {
    publisher: Arc<dyn CommandPublisher>,
    signer: CommandSigner,
    ttl_secs: i64,
    metrics: Arc<ApiMetrics>,
}

impl Dispatcher {
    pub(crate) fn new(
        publisher: Arc<dyn CommandPublisher>,
        signer: CommandSigner,
        ttl_secs: i64,
        metrics: Arc<ApiMetrics>,
    ) -> Self {
        Dispatcher {
            publisher,
            signer,
            ttl_secs,
            metrics,
        }
    }

    /// Signs `action` for `host` and waits until the broker has it.
    /// Returns the command's id.
    pub async fn send(&self, host: &str, action: CommandAction) -> Result<Uuid, ServiceError> {
        let kind = match &action {
            CommandAction::Start(_) => "start",
            CommandAction::Stop { .. } => "stop",
            CommandAction::Undeploy { .. } => "undeploy",
            CommandAction::SyncServices(_) => "sync_services",
        };
        let now = chrono::Utc::now().timestamp();
        let command = Command {
            id: Uuid::new_v4(),
            host: host.to_owned(),
            issued_at: now,
            expires_at: now + self.ttl_secs,
            action,
        };
        let token = self
            .signer
            .sign(&command)
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        self.publisher.publish(host, &token).await.map_err(|e| {
            self.metrics.command(kind, "failed");
            ServiceError::Unavailable(format!("could not publish the command to Kafka: {e}"))
        })?;
        self.metrics.command(kind, "published");
        tracing::info!(command_id = %command.id, host, "command published");
        Ok(command.id)
    }
}
