//! Identities and signed messages for the crate's unit tests.

use odp_core::command::{generate_keypair, CommandSigner};
use odp_core::identity::{issue_certificate, AgentIdentity, AgentKey, Channel, MessageVerifier};

use super::{Authenticator, Revoked};
use crate::batch::{RawMessage, Sources};

/// The clock the tests' certificates are valid at.
pub(crate) const NOW: i64 = 1_800_000_000;

/// A command key pair standing in for the api-server's.
pub(crate) struct Issuer {
    signer: CommandSigner,
    pub(crate) verifier: MessageVerifier,
}

impl Issuer {
    pub(crate) fn new() -> Issuer {
        let (private, public) = generate_keypair().unwrap();
        Issuer {
            signer: CommandSigner::from_private_pem(&private).unwrap(),
            verifier: MessageVerifier::from_public_pem(&public).unwrap(),
        }
    }

    /// A fresh identity of `host`, valid from an hour before [`NOW`] for
    /// `days` days.
    pub(crate) fn identity(&self, host: &str, days: i64) -> AgentIdentity {
        let key = AgentKey::generate().unwrap();
        let issued_at = NOW - 3600;
        let (_, token) = issue_certificate(
            &self.signer,
            host,
            &key.public_key(),
            issued_at,
            issued_at + days * 86_400,
        )
        .unwrap();
        // Checked against this issuer's key; another issuer's identity is
        // made by that issuer.
        AgentIdentity::new(key, &token, &self.verifier, host, NOW).unwrap()
    }

    /// An authenticator at [`NOW`] refusing `revoked`.
    pub(crate) fn authenticator<'a>(&'a self, revoked: &'a Revoked) -> Authenticator<'a> {
        Authenticator {
            verifier: &self.verifier,
            revoked,
            now_unix_s: NOW,
        }
    }
}

/// Topics `s` (stacks) and `e` (events), no size limit.
pub(crate) const SOURCES: Sources<'static> = Sources {
    stacks_topic: "s",
    events_topic: "e",
    max_bytes: usize::MAX,
};

/// A message on `topic` at `offset`, without headers.
pub(crate) fn unsigned(topic: &str, offset: i64, payload: Vec<u8>) -> RawMessage {
    RawMessage {
        topic: topic.into(),
        partition: 0,
        offset,
        key: None,
        payload,
        certificate: None,
        signature: None,
    }
}

/// A message on `topic` signed by `identity` for `channel`.
pub(crate) fn signed(
    identity: &AgentIdentity,
    channel: Channel,
    topic: &str,
    offset: i64,
    payload: Vec<u8>,
) -> RawMessage {
    let signature = identity.sign(channel, &payload);
    RawMessage {
        certificate: Some(signature.certificate.as_bytes().to_vec()),
        signature: Some(signature.signature.into_bytes()),
        ..unsigned(topic, offset, payload)
    }
}

/// A message on the stacks topic `s` signed for its channel.
pub(crate) fn stacks(identity: &AgentIdentity, offset: i64, payload: Vec<u8>) -> RawMessage {
    signed(identity, Channel::Stacks, "s", offset, payload)
}

/// A message on the events topic `e` signed for its channel.
pub(crate) fn events(identity: &AgentIdentity, offset: i64, payload: Vec<u8>) -> RawMessage {
    signed(identity, Channel::Events, "e", offset, payload)
}
