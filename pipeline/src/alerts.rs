//! Delivering queued alerts as signed webhooks or emails.
//!
//! Deliveries are queued by `odp_store::save_detections` when a rule first
//! flags a profile. The sender claims due ones (several pipelines never
//! claim the same one) and sends each through the [`crate::notify`]er of
//! its channel's kind (a signed webhook, an email). It logs
//! each attempt, and on failure tries again after an exponential backoff
//! until it gives up. Delivery is at least once: a sender that dies between
//! sending and recording sends again once its claim's lease runs out.

use std::time::Duration;

use std::sync::Arc;

use odp_plumbing::Backoff;
use odp_store::Database;
use odp_store::{AttemptOutcome, DueDelivery, StoreError};
use tokio::sync::watch;

pub use crate::notify::webhook::{signature, AlertPayload, RulePayload, StackPayload};
use crate::notify::{NotifierError, Notifiers};
use crate::AlertOptions;

/// Longest wait between two attempts of one delivery.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5 * 60);
/// How long a claim keeps other senders off a delivery; well past
/// [`SEND_TIMEOUT`](crate::notify::SEND_TIMEOUT) so a slow send is never
/// doubled.
const LEASE: Duration = Duration::from_secs(60);
/// Deliveries claimed at once.
const CLAIM_BATCH: u32 = 16;

#[derive(Debug, thiserror::Error)]
pub enum AlertError {
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Notifier(#[from] NotifierError),
}

/// When attempt `attempt` (from 1) has failed: the wait before the next
/// (the base, doubled after each further failure, capped at
/// [`MAX_BACKOFF`]), or `None` once `max_attempts` have been made.
pub fn retry_in(options: &AlertOptions, attempt: u32) -> Option<Duration> {
    let backoff = Backoff::new(options.backoff_base(), MAX_BACKOFF);
    (attempt < options.max_attempts).then(|| backoff.delay(attempt))
}

/// Sends due deliveries.
#[derive(Clone)]
pub struct Sender {
    pool: Database,
    notifiers: Arc<Notifiers>,
    options: AlertOptions,
}

impl Sender {
    pub fn new(pool: Database, options: AlertOptions) -> Result<Sender, AlertError> {
        Ok(Sender {
            pool,
            notifiers: Arc::new(Notifiers::standard(&options)?),
            options,
        })
    }

    /// Claims and sends due deliveries until none is due or `stop` is
    /// raised; returns how many were attempted.
    pub async fn deliver_due(&self, stop: &watch::Receiver<bool>) -> Result<usize, StoreError> {
        let mut attempted = 0;
        loop {
            let due = odp_store::claim_due_deliveries(&self.pool, CLAIM_BATCH, LEASE).await?;
            if due.is_empty() {
                return Ok(attempted);
            }
            for delivery in due {
                // A claimed delivery left unsent comes back after its lease.
                if stopping(stop) {
                    return Ok(attempted);
                }
                let outcome = self.send(&delivery).await;
                odp_store::record_attempt(&self.pool, delivery.id, delivery.attempt, &outcome)
                    .await?;
                attempted += 1;
            }
        }
    }

    /// One attempt; never fails, the outcome says how it went.
    async fn send(&self, d: &DueDelivery) -> AttemptOutcome {
        let sent = match self.notifiers.get(&d.kind) {
            Some(notifier) => notifier.send(d).await,
            // A kind added to the schema before this sender knows it.
            None => {
                let unknown = format!("unknown channel kind {:?}", d.kind);
                Err(crate::notify::Failure::new(unknown.clone(), unknown))
            }
        };
        let failure = match sent {
            Ok(status_code) => {
                tracing::info!(delivery_id = %d.id, profile_id = %d.profile_id, rule_id = %d.rule_id, channel_id = %d.channel_id, kind = %d.kind, attempt = d.attempt, "alert delivered");
                return AttemptOutcome {
                    status_code: Some(status_code),
                    error: None,
                    success: true,
                    retry_in: None,
                };
            }
            Err(failure) => failure,
        };
        // A refused destination is not tried again.
        let retry_in = retry_in(&self.options, d.attempt).filter(|_| failure.retry);
        let error = &failure.detail;
        match retry_in {
            Some(wait) => {
                tracing::warn!(delivery_id = %d.id, kind = %d.kind, attempt = d.attempt, error = %error, retry_in_ms = wait.as_millis() as u64, "alert delivery failed, will retry")
            }
            None => {
                tracing::error!(delivery_id = %d.id, kind = %d.kind, attempt = d.attempt, error = %error, "alert delivery failed, giving up")
            }
        }
        // What the delivery log shows: our reason, not the remote's
        // status or words.
        AttemptOutcome {
            status_code: None,
            error: Some(failure.reason),
            success: false,
            retry_in,
        }
    }
}

/// Sends due deliveries every poll interval until `stop` is raised or its
/// sender dropped.
pub async fn run(sender: Sender, mut stop: watch::Receiver<bool>) {
    tracing::info!(poll_ms = sender.options.poll_ms, "alert sender started");
    while !stopping(&stop) {
        if let Err(e) = sender.deliver_due(&stop).await {
            tracing::warn!(error = %e, "alert delivery pass failed");
        }
        tokio::select! {
            _ = stop.changed() => {}
            _ = tokio::time::sleep(sender.options.poll()) => {}
        }
    }
    tracing::info!("alert sender stopped");
}

fn stopping(stop: &watch::Receiver<bool>) -> bool {
    *stop.borrow() || stop.has_changed().is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_base_up_to_the_cap() {
        let options = AlertOptions {
            max_attempts: 100,
            ..AlertOptions::default()
        };
        let waits: Vec<u64> = (1..=10)
            .map(|n| retry_in(&options, n).unwrap().as_secs())
            .collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]);
        assert_eq!(retry_in(&options, 99), Some(MAX_BACKOFF));
        let fast = AlertOptions {
            backoff_base_ms: 50,
            ..AlertOptions::default()
        };
        assert_eq!(retry_in(&fast, 3), Some(Duration::from_millis(200)));
    }

    #[test]
    fn retries_stop_after_max_attempts() {
        let options = AlertOptions::default();
        assert_eq!(options.max_attempts, 8);
        let schedule: Vec<Option<u64>> = (1..=8)
            .map(|n| retry_in(&options, n).map(|d| d.as_secs()))
            .collect();
        assert_eq!(
            schedule,
            [
                Some(1),
                Some(2),
                Some(4),
                Some(8),
                Some(16),
                Some(32),
                Some(64),
                None
            ]
        );
    }
}
