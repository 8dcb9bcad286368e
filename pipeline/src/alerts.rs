//! Delivering queued alerts as signed webhooks or emails.
//!
//! Deliveries are queued by `odp_store::save_detections` when a rule first
//! flags a profile. The sender claims due ones (several pipelines never
//! claim the same one) and sends each by its channel's kind: a webhook
//! POSTs a JSON body signed with the channel's secret (`X-ODP-Signature:
//! sha256=<hex HMAC-SHA256 of the body>`, and the delivery id in
//! `X-ODP-Delivery` so receivers can drop repeats); an email channel mails
//! a plain-text message through its SMTP relay ([`crate::email`]). It logs
//! each attempt, and on failure tries again after an exponential backoff
//! until it gives up. Delivery is at least once: a sender that dies between
//! sending and recording sends again once its claim's lease runs out.

use std::time::Duration;

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use odp_store::{AttemptOutcome, DueDelivery, StoreError};
use serde::Serialize;
use sha2::Sha256;
use sqlx::PgPool;
use tokio::sync::watch;
use uuid::Uuid;

use crate::AlertOptions;

/// Longest wait between two attempts of one delivery.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5 * 60);
/// Bound on one webhook request or SMTP exchange.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a claim keeps other senders off a delivery; well past
/// [`SEND_TIMEOUT`] so a slow send is never doubled.
const LEASE: Duration = Duration::from_secs(60);
/// Deliveries claimed at once.
const CLAIM_BATCH: u32 = 16;

#[derive(Debug, thiserror::Error)]
pub enum AlertError {
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("alert http client: {0}")]
    Http(#[from] reqwest::Error),
    #[error("reading alert CA file: {0}")]
    CaFile(#[from] std::io::Error),
}

/// `sha256=<hex>`: the HMAC-SHA256 of `body` keyed with `secret`.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let mut hex = String::with_capacity(7 + 2 * digest.len());
    hex.push_str("sha256=");
    for byte in digest {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

/// The wait after a delivery's `failures`-th failed attempt (from 1):
/// `base`, then doubled each time, capped at [`MAX_BACKOFF`].
pub fn backoff(base: Duration, failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(31);
    base.saturating_mul(1 << doublings).min(MAX_BACKOFF)
}

/// When attempt `attempt` (from 1) has failed: the wait before the next,
/// or `None` once `max_attempts` have been made.
pub fn retry_in(options: &AlertOptions, attempt: u32) -> Option<Duration> {
    (attempt < options.max_attempts).then(|| backoff(options.backoff_base(), attempt))
}

/// The JSON body of an alert.
#[derive(Debug, Clone, Serialize)]
pub struct AlertPayload {
    pub delivery_id: Uuid,
    pub profile_id: Uuid,
    pub service: String,
    pub host: String,
    pub rule: RulePayload,
    /// Matched samples, percent of the profile's samples.
    pub share: f64,
    pub threshold_pct: f64,
    pub stacks: Vec<StackPayload>,
    pub detected_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RulePayload {
    pub id: String,
    pub title: String,
    pub explanation: String,
    pub fix: String,
    pub link: String,
}

/// One of the heaviest matching stacks, frame names root first.
#[derive(Debug, Clone, Serialize)]
pub struct StackPayload {
    pub count: u64,
    pub frames: Vec<String>,
}

impl AlertPayload {
    pub fn of(d: &DueDelivery) -> AlertPayload {
        AlertPayload {
            delivery_id: d.id,
            profile_id: d.profile_id,
            service: d.service.clone(),
            host: d.host.clone(),
            rule: RulePayload {
                id: d.rule_id.clone(),
                title: d.title.clone(),
                explanation: d.explanation.clone(),
                fix: d.fix.clone(),
                link: d.link.clone(),
            },
            share: d.share,
            threshold_pct: d.threshold_pct,
            stacks: d
                .stacks
                .iter()
                .map(|s| StackPayload {
                    count: s.count,
                    frames: s.frames.clone(),
                })
                .collect(),
            detected_at: d.detected_at,
        }
    }
}

/// Sends due deliveries.
#[derive(Debug, Clone)]
pub struct Sender {
    pool: PgPool,
    http: reqwest::Client,
    options: AlertOptions,
}

impl Sender {
    pub fn new(pool: PgPool, options: AlertOptions) -> Result<Sender, AlertError> {
        let mut builder = reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none());
        if let Some(path) = &options.ca_file {
            for cert in reqwest::Certificate::from_pem_bundle(&std::fs::read(path)?)? {
                builder = builder.add_root_certificate(cert);
            }
        }
        Ok(Sender {
            pool,
            http: builder.build()?,
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
        let sent = match d.kind.as_str() {
            "email" => {
                crate::email::send(d, self.options.profile_base_url.as_deref(), SEND_TIMEOUT)
                    .await
                    .map_err(|f| (f.reply_code, f.error))
            }
            "webhook" => self.post_webhook(d).await,
            // A kind added to the schema before this sender knows it.
            other => Err((None, format!("unknown channel kind {other:?}"))),
        };
        let (status_code, error) = match sent {
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
        let retry_in = retry_in(&self.options, d.attempt);
        match retry_in {
            Some(wait) => {
                tracing::warn!(delivery_id = %d.id, kind = %d.kind, attempt = d.attempt, error = %error, retry_in_ms = wait.as_millis() as u64, "alert delivery failed, will retry")
            }
            None => {
                tracing::error!(delivery_id = %d.id, kind = %d.kind, attempt = d.attempt, error = %error, "alert delivery failed, giving up")
            }
        }
        AttemptOutcome {
            status_code,
            error: Some(error),
            success: false,
            retry_in,
        }
    }

    /// POSTs the signed JSON body; the HTTP status when it was a success,
    /// else the status (if any) and why.
    async fn post_webhook(&self, d: &DueDelivery) -> Result<u16, (Option<u16>, String)> {
        let body = serde_json::to_vec(&AlertPayload::of(d)).expect("alert payload serializes");
        let signature = signature(d.secret.as_bytes(), &body);
        let response = self
            .http
            .post(&d.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("X-ODP-Signature", signature)
            .header("X-ODP-Delivery", d.id.to_string())
            .body(body)
            .send()
            .await;
        match response {
            Ok(r) if r.status().is_success() => Ok(r.status().as_u16()),
            Ok(r) => Err((
                Some(r.status().as_u16()),
                format!("webhook answered {}", r.status()),
            )),
            Err(e) => Err((None, error_chain(&e))),
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

/// An error with its sources, which is where reqwest and lettre put the
/// cause.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hex_hmac_sha256() {
        // RFC 4231 test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_ne!(signature(b"other", b"{}"), signature(b"secret", b"{}"));
        assert_eq!(signature(b"secret", b"{}").len(), 7 + 64);
    }

    #[test]
    fn backoff_doubles_from_the_base_up_to_the_cap() {
        let base = Duration::from_secs(1);
        let waits: Vec<u64> = (1..=10).map(|n| backoff(base, n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]);
        assert_eq!(backoff(base, u32::MAX), MAX_BACKOFF);
        assert_eq!(
            backoff(Duration::from_millis(50), 3),
            Duration::from_millis(200)
        );
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
