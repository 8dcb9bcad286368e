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

use crate::control::heartbeats::HeartbeatTracker;
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
    /// The hosts' clock offsets, when heartbeats are followed.
    clocks: Option<Arc<HeartbeatTracker>>,
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
            clocks: None,
        }
    }

    /// Dates each command by its host's clock, as `heartbeats` measured
    /// it ([`command_times`]).
    pub(crate) fn with_clocks(mut self, heartbeats: Arc<HeartbeatTracker>) -> Self {
        self.clocks = Some(heartbeats);
        self
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
        let offset_ms = self.clocks.as_ref().and_then(|c| c.clock_offset_ms(host));
        let (issued_at, expires_at) =
            command_times(chrono::Utc::now().timestamp(), self.ttl_secs, offset_ms);
        let command = Command {
            id: Uuid::new_v4(),
            host: host.to_owned(),
            issued_at,
            expires_at,
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

/// A command's issue and expiry times (unix s) by its host's clock: the
/// agent checks them against that clock, so a host a minute ahead would
/// find a command of a 60 s lifetime already expired, and one hours behind
/// would refuse it as expiring too far out. Offsets under
/// [`odp_store::CLOCK_CORRECTED_FROM_MS`] are a heartbeat's delay, not the
/// clock's, and are ignored. The lifetime stays `ttl_secs` either way.
pub(crate) fn command_times(now_s: i64, ttl_secs: i64, offset_ms: Option<i64>) -> (i64, i64) {
    let shift = offset_ms
        .filter(|o| o.abs() >= odp_store::CLOCK_CORRECTED_FROM_MS)
        .map_or(0, |o| (o as f64 / 1000.0).round() as i64);
    let issued_at = now_s.saturating_add(shift);
    (issued_at, issued_at.saturating_add(ttl_secs))
}

#[cfg(test)]
mod tests {
    use odp_core::command::{generate_keypair, CommandVerifier};

    use super::*;

    #[test]
    fn commands_are_dated_by_their_hosts_clock() {
        let now = 1_800_000_000;
        assert_eq!(command_times(now, 60, None), (now, now + 60));
        assert_eq!(command_times(now, 60, Some(-40)), (now, now + 60));
        assert_eq!(command_times(now, 60, Some(90_400)), (now + 90, now + 150));
        assert_eq!(
            command_times(now, 60, Some(-7_200_600)),
            (now - 7_201, now - 7_141)
        );
    }

    /// What each host's agent makes of a command signed now, checked at
    /// its own clock: refused unless dated by it.
    #[test]
    fn a_skewed_hosts_agent_takes_a_command_only_when_dated_by_its_clock() {
        let (private, public) = generate_keypair().unwrap();
        let signer = CommandSigner::from_private_pem(&private).unwrap();
        let now = chrono::Utc::now().timestamp();
        for offset_ms in [90_000, -7_200_000] {
            let host_now = now + offset_ms / 1000;
            let sign = |(issued_at, expires_at)| {
                signer
                    .sign(&Command {
                        id: Uuid::new_v4(),
                        host: "web-1".into(),
                        issued_at,
                        expires_at,
                        action: CommandAction::Stop {
                            profile_id: Uuid::nil(),
                        },
                    })
                    .unwrap()
            };
            let mut agent = CommandVerifier::from_public_pem(&public, "web-1").unwrap();
            let undated = sign(command_times(now, 60, None));
            assert!(agent.verify(&undated, host_now).is_err(), "{offset_ms}");
            let dated = sign(command_times(now, 60, Some(offset_ms)));
            agent.verify(&dated, host_now).unwrap();
        }
    }
}
