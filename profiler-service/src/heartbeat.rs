//! Heartbeats: every interval, the running profiles, the host's labels
//! and which defined services have live processes, from one scan of
//! `/proc` per heartbeat. The same scan tells the continuous profiles
//! ([`crate::continuous`]) which services run here, so the agent never
//! scans twice.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use odp_core::event::AgentEventKind;
use tokio::sync::watch;
use tracing::{debug, warn};
use uuid::Uuid;

use crate::continuous::LiveServices;
use crate::metrics::AgentMetrics;
use crate::publish::Publisher;
use crate::services::ServiceBook;
use crate::targets::ProcFs;

/// What every heartbeat says besides the running profiles and services.
pub(crate) struct Beat {
    pub(crate) every: Duration,
    pub(crate) plugins: Vec<String>,
    pub(crate) machine_id: String,
    pub(crate) started_at_ms: i64,
    /// Discovered and operator labels, fixed for the agent's life.
    pub(crate) labels: BTreeMap<String, String>,
    /// Where the service scan looks (the agent and its helpers left out of
    /// broad targets, as for profiles).
    pub(crate) procfs: ProcFs,
    pub(crate) metrics: Arc<AgentMetrics>,
}

/// Sends a heartbeat every interval until aborted, and gives each scan's
/// result to `scanned` too.
pub(crate) async fn heartbeats(
    publisher: Publisher,
    beat: Beat,
    running: watch::Receiver<Vec<Uuid>>,
    services: watch::Receiver<Arc<ServiceBook>>,
    scanned: watch::Sender<LiveServices>,
) {
    let mut tick = tokio::time::interval(beat.every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for scan in 1u64.. {
        tick.tick().await;
        let book = services.borrow().clone();
        // One scan per heartbeat, the only one: what it reports is at most
        // one interval old.
        let live = live_services(&book, &beat).await;
        scanned.send_replace(LiveServices {
            scan,
            names: live.clone(),
        });
        let running_profiles = running.borrow().clone();
        publisher
            .event_or_warn(AgentEventKind::Heartbeat {
                version: env!("CARGO_PKG_VERSION").to_owned(),
                running_profiles,
                plugins: beat.plugins.clone(),
                machine_id: Some(beat.machine_id.clone()),
                started_at_ms: Some(beat.started_at_ms),
                labels: beat.labels.clone(),
                services: live,
                services_digest: Some(book.digest().to_owned()),
            })
            .await;
    }
}

/// The defined services with live processes now, scanned off the async
/// threads; none (with a warning) when `/proc` cannot be listed.
async fn live_services(book: &Arc<ServiceBook>, beat: &Beat) -> Vec<String> {
    if book.is_empty() {
        return Vec::new();
    }
    let (scan_book, procfs) = (Arc::clone(book), beat.procfs.clone());
    let started = Instant::now();
    let scanned = tokio::task::spawn_blocking(move || scan_book.live(&procfs)).await;
    let took = started.elapsed();
    beat.metrics.service_scanned(took);
    match scanned {
        Ok(Ok(live)) => {
            debug!(
                services = book.definitions().len(),
                live = live.len(),
                took_us = took.as_micros() as u64,
                "service scan"
            );
            live
        }
        Ok(Err(e)) => {
            warn!(error = %e, "cannot scan processes for services");
            Vec::new()
        }
        Err(e) => {
            warn!(error = %e, "service scan failed");
            Vec::new()
        }
    }
}
