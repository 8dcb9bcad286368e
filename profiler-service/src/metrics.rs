//! The agent's Prometheus metrics: what it published, what failed, which
//! commands it took or refused, and how many profiles run. Its own CPU and
//! memory come with the process gauges of `odp_metrics`.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Default)]
pub struct AgentMetrics {
    pub(crate) snapshots_published: Counter,
    pub(crate) samples_published: Counter,
    pub(crate) snapshot_bytes: Counter,
    pub(crate) publish_failures: Counter,
    commands: Family<OutcomeLabels, Counter>,
    pub(crate) running_profiles: Gauge,
    pub(crate) snapshots_spooled: Counter,
    pub(crate) spool_dropped: Counter,
    pub(crate) spool_snapshots: Gauge,
    pub(crate) spool_bytes: Gauge,
    service_scans: Counter,
    service_scan_seconds: Counter<f64, AtomicU64>,
    triggers_fired: Counter,
    trigger_read_seconds: Counter<f64, AtomicU64>,
}

impl AgentMetrics {
    pub fn register(registry: &mut Registry) -> Arc<Self> {
        let metrics = AgentMetrics::default();
        let r = registry;
        r.register(
            "odp_agent_snapshots_published",
            "Snapshots the broker acknowledged",
            metrics.snapshots_published.clone(),
        );
        r.register(
            "odp_agent_samples_published",
            "Samples in the snapshots the broker acknowledged",
            metrics.samples_published.clone(),
        );
        r.register(
            "odp_agent_snapshot_bytes",
            "Encoded (compressed) bytes of the published snapshots",
            metrics.snapshot_bytes.clone(),
        );
        r.register(
            "odp_agent_publish_failures",
            "Snapshots the broker did not take",
            metrics.publish_failures.clone(),
        );
        r.register(
            "odp_agent_commands",
            "Commands for this host, by outcome (accepted, rejected)",
            metrics.commands.clone(),
        );
        r.register(
            "odp_agent_running_profiles",
            "Profiles running now",
            metrics.running_profiles.clone(),
        );
        r.register(
            "odp_agent_snapshots_spooled",
            "Snapshots written to the on-disk spool because the broker did not take them",
            metrics.snapshots_spooled.clone(),
        );
        r.register(
            "odp_agent_spool_dropped",
            "Snapshots lost to the spool: oldest dropped when full, too large for it, or not writable",
            metrics.spool_dropped.clone(),
        );
        r.register(
            "odp_agent_spool_snapshots",
            "Snapshots waiting in the spool",
            metrics.spool_snapshots.clone(),
        );
        r.register(
            "odp_agent_spool_bytes",
            "Bytes waiting in the spool",
            metrics.spool_bytes.clone(),
        );
        r.register(
            "odp_agent_service_scans",
            "Scans of the host's processes for the defined services (one per heartbeat at most)",
            metrics.service_scans.clone(),
        );
        r.register(
            "odp_agent_service_scan_seconds",
            "Wall-clock seconds spent scanning the host's processes for the defined services",
            metrics.service_scan_seconds.clone(),
        );
        r.register(
            "odp_agent_triggers_fired",
            "Triggers whose condition held on the host and that were reported",
            metrics.triggers_fired.clone(),
        );
        r.register(
            "odp_agent_trigger_read_seconds",
            "Wall-clock seconds spent reading the triggers' processes (once a second while any)",
            metrics.trigger_read_seconds.clone(),
        );
        Arc::new(metrics)
    }

    pub(crate) fn service_scanned(&self, took: Duration) {
        self.service_scans.inc();
        self.service_scan_seconds.inc_by(took.as_secs_f64());
    }

    pub(crate) fn trigger_fired(&self) {
        self.triggers_fired.inc();
    }

    pub(crate) fn triggers_read(&self, took: Duration) {
        self.trigger_read_seconds.inc_by(took.as_secs_f64());
    }

    pub(crate) fn command(&self, outcome: &'static str) {
        self.commands
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }
}
