use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot};

use super::testing::{stacks, unsigned, Issuer, NOW};
use super::*;

fn snapshot(profile_id: Uuid, host: &str) -> Snapshot {
    let mut b = SnapshotBuilder::new();
    b.add(&[Frame::function("main")], 1, 3);
    b.build(SnapshotHeader {
        profile_id,
        host: host.into(),
        agent_id: "a".into(),
        sequence: 0,
        window_start_ms: 0,
        window_end_ms: 1,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 1,
    })
}

fn event(host: &str, kind: AgentEventKind) -> AgentEvent {
    AgentEvent {
        host: host.into(),
        agent_id: "a".into(),
        at_ms: 5,
        kind,
    }
}

fn finished(profile_id: Uuid) -> AgentEventKind {
    AgentEventKind::ProfileFinished {
        profile_id,
        reason: FinishReason::DurationElapsed,
        snapshots: 1,
        samples: 3,
        spooled_snapshots: 0,
        spooled_samples: 0,
    }
}

fn heartbeat() -> AgentEventKind {
    AgentEventKind::Heartbeat {
        version: "1".into(),
        running_profiles: vec![Uuid::new_v4()],
        plugins: vec![],
        machine_id: None,
        started_at_ms: None,
        labels: Default::default(),
        services: vec![],
        services_digest: None,
    }
}

#[test]
fn a_certified_identity_is_authenticated_until_its_certificate_expires() {
    let issuer = Issuer::new();
    let identity = issuer.identity("h", 1);
    let message = stacks(&identity, 0, b"bytes".to_vec());
    let revoked = Revoked::new();
    let certificate = issuer
        .authenticator(&revoked)
        .authenticate(Channel::Stacks, &message)
        .unwrap();
    assert_eq!(certificate.host, "h");
    assert_eq!(certificate.id, identity.certificate().id);

    let later = Authenticator {
        now_unix_s: NOW + 3 * 86_400,
        ..issuer.authenticator(&revoked)
    };
    let expired = later.authenticate(Channel::Stacks, &message).unwrap_err();
    assert!(
        expired.starts_with("unauthenticated: certificate") && expired.contains("expired"),
        "{expired}"
    );
    let unsigned = issuer
        .authenticator(&revoked)
        .authenticate(Channel::Events, &unsigned("e", 0, b"{}".to_vec()))
        .unwrap_err();
    assert_eq!(
        unsigned,
        "unauthenticated: unsigned: the message has no odp-agent-certificate header"
    );
}

#[test]
fn data_for_unknown_profiles_or_another_hosts_is_rejected() {
    let (mine, theirs, unknown) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let hosts = HashMap::from([(mine, "a".to_owned()), (theirs, "b".to_owned())]);
    let raw = |offset| unsigned("x", offset, Vec::new());
    let rejected_by = |reasons: Vec<Rejected>| -> Vec<(i64, String)> {
        reasons
            .into_iter()
            .map(|r| (r.message.offset, r.reason))
            .collect()
    };
    let mut decoded = Decoded {
        snapshots: vec![
            (raw(0), snapshot(mine, "a")),
            (raw(1), snapshot(theirs, "a")),
            (raw(2), snapshot(unknown, "a")),
        ],
        events: vec![
            (raw(3), event("a", finished(mine))),
            (raw(4), event("a", finished(theirs))),
            (raw(5), event("a", finished(unknown))),
            (raw(6), event("a", heartbeat())),
            (
                raw(7),
                event(
                    "a",
                    AgentEventKind::CommandRejected {
                        command_id: None,
                        profile_id: None,
                        reason: "expired".into(),
                    },
                ),
            ),
        ],
        rejected: Vec::new(),
    };
    assert_eq!(named_profiles(&decoded), {
        let mut ids = vec![mine, theirs, unknown];
        ids.sort();
        ids
    });

    reject_foreign_hosts(&mut decoded, &hosts);
    let snapshots: Vec<i64> = decoded.snapshots.iter().map(|(m, _)| m.offset).collect();
    let events: Vec<i64> = decoded.events.iter().map(|(m, _)| m.offset).collect();
    assert_eq!((snapshots, events), (vec![0], vec![3, 6, 7]));
    assert_eq!(
        rejected_by(decoded.rejected),
        [
            (1, format!("profile {theirs} runs on host b, not a")),
            (2, format!("no profile {unknown}")),
            (4, format!("profile {theirs} runs on host b, not a")),
            (5, format!("no profile {unknown}")),
        ]
    );
}
