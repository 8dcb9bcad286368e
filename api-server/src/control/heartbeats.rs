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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odp_core::event::{AgentEvent, AgentEventKind};
use odp_plumbing::Kafka;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

const METADATA_TIMEOUT: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(5);

/// When each host's agents were last heard, unix ms by the message
/// timestamps.
#[derive(Debug, Default)]
pub struct HeartbeatTracker {
    last_heard_ms: Mutex<HashMap<String, i64>>,
    /// Each host's latest heartbeat's digest of the service definitions
    /// its agent holds (`None` from agents that predate them).
    services_digests: Mutex<HashMap<String, Option<String>>>,
}

impl HeartbeatTracker {
    /// Starts following `topic` in the background.
    pub fn spawn(client: ClientConfig, topic: String) -> Arc<HeartbeatTracker> {
        let tracker = Arc::new(HeartbeatTracker::default());
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

    pub(crate) fn note(&self, payload: &[u8], timestamp_ms: Option<i64>) {
        let Ok(event) = AgentEvent::from_json(payload) else {
            return;
        };
        let AgentEventKind::Heartbeat {
            services_digest, ..
        } = event.kind
        else {
            return;
        };
        let at = timestamp_ms.unwrap_or(event.at_ms);
        let mut heard = self.last_heard_ms.lock().expect("tracker lock");
        let last = heard.entry(event.host.clone()).or_insert(at);
        if at >= *last {
            *last = at;
            drop(heard);
            let mut digests = self.services_digests.lock().expect("tracker lock");
            digests.insert(event.host, services_digest);
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
                if let Some(payload) = message.payload() {
                    tracker.note(payload, message.timestamp().to_millis());
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
mod tests {
    use super::*;

    fn beat(host: &str, at_ms: i64) -> Vec<u8> {
        beat_holding(host, at_ms, None)
    }

    fn beat_holding(host: &str, at_ms: i64, digest: Option<&str>) -> Vec<u8> {
        serde_json::to_vec(&AgentEvent {
            host: host.into(),
            agent_id: "a".into(),
            at_ms,
            kind: AgentEventKind::Heartbeat {
                version: "0".into(),
                running_profiles: vec![],
                plugins: vec![],
                machine_id: None,
                started_at_ms: None,
                labels: Default::default(),
                services: Vec::new(),
                services_digest: digest.map(str::to_owned),
            },
        })
        .unwrap()
    }

    #[test]
    fn hosts_holding_other_definitions_are_the_live_ones_with_another_digest() {
        let tracker = HeartbeatTracker::default();
        let now = chrono::Utc::now().timestamp_millis();
        tracker.note(&beat_holding("current", 0, Some("d2")), Some(now));
        tracker.note(&beat_holding("stale", 0, Some("d1")), Some(now));
        tracker.note(&beat_holding("empty", 0, Some("e")), Some(now));
        // An agent that predates service definitions reports no digest.
        tracker.note(&beat_holding("old-agent", 0, None), Some(now));
        tracker.note(&beat_holding("gone", 0, Some("d1")), Some(now - 600_000));
        // A late, older heartbeat does not undo a newer one.
        tracker.note(&beat_holding("synced", 0, Some("d2")), Some(now));
        tracker.note(&beat_holding("synced", 0, Some("d1")), Some(now - 5_000));
        let within = Duration::from_secs(30);
        assert_eq!(
            tracker.hosts_holding_other_services("d2", within),
            ["empty", "stale"]
        );
    }

    #[test]
    fn remembers_the_latest_heartbeat_per_host() {
        let tracker = HeartbeatTracker::default();
        let now = chrono::Utc::now().timestamp_millis();
        tracker.note(&beat("web-1", 0), Some(now - 1_000));
        tracker.note(&beat("web-1", 0), Some(now - 60_000));
        tracker.note(&beat("web-2", now - 40_000), None);
        tracker.note(b"not json", Some(now));
        let within = Duration::from_secs(30);
        assert!(tracker.heard_within("web-1", within));
        assert!(!tracker.heard_within("web-2", within));
        assert!(!tracker.heard_within("web-3", within));
    }
}
