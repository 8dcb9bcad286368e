//! Webhook channels: the alert as a JSON body POSTed to the channel's URL,
//! signed with its secret (`X-ODP-Signature: sha256=<hex HMAC-SHA256 of
//! the body>`), with the delivery id in `X-ODP-Delivery` so receivers can
//! drop repeats.
//!
//! The destination is checked against the address policy when the request
//! connects: an IP literal before sending, a name by every address it
//! resolves to, in the resolver the connection uses (so a name cannot
//! resolve to a public address for the check and to an inside one for the
//! connection). No proxy is used and no redirect followed.

use std::net::SocketAddr;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use odp_plumbing::egress::{url_host, EgressPolicy};
use odp_store::DueDelivery;
use serde::Serialize;
use sha2::Sha256;
use uuid::Uuid;

use super::{egress_error, error_chain, Failure, Notifier, NotifierError, Sending, Sent};
use super::{CONNECT_FAILED, REMOTE_ERROR, SEND_FAILED, SEND_TIMEOUT, TIMED_OUT};
use crate::AlertOptions;

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
    /// For a run's alert: the run, whose merged samples `share` is of;
    /// `profile_id` and `host` are then those of the host where the rule
    /// measures most.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<Uuid>,
    /// For a run's alert: the hosts where the rule measures most, highest
    /// first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostPayload>,
    /// For a regression: the profile this one was compared with (the same
    /// hour of last week for a continuous segment, the last run for a
    /// schedule): `GET /api/v1/diff?baseline=<it>&target=<profile_id>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compared_with: Option<Uuid>,
}

/// A host of a run and how much of its samples the rule matched.
#[derive(Debug, Clone, Serialize)]
pub struct HostPayload {
    pub host: String,
    pub profile_id: Uuid,
    pub share: f64,
    pub samples: u64,
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
                title: d.rule.title.clone(),
                explanation: d.rule.explanation.clone(),
                fix: d.rule.fix.clone(),
                link: d.rule.link.clone(),
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
            run_id: d.run_id,
            hosts: d
                .hosts
                .iter()
                .map(|h| HostPayload {
                    host: h.host.clone(),
                    profile_id: h.profile_id,
                    share: h.share,
                    samples: h.samples,
                })
                .collect(),
            compared_with: d.compared_with,
        }
    }
}

/// Resolves names for the HTTP client, handing it only addresses the
/// policy allows; a name with any refused address fails to resolve.
struct CheckedResolver(Arc<EgressPolicy>);

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0.clone();
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let addresses = policy.resolve(&name).await?;
            let addrs: reqwest::dns::Addrs =
                Box::new(addresses.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// Posts alerts to webhook channels.
pub struct WebhookNotifier {
    http: reqwest::Client,
    policy: Arc<EgressPolicy>,
}

impl WebhookNotifier {
    /// A client that trusts the system's CAs and the options' `ca_file`,
    /// connects only to addresses `policy` allows, directly (no proxy),
    /// follows no redirect and gives up after [`SEND_TIMEOUT`].
    pub fn new(options: &AlertOptions, policy: Arc<EgressPolicy>) -> Result<Self, NotifierError> {
        let mut builder = reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(CheckedResolver(policy.clone())));
        if let Some(path) = &options.ca_file {
            for cert in reqwest::Certificate::from_pem_bundle(&std::fs::read(path)?)? {
                builder = builder.add_root_certificate(cert);
            }
        }
        Ok(WebhookNotifier {
            http: builder.build()?,
            policy,
        })
    }

    /// POSTs the signed JSON body; the HTTP status when it was a success,
    /// else why not in our words (the remote's status and body are not
    /// recorded).
    async fn post(&self, d: &DueDelivery) -> Sent {
        // An IP literal never reaches the resolver: checked here.
        url_host(&d.url)
            .and_then(|host| self.policy.check_host(&host))
            .map_err(Failure::destination)?;
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
            Ok(r) => Err(Failure::new(
                REMOTE_ERROR,
                format!("webhook answered {}", r.status()),
            )),
            Err(e) => Err(match egress_error(&e) {
                Some(refused) => Failure::destination(refused),
                None if e.is_timeout() => Failure::new(TIMED_OUT, error_chain(&e)),
                None if e.is_connect() => Failure::new(CONNECT_FAILED, error_chain(&e)),
                None => Failure::new(SEND_FAILED, error_chain(&e)),
            }),
        }
    }
}

impl Notifier for WebhookNotifier {
    fn kind(&self) -> &'static str {
        "webhook"
    }

    fn send<'a>(&'a self, delivery: &'a DueDelivery) -> Sending<'a> {
        Box::pin(self.post(delivery))
    }
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
}
