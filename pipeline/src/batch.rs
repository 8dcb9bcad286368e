//! Turning a batch of raw messages into storable work, sans I/O.

use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::Snapshot;

/// A message as taken off the consumer, owned so the batch can outlive the
/// poll that produced it.
#[derive(Debug, Clone)]
pub(crate) struct RawMessage {
    pub(crate) topic: String,
    pub(crate) partition: i32,
    pub(crate) offset: i64,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) payload: Vec<u8>,
}

#[derive(Debug)]
pub(crate) struct Rejected {
    pub(crate) message: RawMessage,
    pub(crate) reason: String,
}

#[derive(Debug, Default)]
pub(crate) struct Decoded {
    pub(crate) snapshots: Vec<(RawMessage, Snapshot)>,
    pub(crate) events: Vec<(RawMessage, AgentEvent)>,
    pub(crate) rejected: Vec<Rejected>,
}

/// Decodes each message by its topic; anything undecodable is rejected with
/// the decoder's reason, and anything over `max_bytes` unread.
pub(crate) fn decode(
    messages: Vec<RawMessage>,
    stacks_topic: &str,
    events_topic: &str,
    max_bytes: usize,
) -> Decoded {
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
        } else if message.topic == stacks_topic {
            match Snapshot::decode(&message.payload) {
                Ok(snapshot) => out.snapshots.push((message, snapshot)),
                Err(e) => out.rejected.push(Rejected {
                    reason: format!("undecodable snapshot: {e}"),
                    message,
                }),
            }
        } else if message.topic == events_topic {
            match AgentEvent::from_json(&message.payload) {
                Ok(event) => out.events.push((message, event)),
                Err(e) => out.rejected.push(Rejected {
                    reason: format!("undecodable agent event: {e}"),
                    message,
                }),
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
    pub(crate) touched: ToEvaluate,
}

/// Decodes a batch and notes where its messages came from. Pure CPU work,
/// so the worker runs it on a blocking thread while the previous batch is
/// being stored.
pub(crate) fn prepare(
    messages: Vec<RawMessage>,
    stacks_topic: &str,
    events_topic: &str,
    max_bytes: usize,
) -> Prepared {
    let positions: Vec<(String, i32, i64)> = messages
        .iter()
        .map(|m| (m.topic.clone(), m.partition, m.offset))
        .collect();
    let partitions = positions
        .iter()
        .map(|(topic, partition, _)| (topic.clone(), *partition))
        .collect();
    let decoded = decode(messages, stacks_topic, events_topic, max_bytes);
    let touched = profiles_to_evaluate(&decoded);
    Prepared {
        partitions,
        positions,
        decoded,
        touched,
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
    use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
    use odp_core::{EventKind, Frame};

    fn raw(topic: &str, offset: i64, payload: Vec<u8>) -> RawMessage {
        RawMessage {
            topic: topic.into(),
            partition: 0,
            offset,
            key: None,
            payload,
        }
    }

    #[test]
    fn sorts_messages_and_rejects_garbage_with_reasons() {
        let mut b = SnapshotBuilder::new();
        b.add(&[Frame::function("main")], 1, 3);
        let snapshot = b.build(SnapshotHeader {
            profile_id: uuid::Uuid::nil(),
            host: "h".into(),
            agent_id: "a".into(),
            sequence: 0,
            window_start_ms: 0,
            window_end_ms: 1,
            event: EventKind::CpuClock,
            period: 1,
            frequency_hz: 1,
        });
        let decoded = decode(
            vec![
                raw("s", 0, b"garbage".to_vec()),
                raw("s", 1, snapshot.encode()),
                raw("e", 0, b"{}".to_vec()),
                raw("x", 0, vec![]),
            ],
            "s",
            "e",
            usize::MAX,
        );
        assert_eq!(decoded.snapshots.len(), 1);
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
                finished: vec![]
            }
        );
    }

    #[test]
    fn a_message_over_the_limit_is_rejected_without_its_bytes() {
        let decoded = decode(
            vec![raw("s", 0, vec![7; 2048]), raw("e", 1, b"{}".to_vec())],
            "s",
            "e",
            1024,
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
        let snapshot = |agent: &str| {
            let mut b = SnapshotBuilder::new();
            b.add(&[Frame::function("main")], 1, 3);
            b.build(SnapshotHeader {
                profile_id: uuid::Uuid::nil(),
                host: "h".into(),
                agent_id: agent.into(),
                sequence: 0,
                window_start_ms: 0,
                window_end_ms: 1,
                event: EventKind::CpuClock,
                period: 1,
                frequency_hz: 1,
            })
            .encode()
        };
        let mut decoded = decode(
            vec![
                raw("s", 0, snapshot("owner")),
                raw("s", 1, snapshot("intruder")),
                raw("s", 2, snapshot("intruder")),
            ],
            "s",
            "e",
            usize::MAX,
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
