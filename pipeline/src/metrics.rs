//! The pipeline's Prometheus metrics: what each batch stored, what went
//! to the dead-letter topic, how long batches take, and the consumer lag
//! per partition as librdkafka reports it in its statistics.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabels {
    topic: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PartitionLabels {
    topic: String,
    partition: i32,
}

pub(crate) struct PipelineMetrics {
    messages: Family<TopicLabels, Counter>,
    pub(crate) snapshots_stored: Counter,
    pub(crate) snapshots_duplicate: Counter,
    pub(crate) samples_stored: Counter,
    pub(crate) events_stored: Counter,
    pub(crate) dead_letters: Counter,
    pub(crate) batch_seconds: Histogram,
    pub(crate) commit_failures: Counter,
    pub(crate) profiles_compacted: Counter,
    pub(crate) profiles_rolled_up: Counter,
    pub(crate) service_days_built: Counter,
    pub(crate) clock_corrected: Counter,
    pub(crate) group_rejoins: Counter,
    pub(crate) queue_paused: Counter,
    pub(crate) polling_paused: Gauge,
    pub(crate) unauthenticated: Counter,
    pub(crate) foreign_profile: Counter,
    pub(crate) revoked_identities: Gauge,
    consumer_lag: Family<PartitionLabels, Gauge>,
}

impl PipelineMetrics {
    pub(crate) fn register(registry: &mut Registry) -> Arc<Self> {
        let metrics = PipelineMetrics {
            messages: Family::default(),
            snapshots_stored: Counter::default(),
            snapshots_duplicate: Counter::default(),
            samples_stored: Counter::default(),
            events_stored: Counter::default(),
            dead_letters: Counter::default(),
            batch_seconds: Histogram::new(exponential_buckets(0.005, 2.0, 14)),
            commit_failures: Counter::default(),
            profiles_compacted: Counter::default(),
            profiles_rolled_up: Counter::default(),
            service_days_built: Counter::default(),
            clock_corrected: Counter::default(),
            group_rejoins: Counter::default(),
            queue_paused: Counter::default(),
            polling_paused: Gauge::default(),
            unauthenticated: Counter::default(),
            foreign_profile: Counter::default(),
            revoked_identities: Gauge::default(),
            consumer_lag: Family::default(),
        };
        let r = registry;
        r.register(
            "odp_pipeline_messages",
            "Kafka messages consumed, by topic",
            metrics.messages.clone(),
        );
        r.register(
            "odp_pipeline_snapshots_stored",
            "Snapshots stored in Postgres",
            metrics.snapshots_stored.clone(),
        );
        r.register(
            "odp_pipeline_snapshots_duplicate",
            "Redelivered snapshots recognised as already stored",
            metrics.snapshots_duplicate.clone(),
        );
        r.register(
            "odp_pipeline_samples_stored",
            "Samples stored in Postgres",
            metrics.samples_stored.clone(),
        );
        r.register(
            "odp_pipeline_events_stored",
            "Agent events recorded",
            metrics.events_stored.clone(),
        );
        r.register(
            "odp_pipeline_dead_letters",
            "Messages sent to the dead-letter topic",
            metrics.dead_letters.clone(),
        );
        r.register(
            "odp_pipeline_batch_duration_seconds",
            "Time to store a batch, evaluate rules and commit",
            metrics.batch_seconds.clone(),
        );
        r.register(
            "odp_pipeline_profiles_compacted",
            "Ended profiles whose windows were merged into one profile block",
            metrics.profiles_compacted.clone(),
        );
        r.register(
            "odp_pipeline_profiles_rolled_up",
            "Compacted profiles added to their service's hourly rollups",
            metrics.profiles_rolled_up.clone(),
        );
        r.register(
            "odp_pipeline_service_days_built",
            "Service days built (or rebuilt) from their hour rollups",
            metrics.service_days_built.clone(),
        );
        r.register(
            "odp_pipeline_clock_corrected",
            "Windows and events whose times were moved by their host's clock offset",
            metrics.clock_corrected.clone(),
        );
        r.register(
            "odp_pipeline_group_rejoins",
            "Times the worker rejoined its group, holding no partition while the group's offsets stood still",
            metrics.group_rejoins.clone(),
        );
        r.register(
            "odp_pipeline_commit_failures",
            "Offset commits refused (a rebalance moved the partition); the data was stored",
            metrics.commit_failures.clone(),
        );
        r.register(
            "odp_pipeline_backpressure_pauses",
            "Times polling paused because processing fell behind",
            metrics.queue_paused.clone(),
        );
        r.register(
            "odp_pipeline_polling_paused",
            "1 while polling is paused because processing fell behind",
            metrics.polling_paused.clone(),
        );
        r.register(
            "odp_pipeline_unauthenticated_messages",
            "Messages dead-lettered because no certified, unrevoked identity of the host they name signed them",
            metrics.unauthenticated.clone(),
        );
        r.register(
            "odp_pipeline_foreign_profile_messages",
            "Signed snapshots and events dead-lettered because their profile does not exist or runs on another host",
            metrics.foreign_profile.clone(),
        );
        r.register(
            "odp_pipeline_revoked_identities",
            "Revoked, unexpired agent identities whose messages are refused, as last loaded",
            metrics.revoked_identities.clone(),
        );
        r.register(
            "odp_pipeline_consumer_lag",
            "Messages behind the partition's end, per librdkafka statistics",
            metrics.consumer_lag.clone(),
        );
        Arc::new(metrics)
    }

    pub(crate) fn set_lag(&self, topic: &str, partition: i32, lag: i64) {
        let labels = PartitionLabels {
            topic: topic.to_owned(),
            partition,
        };
        self.consumer_lag.get_or_create(&labels).set(lag);
    }

    /// A revoked partition's lag is its new owner's to report.
    pub(crate) fn clear_lag(&self, topic: &str, partition: i32) {
        let labels = PartitionLabels {
            topic: topic.to_owned(),
            partition,
        };
        self.consumer_lag.remove(&labels);
    }

    pub(crate) fn consumed(&self, topic: &str) {
        self.messages
            .get_or_create(&TopicLabels {
                topic: topic.to_owned(),
            })
            .inc();
    }
}
