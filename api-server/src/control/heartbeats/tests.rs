//! The tracker fed messages as they come off the consumer: signed by
//! agents with certificates from the command key, or not.

use odp_core::command::{generate_keypair, CommandSigner};
use odp_core::identity::{issue_certificate, AgentIdentity, AgentKey};
use rdkafka::message::{OwnedHeaders, OwnedMessage};
use rdkafka::Timestamp;

use super::*;

/// A key that certifies agents, with the verifier of its public half.
struct Issuer {
    signer: CommandSigner,
    public_pem: String,
}

impl Issuer {
    fn new() -> Issuer {
        let (private, public_pem) = generate_keypair().unwrap();
        Issuer {
            signer: CommandSigner::from_private_pem(&private).unwrap(),
            public_pem,
        }
    }

    fn verifier(&self) -> MessageVerifier {
        MessageVerifier::from_public_pem(&self.public_pem).unwrap()
    }

    /// A new agent of `host` with a certificate from this key, valid from
    /// an hour ago (heartbeats received in the past are checked then).
    fn agent(&self, host: &str) -> AgentIdentity {
        let key = AgentKey::generate().unwrap();
        let now = now_ms().div_euclid(1000);
        let (_, token) = issue_certificate(
            &self.signer,
            host,
            &key.public_key(),
            now - 3600,
            now + 3600,
        )
        .unwrap();
        AgentIdentity::new(key, &token, &self.verifier(), host, now).unwrap()
    }
}

/// The api-server's command key and a tracker that trusts it.
struct Fleet {
    issuer: Issuer,
    tracker: HeartbeatTracker,
}

impl Fleet {
    fn new() -> Fleet {
        let issuer = Issuer::new();
        let tracker = HeartbeatTracker::new(issuer.verifier());
        Fleet { issuer, tracker }
    }

    /// A heartbeat of `host`, signed by a certified agent of `host`,
    /// received as it was sent.
    fn beat(&self, host: &str, timestamp_ms: Option<i64>, at_ms: i64, digest: Option<&str>) {
        let received_ms = timestamp_ms.unwrap_or(at_ms);
        self.beat_received(host, timestamp_ms, at_ms, digest, received_ms);
    }

    /// A heartbeat of `host` received at `received_ms`.
    fn beat_received(
        &self,
        host: &str,
        timestamp_ms: Option<i64>,
        at_ms: i64,
        digest: Option<&str>,
        received_ms: i64,
    ) {
        let agent = self.issuer.agent(host);
        let beat = signed(&agent, heartbeat(host, at_ms, digest), timestamp_ms);
        self.tracker.note(&beat, received_ms).unwrap();
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn heartbeat(host: &str, at_ms: i64, digest: Option<&str>) -> Vec<u8> {
    serde_json::to_vec(&AgentEvent {
        host: host.into(),
        agent_id: "a".into(),
        at_ms,
        kind: AgentEventKind::Heartbeat {
            version: "0".into(),
            running_profiles: vec![],
            plugins: vec![],
            machine_id: None,
            started_at_ms: None,
            labels: Default::default(),
            services: Vec::new(),
            services_digest: digest.map(str::to_owned),
        },
    })
    .unwrap()
}

fn message(
    payload: Vec<u8>,
    timestamp_ms: Option<i64>,
    headers: Option<OwnedHeaders>,
) -> OwnedMessage {
    let timestamp = timestamp_ms.map_or(Timestamp::NotAvailable, Timestamp::CreateTime);
    let topic = "odp.events".to_owned();
    OwnedMessage::new(Some(payload), None, topic, timestamp, 0, 0, headers)
}

/// `payload` as `agent` publishes it: with its certificate and signature.
fn signed(agent: &AgentIdentity, payload: Vec<u8>, timestamp_ms: Option<i64>) -> OwnedMessage {
    let headers = signed::headers(&agent.sign(Channel::Events, &payload));
    message(payload, timestamp_ms, Some(headers))
}

const WITHIN: Duration = Duration::from_secs(30);

#[test]
fn hosts_holding_other_definitions_are_the_live_ones_with_another_digest() {
    let fleet = Fleet::new();
    let now = chrono::Utc::now().timestamp_millis();
    fleet.beat("current", Some(now), 0, Some("d2"));
    fleet.beat("stale", Some(now), 0, Some("d1"));
    fleet.beat("empty", Some(now), 0, Some("e"));
    // An agent that predates service definitions reports no digest.
    fleet.beat("old-agent", Some(now), 0, None);
    fleet.beat("gone", Some(now - 600_000), 0, Some("d1"));
    // A late, older heartbeat does not undo a newer one.
    fleet.beat("synced", Some(now), 0, Some("d2"));
    fleet.beat("synced", Some(now - 5_000), 0, Some("d1"));
    assert_eq!(
        fleet.tracker.hosts_holding_other_services("d2", WITHIN),
        ["empty", "stale"]
    );
}

#[test]
fn remembers_the_latest_heartbeat_per_host() {
    let fleet = Fleet::new();
    let now = chrono::Utc::now().timestamp_millis();
    fleet.beat("web-1", Some(now - 1_000), 0, None);
    fleet.beat("web-1", Some(now - 60_000), 0, None);
    // Without a broker timestamp, the agent's own time.
    fleet.beat("web-2", None, now - 40_000, None);
    let tracker = &fleet.tracker;
    let garbage = message(b"not json".to_vec(), Some(now), None);
    assert!(tracker.note(&garbage, now_ms()).is_ok(), "passed over");
    assert!(tracker.heard_within("web-1", WITHIN));
    assert!(!tracker.heard_within("web-2", WITHIN));
    assert!(!tracker.heard_within("web-3", WITHIN));
}

#[test]
fn a_host_whose_clock_runs_behind_is_live_and_its_offset_known() {
    let fleet = Fleet::new();
    let now = now_ms();
    let behind = -2 * 3_600_000;
    // Sent just now by a clock two hours behind, delivered in 30 ms.
    fleet.beat_received(
        "web-1",
        Some(now + behind - 30),
        now + behind - 30,
        None,
        now,
    );
    fleet.beat_received(
        "web-1",
        Some(now + behind + 970),
        now + behind + 970,
        None,
        now + 1_000,
    );
    let tracker = &fleet.tracker;
    assert!(tracker.heard_within("web-1", WITHIN));
    assert_eq!(tracker.clock_offset_ms("web-1"), Some(behind - 30));
    // One ahead by a minute, and one right.
    fleet.beat_received("web-2", Some(now + 60_000), 0, None, now);
    fleet.beat_received("web-3", Some(now - 5), 0, None, now);
    assert!(tracker.heard_within("web-2", WITHIN));
    assert_eq!(tracker.clock_offset_ms("web-2"), Some(60_000));
    assert_eq!(tracker.clock_offset_ms("web-3"), Some(-5));
}

#[test]
fn only_a_heartbeat_signed_by_a_certified_agent_of_its_host_makes_it_live() {
    let fleet = Fleet::new();
    let tracker = &fleet.tracker;
    let now = chrono::Utc::now().timestamp_millis();
    let beat = || heartbeat("web-1", now, None);

    let unsigned = message(beat(), Some(now), None);
    let refused = tracker.note(&unsigned, now_ms()).unwrap_err();
    assert!(
        matches!(refused, Refused::Identity(IdentityError::Unsigned(_))),
        "{refused}"
    );

    // An agent that certified its own key, with a key of its own.
    let forger = Issuer::new().agent("web-1");
    let refused = tracker.note(&signed(&forger, beat(), Some(now)), now_ms());
    assert!(
        matches!(
            refused,
            Err(Refused::Identity(IdentityError::Certificate(_)))
        ),
        "{refused:?}"
    );

    // A certified agent of another host, speaking for web-1.
    let neighbour = fleet.issuer.agent("web-2");
    let refused = tracker.note(&signed(&neighbour, beat(), Some(now)), now_ms());
    assert!(
        matches!(
            refused,
            Err(Refused::Identity(IdentityError::WrongHost { .. }))
        ),
        "{refused:?}"
    );

    // Web-1's agent, with the payload changed after signing.
    let agent = fleet.issuer.agent("web-1");
    let mut tampered = signed(&agent, heartbeat("web-1", now - 1, None), Some(now));
    let headers = tampered.detach_headers();
    let tampered = message(beat(), Some(now), headers);
    let refused = tracker.note(&tampered, now_ms());
    assert!(
        matches!(refused, Err(Refused::Identity(IdentityError::BadSignature))),
        "{refused:?}"
    );
    assert!(!tracker.heard_within("web-1", WITHIN));

    tracker
        .note(&signed(&agent, beat(), Some(now)), now_ms())
        .unwrap();
    assert!(tracker.heard_within("web-1", WITHIN));
}

#[test]
fn a_revoked_identity_makes_no_host_live() {
    let fleet = Fleet::new();
    let tracker = &fleet.tracker;
    let now = chrono::Utc::now().timestamp_millis();
    let revoked = fleet.issuer.agent("web-1");
    tracker.set_revoked([revoked.certificate().id]);
    let beat = signed(&revoked, heartbeat("web-1", now, None), Some(now));
    let refused = tracker.note(&beat, now_ms());
    assert!(matches!(refused, Err(Refused::Revoked(id)) if id == revoked.certificate().id));
    assert!(!tracker.heard_within("web-1", WITHIN));
    // Lifted (the store no longer lists it), it counts again.
    tracker.set_revoked([]);
    tracker.note(&beat, now_ms()).unwrap();
    assert!(tracker.heard_within("web-1", WITHIN));
}

#[test]
fn refusals_are_logged_at_most_once_a_minute() {
    let fleet = Fleet::new();
    let refused = Refused::Revoked(Uuid::nil());
    fleet.tracker.log_refused(&refused, 1_000_000);
    assert_eq!(
        fleet.tracker.refusal_logged_ms.load(Ordering::Relaxed),
        1_000_000
    );
    fleet.tracker.log_refused(&refused, 1_030_000);
    assert_eq!(
        fleet.tracker.refusal_logged_ms.load(Ordering::Relaxed),
        1_000_000
    );
    fleet.tracker.log_refused(&refused, 1_060_000);
    assert_eq!(
        fleet.tracker.refusal_logged_ms.load(Ordering::Relaxed),
        1_060_000
    );
}
