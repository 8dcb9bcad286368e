//! Agents as the pipeline believes them: a command key pair standing in
//! for the api-server's (its public half given to the pipeline), agent
//! identities certified with it, and messages they sign; and the profiles
//! the api-server would have recorded before any agent sends data for
//! them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use odp_core::command::{generate_keypair, CommandSigner};
use odp_core::identity::{
    issue_certificate, AgentIdentity, AgentKey, Channel, MessageSignature, MessageVerifier,
};
use odp_store::{Database, Identities, Inserted, NewIdentity, NewProfile, ProfileStatus, Profiles};
use rdkafka::producer::{FutureProducer, FutureRecord};
use uuid::Uuid;

/// How long the tests' certificates are valid.
const CERTIFICATE_DAYS: i64 = 30;

/// A command key pair: what the api-server issues certificates with.
pub(crate) struct Issuer {
    signer: CommandSigner,
    public_pem: String,
    verifier: MessageVerifier,
}

impl Issuer {
    pub(crate) fn new() -> Issuer {
        let (private, public) = generate_keypair().expect("generate a command key pair");
        Issuer {
            signer: CommandSigner::from_private_pem(&private).unwrap(),
            verifier: MessageVerifier::from_public_pem(&public).unwrap(),
            public_pem: public,
        }
    }

    /// Writes the public key (SPKI PEM) into `dir`, for
    /// `--command-public-key`.
    pub(crate) fn write_public_key(&self, dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(format!("command-{}.pub.pem", Uuid::new_v4().simple()));
        std::fs::write(&path, &self.public_pem).unwrap();
        path
    }

    /// A new agent identity of `host`, certified by this issuer.
    pub(crate) fn identity(&self, host: &str) -> AgentIdentity {
        let key = AgentKey::generate().unwrap();
        let now = odp_plumbing::signed::unix_now();
        let (_, token) = issue_certificate(
            &self.signer,
            host,
            &key.public_key(),
            now - 60,
            now + CERTIFICATE_DAYS * 86_400,
        )
        .unwrap();
        AgentIdentity::new(key, &token, &self.verifier, host, now).unwrap()
    }
}

/// Records `identity` as issued, as the api-server does, so that it can
/// be revoked.
pub(crate) async fn record_identity(db: &Database, identity: &AgentIdentity) {
    let certificate = identity.certificate();
    let at = |unix_s: i64| DateTime::<Utc>::from_timestamp(unix_s, 0).unwrap();
    Identities::new(db)
        .record(&NewIdentity {
            id: certificate.id,
            host: certificate.host.clone(),
            public_key: URL_SAFE_NO_PAD.encode(certificate.public_key),
            issued_at: at(certificate.issued_at),
            expires_at: at(certificate.expires_at),
            issued_by: "test".into(),
        })
        .await
        .unwrap();
}

/// Records a profile of a process on `host`, as the api-server does when
/// it is requested, and moves it to `status` (when not `Requested`).
pub(crate) async fn insert_profile(db: &Database, host: &str, status: ProfileStatus) -> Uuid {
    let id = Uuid::new_v4();
    let new = NewProfile {
        id,
        host: host.into(),
        service: "checkout".into(),
        idempotency_key: None,
        // A target of its own: one live profile per target.
        target: odp_core::Target::ProcessName(id.to_string()),
        duration_ms: 60_000,
        frequency_hz: 99,
        requested_by: "test".into(),
        labels: Default::default(),
        mode: odp_store::ProfileMode::of(None),
        options: Default::default(),
        run_id: None,
    };
    let profiles = Profiles::new(db);
    let Inserted::Created(_) = profiles.insert(&new).await.unwrap() else {
        panic!("a new target creates a profile");
    };
    let path: &[ProfileStatus] = match status {
        ProfileStatus::Requested => &[],
        ProfileStatus::Dispatched => &[ProfileStatus::Dispatched],
        ProfileStatus::Running => &[ProfileStatus::Dispatched, ProfileStatus::Running],
        other => panic!("insert_profile makes live profiles, not {other:?}"),
    };
    for step in path {
        assert!(profiles.transition(id, *step, None).await.unwrap());
    }
    id
}

/// How a test message is sent.
#[derive(Clone, Copy)]
pub(crate) enum Signing<'a> {
    /// As an agent sends it: its certificate and signature in headers.
    By(&'a AgentIdentity),
    /// With no headers at all.
    Unsigned,
}

/// Produces `payload` to `topic`, signed for `channel` as `signing` says,
/// and waits for the broker's acknowledgement.
pub(crate) async fn send(
    producer: &FutureProducer,
    topic: &str,
    key: &str,
    channel: Channel,
    signing: Signing<'_>,
    payload: &[u8],
) {
    let signature: Option<MessageSignature<'_>> = match signing {
        Signing::By(identity) => Some(identity.sign(channel, payload)),
        Signing::Unsigned => None,
    };
    let mut record = FutureRecord::to(topic).key(key).payload(payload);
    if let Some(signature) = &signature {
        record = record.headers(odp_plumbing::signed::headers(signature));
    }
    producer
        .send(record, Duration::from_secs(30))
        .await
        .map_err(|(e, _)| e)
        .expect("produce");
}
