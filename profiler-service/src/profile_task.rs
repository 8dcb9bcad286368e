//! One running profile as seen from the async side: a dedicated sampling
//! thread ([`crate::sampling_thread`]) feeding a task that publishes what it reports.
//!
//! The channel between them is small on purpose: if Kafka is slow the
//! sampling thread waits, its ring buffers fill and the kernel counts lost
//! samples, instead of the agent buffering windows without bound.

use std::sync::mpsc as std_mpsc;

use odp_core::event::{AgentEventKind, FinishReason};
use tokio::sync::mpsc;
use tracing::{debug, error, warn};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::plugin::Plugins;
use crate::publish::{Publisher, Sent};
use crate::sampling_thread::{self, ProfileSpec, RunnerEvent};
use crate::targets::ProcFs;

/// Asks a running profile to stop; it then flushes its last window.
#[derive(Debug, Clone)]
pub struct StopHandle(std_mpsc::Sender<()>);

impl StopHandle {
    pub fn stop(&self) {
        // A profile that already ended has dropped its receiver: nothing to do.
        let _ = self.0.send(());
    }
}

/// How a profile ended, as published in its last event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Finished {
        reason: FinishReason,
        snapshots: u64,
        samples: u64,
    },
    Failed(String),
}

/// Starts the sampling thread of a profile and returns its stop handle and
/// the future that publishes its results (to be spawned by the caller).
pub fn start(
    plugins: Plugins,
    procfs: ProcFs,
    spec: ProfileSpec,
    publisher: Publisher,
    cost_events: bool,
) -> Result<(
    StopHandle,
    impl std::future::Future<Output = (Uuid, Outcome)>,
)> {
    let (stop_tx, stop_rx) = std_mpsc::channel();
    let (tx, rx) = mpsc::channel(2);
    let thread_spec = spec.clone();
    let name = format!("odp-profile-{}", &spec.profile_id.simple().to_string()[..8]);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            sampling_thread::run(&plugins, &procfs, &thread_spec, &stop_rx, |event| {
                tx.blocking_send(event).is_ok()
            });
        })
        .map_err(Error::Thread)?;
    Ok((
        StopHandle(stop_tx),
        publish(spec, rx, publisher, cost_events),
    ))
}

async fn publish(
    spec: ProfileSpec,
    mut rx: mpsc::Receiver<RunnerEvent>,
    publisher: Publisher,
    cost_events: bool,
) -> (Uuid, Outcome) {
    let profile_id = spec.profile_id;
    let mut snapshots = 0;
    let mut samples = 0;
    let mut spooled = 0u64;
    let mut spooled_samples = 0u64;
    let mut outcome = None;
    while let Some(event) = rx.recv().await {
        match event {
            RunnerEvent::Started {
                event,
                frequency_hz,
                pids,
                runtime,
                runtime_info,
            } => {
                publisher
                    .event_or_warn(AgentEventKind::ProfileStarted {
                        profile_id,
                        event,
                        frequency_hz,
                        pids,
                        language: Some(runtime.language),
                        runtime_version: runtime.version,
                        runtime: runtime_info,
                    })
                    .await;
            }
            RunnerEvent::Window(snapshot) => match publisher.snapshot(&snapshot).await {
                // The counts in `profile_finished` are what the broker had
                // acknowledged when the profile ended; spooled windows are
                // sent later (or dropped and counted if the spool fills).
                Ok(Sent::Acknowledged) => {
                    snapshots += 1;
                    samples += snapshot.total_samples();
                }
                Ok(Sent::Spooled) => {
                    spooled += 1;
                    spooled_samples += snapshot.total_samples();
                }
                Err(e) => warn!(profile_id = %profile_id, sequence = snapshot.sequence,
                    error = %e, "snapshot not delivered"),
            },
            RunnerEvent::Cost(kind) => {
                debug!(profile_id = %profile_id, report = ?kind, "cost control");
                if cost_events {
                    if let Err(e) = publisher.cost_event(kind).await {
                        warn!(profile_id = %profile_id, error = %e, "cannot publish cost report");
                    }
                }
            }
            RunnerEvent::Finished(reason) => {
                outcome = Some(Outcome::Finished {
                    reason,
                    snapshots,
                    samples,
                });
            }
            RunnerEvent::Failed(error) => outcome = Some(Outcome::Failed(error)),
        }
    }
    // The thread dropped its sender without a last word: it panicked.
    let outcome = outcome.unwrap_or_else(|| {
        error!(profile_id = %profile_id, "sampling thread ended without a result");
        Outcome::Failed("sampling thread ended unexpectedly".to_owned())
    });
    if spooled > 0 {
        warn!(profile_id = %profile_id, spooled, "profile ended with spooled snapshots not yet delivered");
    }
    let kind = match &outcome {
        Outcome::Finished {
            reason,
            snapshots,
            samples,
        } => AgentEventKind::ProfileFinished {
            profile_id,
            reason: *reason,
            snapshots: *snapshots,
            samples: *samples,
            spooled_snapshots: spooled,
            spooled_samples,
        },
        Outcome::Failed(error) => AgentEventKind::ProfileFailed {
            profile_id,
            error: error.clone(),
        },
    };
    publisher.event_or_warn(kind).await;
    (profile_id, outcome)
}
