//! How an alert reaches people: one [`Notifier`] per kind of channel, each
//! in its own file ([`webhook`], [`email`]), registered in
//! [`Notifiers::standard`]. Adding a kind (Slack, PagerDuty) is a file
//! here and a line there; the sender ([`crate::alerts`]) claims, retries
//! and records deliveries whatever their kind.

pub mod email;
pub mod webhook;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use odp_plumbing::egress::EgressError;
use odp_store::DueDelivery;

use crate::AlertOptions;

/// Bound on one webhook request or SMTP exchange.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the notifiers could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum NotifierError {
    #[error("alert http client: {0}")]
    Http(#[from] reqwest::Error),
    #[error("reading alert CA file: {0}")]
    CaFile(#[from] std::io::Error),
}

/// One attempt's result: the receiver's status (HTTP status, SMTP reply
/// code) when it took the alert, else why not.
pub type Sent = Result<u16, Failure>;

/// Why an attempt failed. `reason` is what the delivery log shows, in
/// ODP's words: never what the remote answered (its status, its text),
/// which would make the log a port scanner. `detail` is for the
/// pipeline's own log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: String,
    pub detail: String,
    /// Whether another attempt may go better; a refused destination is
    /// not tried again.
    pub retry: bool,
}

/// The remote took the request and answered with an error.
pub const REMOTE_ERROR: &str = "delivery failed: remote answered with an error";
/// No connection could be made.
pub const CONNECT_FAILED: &str = "delivery failed: could not connect";
/// The remote did not answer in time.
pub const TIMED_OUT: &str = "delivery failed: timed out";
/// Anything else between connecting and the answer.
pub const SEND_FAILED: &str = "delivery failed: the request could not be completed";

impl Failure {
    /// A failure worth retrying.
    pub fn new(reason: impl Into<String>, detail: impl Into<String>) -> Failure {
        Failure {
            reason: reason.into(),
            detail: detail.into(),
            retry: true,
        }
    }

    /// A destination the address policy refuses ("destination resolves
    /// to a loopback address"): final. One that does not resolve may
    /// later.
    pub fn destination(error: EgressError) -> Failure {
        Failure {
            reason: error.to_string(),
            detail: error.to_string(),
            retry: matches!(error, EgressError::Unresolved),
        }
    }
}

/// The policy's refusal somewhere in `error`'s sources (a DNS resolver's
/// error reaches the caller wrapped by the HTTP client).
pub(crate) fn egress_error(error: &(dyn std::error::Error + 'static)) -> Option<EgressError> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(found) = e.downcast_ref::<EgressError>() {
            return Some(found.clone());
        }
        next = e.source();
    }
    None
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

/// An attempt under way (trait objects cannot have async methods).
pub type Sending<'a> = Pin<Box<dyn Future<Output = Sent> + Send + 'a>>;

/// Sends alerts to channels of one kind.
pub trait Notifier: Send + Sync {
    /// The channel kind it serves (`channels.kind`).
    fn kind(&self) -> &'static str;

    /// Makes one attempt to deliver `delivery`; never panics, the result
    /// says how it went.
    fn send<'a>(&'a self, delivery: &'a DueDelivery) -> Sending<'a>;
}

/// The notifiers, by kind.
pub struct Notifiers(Vec<Box<dyn Notifier>>);

impl Notifiers {
    /// Every kind of channel ODP knows, configured from the sender's
    /// options (the CAs webhooks trust, the link emails carry).
    /// Both check every destination against the address policy of
    /// `options.destinations`.
    pub fn standard(options: &AlertOptions) -> Result<Self, NotifierError> {
        let policy = Arc::new(options.destinations.policy());
        Ok(Notifiers(vec![
            Box::new(webhook::WebhookNotifier::new(options, policy.clone())?),
            Box::new(email::EmailNotifier::new(options, policy)),
        ]))
    }

    /// The notifier of channels of `kind`.
    pub fn get(&self, kind: &str) -> Option<&dyn Notifier> {
        self.0.iter().find(|n| n.kind() == kind).map(|n| &**n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_the_store_accepts_has_a_notifier() {
        let notifiers = Notifiers::standard(&AlertOptions::default()).unwrap();
        for kind in ["webhook", "email"] {
            assert_eq!(notifiers.get(kind).map(Notifier::kind), Some(kind));
        }
        assert!(notifiers.get("pager").is_none());
    }

    #[test]
    fn a_refused_destination_is_final_and_said_in_our_words() {
        use odp_plumbing::egress::Refusal;
        let refused = Failure::destination(EgressError::ResolvesTo(Refusal::Loopback));
        assert_eq!(refused.reason, "destination resolves to a loopback address");
        assert!(!refused.retry);
        assert!(Failure::destination(EgressError::Unresolved).retry);
        // As a client wraps its resolver's error.
        #[derive(Debug)]
        struct Wrapped(Box<dyn std::error::Error + Send + Sync>);
        impl std::fmt::Display for Wrapped {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("dns error")
            }
        }
        impl std::error::Error for Wrapped {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&*self.0)
            }
        }
        let wrapped = Wrapped(Box::new(EgressError::Refused(Refusal::LinkLocal)));
        assert_eq!(
            egress_error(&wrapped),
            Some(EgressError::Refused(Refusal::LinkLocal))
        );
        assert_eq!(egress_error(&std::io::Error::other("no")), None);
    }
}
