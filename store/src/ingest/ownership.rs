//! A profile has one owner: the agent that first acknowledged it.
//!
//! Were two agents to serve one host, both would run every profile of it
//! and both agents' snapshots would be stored, doubling every count and
//! narrowing every error bound by √2. Agents keep themselves alone
//! (a lock file, the host's heartbeats), and storage enforces the result
//! whatever they do: a profile's `agent_id` is set once, by its
//! `profile_started` event or its first stored snapshot, whichever the
//! pipeline sees first, and snapshots of that profile from any other agent
//! are refused (the pipeline sends them to the dead-letter topic). The
//! pipeline refuses snapshots of profiles the API never recorded, or that
//! run on another host than the signer's, before they get here; a store
//! called directly (tests, tools) stores those as they come.
//!
//! A continuous profile's segment is the exception ([`take_over`]): its
//! host's agent restarted under a new id goes on with the same hour's
//! segment, and becomes its owner once the old owner's windows have ended
//! before the new one's begin, so two agents never both count the same
//! seconds.

use std::collections::HashMap;

use uuid::Uuid;

use super::{ForeignSnapshot, SnapshotToStore};
use crate::sql::{On, Sql};
use crate::Result;

/// Hands each continuous segment of `snapshots` that `owners` gives to
/// another agent to the batch's agent, when none of the owner's windows
/// ends after the batch's first window of it begins; updates `owners`.
pub(super) async fn take_over<C>(
    tx: &mut C,
    snapshots: &[SnapshotToStore<'_>],
    owners: &mut HashMap<Uuid, String>,
) -> Result<()>
where
    for<'x> &'x mut C: Into<On<'x>>,
{
    let mut earliest: HashMap<(Uuid, &str), i64> = HashMap::new();
    for s in snapshots {
        if owners.get(&s.profile_id).is_some_and(|o| *o != s.agent_id) {
            let start = earliest
                .entry((s.profile_id, s.agent_id.as_str()))
                .or_insert(s.window_start_ms);
            *start = (*start).min(s.window_start_ms);
        }
    }
    for ((profile, agent), start_ms) in earliest {
        let start =
            chrono::DateTime::<chrono::Utc>::from_timestamp_millis(start_ms).unwrap_or_default();
        let moved = Sql::new(
            "update profiles set agent_id = $2
             where id = $1 and continuous_id is not null and agent_id <> $2
               and not exists (select 1 from snapshots s
                               where s.profile_id = $1 and s.agent_id = profiles.agent_id
                                 and s.window_end > $3)",
        )
        .bind(profile)
        .bind(agent)
        .bind(start)
        .execute(&mut *tx)
        .await?;
        if moved == 1 {
            tracing::info!(%profile, agent, "a restarted agent took over its host's continuous segment");
            owners.insert(profile, agent.to_owned());
        }
    }
    Ok(())
}

/// Each profile of the batch with the agent of its earliest window: the
/// agent that claims the profile should it have no owner yet.
pub(super) fn first_offers<'a>(snapshots: &[SnapshotToStore<'a>]) -> Vec<(Uuid, &'a str)> {
    let mut earliest: HashMap<Uuid, (i64, &str)> = HashMap::new();
    for s in snapshots {
        let s = s.snapshot;
        let offer = (s.window_start_ms, s.agent_id.as_str());
        earliest
            .entry(s.profile_id)
            .and_modify(|best| *best = (*best).min(offer))
            .or_insert(offer);
    }
    earliest
        .into_iter()
        .map(|(profile, (_, agent))| (profile, agent))
        .collect()
}

/// The snapshots their profiles' owners sent (or of unowned profiles), and
/// the refused rest.
pub(super) fn split<'a>(
    snapshots: Vec<SnapshotToStore<'a>>,
    owners: &HashMap<Uuid, String>,
) -> (Vec<SnapshotToStore<'a>>, Vec<ForeignSnapshot>) {
    let mut kept = Vec::with_capacity(snapshots.len());
    let mut foreign = Vec::new();
    for s in snapshots {
        match owners.get(&s.profile_id) {
            Some(owner) if *owner != s.agent_id => foreign.push(ForeignSnapshot {
                agent_id: s.agent_id.clone(),
                profile_id: s.profile_id,
                sequence: s.sequence,
                owner: owner.clone(),
            }),
            _ => kept.push(s),
        }
    }
    (kept, foreign)
}

#[cfg(test)]
mod tests {
    use super::*;
    use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
    use odp_core::{EventKind, Frame, Snapshot};

    fn snapshot(profile: Uuid, agent: &str, sequence: u64) -> Snapshot {
        let mut b = SnapshotBuilder::new();
        b.add(&[Frame::function("main")], 1, 1);
        b.build(SnapshotHeader {
            profile_id: profile,
            host: "h".into(),
            agent_id: agent.into(),
            sequence,
            window_start_ms: 0,
            window_end_ms: 1,
            event: EventKind::CpuClock,
            period: 1,
            frequency_hz: 1,
        })
    }

    #[test]
    fn only_the_owners_snapshots_and_unowned_profiles_are_kept() {
        let (owned, unowned) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let batch = [
            snapshot(owned, "a", 0),
            snapshot(owned, "b", 0),
            snapshot(unowned, "b", 0),
        ];
        let owners = HashMap::from([(owned, "a".to_owned())]);
        let (kept, foreign) = split(batch.iter().map(SnapshotToStore::from).collect(), &owners);
        let kept: Vec<(&str, Uuid)> = kept
            .iter()
            .map(|s| (s.agent_id.as_str(), s.profile_id))
            .collect();
        assert_eq!(kept, [("a", owned), ("b", unowned)]);
        assert_eq!(foreign.len(), 1);
        assert_eq!(foreign[0].owner, "a");
        assert!(foreign[0].reason().contains("belongs to agent a"));
    }
}
