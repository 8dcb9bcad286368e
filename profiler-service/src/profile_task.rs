//! One running profile as seen from the async side: a dedicated sampling
//! thread ([`crate::sampling_thread`]) feeding a task that publishes what it reports.
//!
//! The task never waits for the broker while the thread samples: a window
//! is handed to a delivery task of its own, and once
//! `WINDOWS_IN_FLIGHT` windows wait for acknowledgement the next goes to the
//! on-disk spool at once, so the small channel between thread and task
//! drains however slow, frozen or gone Kafka is. Events are queued in
//! order and delivered apart.

use std::sync::mpsc as std_mpsc;

use odp_core::event::{AgentEventKind, FinishReason};
use tokio::sync::mpsc;
use tokio::task::{JoinError, JoinSet};
use tracing::{debug, error, warn};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::plugin::Plugins;
use crate::publish::{PublishError, Publisher, Sent};
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
/// Its windows are numbered from `first_sequence` on: a continuous
/// profile's segment may run in several parts on one agent, whose numbers
/// must not meet ([`crate::continuous`]); 0 for any other profile.
pub fn start(
    plugins: Plugins,
    procfs: ProcFs,
    spec: ProfileSpec,
    publisher: Publisher,
    cost_events: bool,
    first_sequence: u64,
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
        publish(spec, rx, publisher, cost_events, first_sequence),
    ))
}

async fn publish(
    spec: ProfileSpec,
    mut rx: mpsc::Receiver<RunnerEvent>,
    publisher: Publisher,
    cost_events: bool,
    first_sequence: u64,
) -> (Uuid, Outcome) {
    let profile_id = spec.profile_id;
    let mut tally = Tally::default();
    let mut deliveries: JoinSet<Delivered> = JoinSet::new();
    let mut outcome = None;
    loop {
        let event = tokio::select! {
            event = rx.recv() => event,
            Some(done) = deliveries.join_next(), if !deliveries.is_empty() => {
                tally.joined(profile_id, done);
                continue;
            }
        };
        let Some(event) = event else { break };
        match event {
            RunnerEvent::Started {
                event,
                frequency_hz,
                pids,
                runtime,
                runtime_info,
            } => publisher.event_detached(AgentEventKind::ProfileStarted {
                profile_id,
                event,
                frequency_hz,
                pids,
                language: Some(runtime.language),
                runtime_version: runtime.version,
                runtime: runtime_info,
            }),
            RunnerEvent::Window(mut snapshot) => {
                snapshot.sequence += first_sequence;
                let samples = snapshot.total_samples();
                let sequence = snapshot.sequence;
                if deliveries.len() >= WINDOWS_IN_FLIGHT && publisher.has_spool() {
                    // The broker is slow: the window goes to disk now rather
                    // than after the delivery timeout, so the sampling
                    // thread never waits for the transport.
                    let sent = publisher.spool_now(&snapshot).await;
                    tally.count(
                        profile_id,
                        Delivered {
                            sequence,
                            samples,
                            sent,
                        },
                    );
                } else {
                    let publisher = publisher.clone();
                    deliveries.spawn(async move {
                        let sent = publisher.snapshot(&snapshot).await;
                        Delivered {
                            sequence,
                            samples,
                            sent,
                        }
                    });
                }
            }
            RunnerEvent::Cost(kind) => {
                debug!(profile_id = %profile_id, report = ?kind, "cost control");
                if cost_events {
                    publisher.event_detached(AgentEventKind::Cost(kind));
                }
            }
            RunnerEvent::Finished(reason) => outcome = Some(reason),
            RunnerEvent::Failed(error) => {
                outcome = None;
                tally.failed = Some(error);
            }
        }
    }
    // The counts in `profile_finished` are what the broker had acknowledged
    // when the profile ended; spooled windows are sent later (or dropped
    // and counted if the spool fills).
    while let Some(done) = deliveries.join_next().await {
        tally.joined(profile_id, done);
    }
    let outcome = match (outcome, tally.failed.take()) {
        (_, Some(error)) => Outcome::Failed(error),
        (Some(reason), None) => Outcome::Finished {
            reason,
            snapshots: tally.snapshots,
            samples: tally.samples,
        },
        // The thread dropped its sender without a last word: it panicked.
        (None, None) => {
            error!(profile_id = %profile_id, "sampling thread ended without a result");
            Outcome::Failed("sampling thread ended unexpectedly".to_owned())
        }
    };
    if tally.spooled > 0 {
        warn!(profile_id = %profile_id, spooled = tally.spooled,
            "profile ended with spooled snapshots not yet delivered");
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
            spooled_snapshots: tally.spooled,
            spooled_samples: tally.spooled_samples,
        },
        Outcome::Failed(error) => AgentEventKind::ProfileFailed {
            profile_id,
            error: error.clone(),
        },
    };
    publisher.event_or_warn(kind).await;
    (profile_id, outcome)
}

/// Windows awaiting the broker's acknowledgement before the next one is
/// spooled instead: enough for a healthy broker never to spool, few enough
/// that a frozen one costs no sampling.
const WINDOWS_IN_FLIGHT: usize = 2;

/// One window's delivery, as it ended.
struct Delivered {
    sequence: u64,
    samples: u64,
    sent: std::result::Result<Sent, PublishError>,
}

/// What became of a profile's windows, for its `profile_finished`.
#[derive(Default)]
struct Tally {
    snapshots: u64,
    samples: u64,
    spooled: u64,
    spooled_samples: u64,
    failed: Option<String>,
}

impl Tally {
    fn joined(&mut self, profile_id: Uuid, done: std::result::Result<Delivered, JoinError>) {
        match done {
            Ok(done) => self.count(profile_id, done),
            Err(e) => error!(profile_id = %profile_id, error = %e, "snapshot delivery task failed"),
        }
    }

    fn count(&mut self, profile_id: Uuid, done: Delivered) {
        match done.sent {
            Ok(Sent::Acknowledged) => {
                self.snapshots += 1;
                self.samples += done.samples;
            }
            Ok(Sent::Spooled) => {
                self.spooled += 1;
                self.spooled_samples += done.samples;
            }
            Err(e) => warn!(profile_id = %profile_id, sequence = done.sequence,
                error = %e, "snapshot not delivered"),
        }
    }
}
