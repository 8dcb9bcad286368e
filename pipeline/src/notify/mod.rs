//! How an alert reaches people: one [`Notifier`] per kind of channel, each
//! in its own file ([`webhook`], [`email`]), registered in
//! [`Notifiers::standard`]. Adding a kind (Slack, PagerDuty) is a file
//! here and a line there; the sender ([`crate::alerts`]) claims, retries
//! and records deliveries whatever their kind.

pub mod email;
pub mod webhook;

use std::future::Future;
use std::pin::Pin;

use odp_store::DueDelivery;

use crate::alerts::AlertError;
use crate::AlertOptions;

/// One attempt's result: the receiver's status (HTTP status, SMTP reply
/// code) when it took the alert, else that status if any and why not.
pub type Sent = Result<u16, (Option<u16>, String)>;

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
    pub fn standard(options: &AlertOptions) -> Result<Self, AlertError> {
        Ok(Notifiers(vec![
            Box::new(webhook::WebhookNotifier::new(options)?),
            Box::new(email::EmailNotifier::new(options)),
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
}
