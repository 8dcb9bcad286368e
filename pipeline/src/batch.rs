//! Turning a batch of raw messages into storable work, sans I/O.

use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::identity::Channel;
use odp_core::Snapshot;

pub(crate) mod authenticity;
pub(crate) mod segments;

use authenticity::{unauthenticated, Authenticator};

/// A message as taken off the consumer, owned so the batch can outlive the
/// poll that produced it.
#[derive(Debug, Clone)]
pub(crate) struct RawMessage {
    pub(crate) topic: String,
    pub(crate) partition: i32,
    pub(crate) offset: i64,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) payload: Vec<u8>,
    /// The sender's certificate and signature headers, as sent.
    pub(crate) certificate: Option<Vec<u8>>,
    pub(crate) signature: Option<Vec<u8>>,
}

#[derive(Debug)]
pub(crate) struct Rejected {
    pub(crate) message: RawMessage,
    pub(crate) reason: String,
}

#[derive(Debug, Default)]
pub(crate) struct Decoded {
    /// Each with the message it was decoded from, whose payload the store
    /// keeps as the snapshot's block (`odp_store::SnapshotToStore`).
    pub(crate) snapshots: Vec<(RawMessage, Snapshot)>,
    pub(crate) events: Vec<(RawMessage, AgentEvent)>,
    pub(crate) rejected: Vec<Rejected>,
}

/// Where messages come from and how large they may be.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sources<'a> {
    pub(crate) stacks_topic: &'a str,
    pub(crate) events_topic: &'a str,
    pub(crate) max_bytes: usize,
}

/// Decodes each message by its topic. A message is rejected, with the
/// reason, when it is over `max_bytes` (unread), is not signed by a
/// certified and unrevoked identity ([`Authenticator`]), is undecodable,
/// or names another host than its certificate's.
pub(crate) fn decode(
    messages: Vec<RawMessage>,
    sources: Sources<'_>,
    auth: &Authenticator<'_>,
) -> Decoded {
    let max_bytes = sources.max_bytes;
    let mut out = Decoded::default();
    for mut message in messages {
        if message.payload.len() > max_bytes {
            let reason = format!(
                "message of {} bytes is over the {max_bytes} byte limit \
                 (--max-message-bytes); its bytes are not kept",
                message.payload.len()
            );
            // The dead-letter producer could not take it either.
            message.payload = Vec::new();
            out.rejected.push(Rejected { message, reason });
        } else if message.topic == sources.stacks_topic {
            // Authenticated before it is parsed: nobody's bytes reach the
            // decoder but a certified agent's.
            let snapshot = auth
                .authenticate(Channel::Stacks, &message)
                .and_then(|certificate| {
                    let snapshot = Snapshot::decode(&message.payload)
                        .map_err(|e| format!("undecodable snapshot: {e}"))?;
                    certificate
                        .check_host(&snapshot.host)
                        .map_err(unauthenticated)?;
                    Ok(snapshot)
                });
            match snapshot {
                Ok(snapshot) => out.snapshots.push((message, snapshot)),
                Err(reason) => out.rejected.push(Rejected { message, reason }),
            }
        } else if message.topic == sources.events_topic {
            let event = auth
                .authenticate(Channel::Events, &message)
                .and_then(|certificate| {
                    let event = AgentEvent::from_json(&message.payload)
                        .map_err(|e| format!("undecodable agent event: {e}"))?;
                    certificate
                        .check_host(&event.host)
                        .map_err(unauthenticated)?;
                    Ok(event)
                });
            match event {
                Ok(event) => out.events.push((message, event)),
                Err(reason) => out.rejected.push(Rejected { message, reason }),
            }
        } else {
            out.rejected.push(Rejected {
                reason: format!("message from unexpected topic {}", message.topic),
                message,
            });
        }
    }
    out
}

/// Moves the snapshots storage refused as another agent's (see
/// `odp_store::ForeignSnapshot`) to the rejected, with the reason, so they
/// go to the dead-letter topic.
pub(crate) fn reject_foreign(decoded: &mut Decoded, foreign: &[odp_store::ForeignSnapshot]) {
    if foreign.is_empty() {
        return;
    }
    let snapshots = std::mem::take(&mut decoded.snapshots);
    for (message, snapshot) in snapshots {
        let key = (
            snapshot.agent_id.as_str(),
            snapshot.profile_id,
            snapshot.sequence,
        );
        // Every copy of a refused snapshot (a redelivery in the same batch)
        // is refused.
        match foreign
            .iter()
            .find(|f| (f.agent_id.as_str(), f.profile_id, f.sequence) == key)
        {
            Some(refused) => decoded.rejected.push(Rejected {
                message,
                reason: refused.reason(),
            }),
            None => decoded.snapshots.push((message, snapshot)),
        }
    }
}

/// A batch taken off the queue and decoded: what processing stores and
/// then commits.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// Each message's partition, as the poller counted it in flight.
    pub(crate) partitions: Vec<(String, i32)>,
    /// Each message's position, to commit once the batch is stored.
    pub(crate) positions: Vec<(String, i32, i64)>,
    pub(crate) decoded: Decoded,
}

/// Decodes a batch and notes where its messages came from. Pure CPU work
/// (signatures checked, payloads parsed), so the worker runs it on a
/// blocking thread while the previous batch is being stored.
pub(crate) fn prepare(
    messages: Vec<RawMessage>,
    sources: Sources<'_>,
    auth: &Authenticator<'_>,
) -> Prepared {
    let positions: Vec<(String, i32, i64)> = messages
        .iter()
        .map(|m| (m.topic.clone(), m.partition, m.offset))
        .collect();
    let partitions = positions
        .iter()
        .map(|(topic, partition, _)| (topic.clone(), *partition))
        .collect();
    let decoded = decode(messages, sources, auth);
    Prepared {
        partitions,
        positions,
        decoded,
    }
}

/// The profiles whose detections a batch may change.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ToEvaluate {
    /// Those it brought samples for.
    pub(crate) windows: Vec<uuid::Uuid>,
    /// Those it reports finished.
    pub(crate) finished: Vec<uuid::Uuid>,
}

pub(crate) fn profiles_to_evaluate(decoded: &Decoded) -> ToEvaluate {
    let sorted = |mut ids: Vec<uuid::Uuid>| {
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    let finished = decoded.events.iter().filter_map(|(_, e)| match &e.kind {
        AgentEventKind::ProfileFinished { profile_id, .. } => Some(*profile_id),
        _ => None,
    });
    ToEvaluate {
        windows: sorted(
            decoded
                .snapshots
                .iter()
                .map(|(_, s)| s.profile_id)
                .collect(),
        ),
        finished: sorted(finished.collect()),
    }
}

/// The offsets to commit after a batch: for each partition, one past the
/// highest offset seen.
pub(crate) fn commit_positions(messages: &[(String, i32, i64)]) -> Vec<(String, i32, i64)> {
    let mut best: std::collections::BTreeMap<(&str, i32), i64> = std::collections::BTreeMap::new();
    for (topic, partition, offset) in messages {
        let entry = best.entry((topic.as_str(), *partition)).or_insert(*offset);
        *entry = (*entry).max(*offset);
    }
    best.into_iter()
        .map(|((topic, partition), offset)| (topic.to_owned(), partition, offset + 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::authenticity::testing::{events, stacks, unsigned, Issuer, SOURCES};
    use crate::batch::authenticity::{Revoked, UNAUTHENTICATED};
    use odp_core::event::FinishReason;
    use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
    use odp_core::{EventKind, Frame};

    fn snapshot(host: &str, agent: &str) -> Vec<u8> {
        let mut b = SnapshotBuilder::new();
        b.add(&[Frame::function("main")], 1, 3);
        b.build(SnapshotHeader {
            profile_id: uuid::Uuid::nil(),
            host: host.into(),
            agent_id: agent.into(),
            sequence: 0,
            window_start_ms: 0,
            window_end_ms: 1,
            event: EventKind::CpuClock,
            period: 1,
            frequency_hz: 1,
        })
        .encode()
    }

    fn finished(host: &str) -> Vec<u8> {
        AgentEvent {
            host: host.into(),
            agent_id: "a".into(),
            at_ms: 5,
            kind: AgentEventKind::ProfileFinished {
                profile_id: uuid::Uuid::nil(),
                reason: FinishReason::Stopped,
                snapshots: 1,
                samples: 3,
                spooled_snapshots: 0,
                spooled_samples: 0,
            },
        }
        .to_json()
    }

    #[test]
    fn sorts_messages_and_rejects_garbage_with_reasons() {
        let issuer = Issuer::new();
        let h = issuer.identity("h", 1);
        let decoded = decode(
            vec![
                stacks(&h, 0, b"garbage".to_vec()),
                stacks(&h, 1, snapshot("h", "a")),
                events(&h, 0, b"{}".to_vec()),
                unsigned("x", 0, vec![]),
                events(&h, 1, finished("h")),
            ],
            SOURCES,
            &issuer.authenticator(&Revoked::new()),
        );
        assert_eq!(decoded.snapshots.len(), 1);
        assert_eq!(decoded.events.len(), 1);
        assert_eq!(decoded.rejected.len(), 3);
        assert!(
            decoded.rejected[0].reason.contains("bad magic"),
            "{}",
            decoded.rejected[0].reason
        );
        assert!(decoded.rejected[1]
            .reason
            .starts_with("undecodable agent event"));
        assert_eq!(
            profiles_to_evaluate(&decoded),
            ToEvaluate {
                windows: vec![uuid::Uuid::nil()],
                finished: vec![uuid::Uuid::nil()]
            }
        );
    }

    #[test]
    fn unsigned_forged_and_misdirected_messages_are_unauthenticated() {
        let issuer = Issuer::new();
        let h = issuer.identity("h", 1);
        let other = issuer.identity("other", 1);
        let forger = Issuer::new().identity("h", 1);
        let mut tampered = stacks(&h, 4, snapshot("h", "a"));
        tampered.payload = snapshot("h", "b");
        // Signed for the events topic, sent on the stacks topic.
        let mut replayed = events(&h, 5, snapshot("h", "a"));
        replayed.topic = "s".into();
        let decoded = decode(
            vec![
                unsigned("s", 0, snapshot("h", "a")),
                unsigned("e", 1, finished("h")),
                stacks(&forger, 2, snapshot("h", "a")),
                stacks(&other, 3, snapshot("h", "a")),
                tampered,
                replayed,
                events(&other, 6, finished("h")),
            ],
            SOURCES,
            &issuer.authenticator(&Revoked::new()),
        );
        assert!(decoded.snapshots.is_empty() && decoded.events.is_empty());
        let reasons: Vec<&str> = decoded.rejected.iter().map(|r| r.reason.as_str()).collect();
        assert!(
            reasons.iter().all(|r| r.starts_with(UNAUTHENTICATED)),
            "{reasons:#?}"
        );
        assert!(reasons[0].contains("no odp-agent-certificate header"));
        assert!(reasons[2].starts_with("unauthenticated: invalid certificate"));
        assert!(reasons[3].contains("host \"other\", but the message speaks for host \"h\""));
        for bad in [reasons[4], reasons[5]] {
            assert!(bad.contains("signature does not match"), "{bad}");
        }
        assert!(reasons[6].contains("host \"other\""));
    }

    #[test]
    fn a_revoked_identity_is_refused_and_others_of_its_host_are_not() {
        let issuer = Issuer::new();
        let (revoked, kept) = (issuer.identity("h", 1), issuer.identity("h", 1));
        let set = Revoked::from([(revoked.certificate().id, "h".to_owned())]);
        let decoded = decode(
            vec![
                stacks(&revoked, 0, snapshot("h", "a")),
                stacks(&kept, 1, snapshot("h", "a")),
            ],
            SOURCES,
            &issuer.authenticator(&set),
        );
        assert_eq!(decoded.snapshots.len(), 1);
        assert_eq!(decoded.snapshots[0].0.offset, 1);
        assert_eq!(
            decoded.rejected[0].reason,
            format!(
                "unauthenticated: identity {} of host h was revoked",
                revoked.certificate().id
            )
        );
    }

    #[test]
    fn a_message_over_the_limit_is_rejected_without_its_bytes() {
        let issuer = Issuer::new();
        let h = issuer.identity("h", 1);
        let decoded = decode(
            vec![
                unsigned("s", 0, vec![7; 2048]),
                events(&h, 1, b"{}".to_vec()),
            ],
            Sources {
                max_bytes: 1024,
                ..SOURCES
            },
            &issuer.authenticator(&Revoked::new()),
        );
        assert!(decoded.snapshots.is_empty());
        assert_eq!(decoded.rejected.len(), 2);
        let oversize = &decoded.rejected[0];
        assert!(oversize.message.payload.is_empty());
        assert!(
            oversize
                .reason
                .contains("2048 bytes is over the 1024 byte limit"),
            "{}",
            oversize.reason
        );
        assert!(decoded.rejected[1]
            .reason
            .starts_with("undecodable agent event"));
    }

    #[test]
    fn snapshots_of_another_agents_profile_are_rejected_with_the_reason() {
        let issuer = Issuer::new();
        let h = issuer.identity("h", 1);
        let mut decoded = decode(
            vec![
                stacks(&h, 0, snapshot("h", "owner")),
                stacks(&h, 1, snapshot("h", "intruder")),
                stacks(&h, 2, snapshot("h", "intruder")),
            ],
            SOURCES,
            &issuer.authenticator(&Revoked::new()),
        );
        let refused = odp_store::ForeignSnapshot {
            agent_id: "intruder".into(),
            profile_id: uuid::Uuid::nil(),
            sequence: 0,
            owner: "owner".into(),
        };
        reject_foreign(&mut decoded, std::slice::from_ref(&refused));
        assert_eq!(decoded.snapshots.len(), 1);
        assert_eq!(decoded.snapshots[0].1.agent_id, "owner");
        let offsets: Vec<i64> = decoded.rejected.iter().map(|r| r.message.offset).collect();
        assert_eq!(offsets, [1, 2]);
        assert_eq!(decoded.rejected[0].reason, refused.reason());
    }

    #[test]
    fn commits_one_past_the_highest_offset_per_partition() {
        let positions = commit_positions(&[
            ("s".into(), 0, 5),
            ("s".into(), 0, 3),
            ("s".into(), 1, 9),
            ("e".into(), 0, 0),
        ]);
        assert_eq!(
            positions,
            vec![("e".into(), 0, 1), ("s".into(), 0, 6), ("s".into(), 1, 10)]
        );
    }
}
