//! One agent per host: which of several agents claiming one host id keeps
//! it.
//!
//! Commands are keyed by host id, so every agent that answers to a host id
//! acts on every command for it: two agents double every sample. On one
//! machine an exclusive lock file keeps a second agent from starting at
//! all. Agents of one host id on different machines (a copied
//! configuration, a container moved without its predecessor stopping)
//! cannot share a lock, so each agent also reads its host's heartbeats and
//! yields to a live agent on another machine that started before it.
//! The rule is a total order (start time, then agent id), so of any set of
//! claimants exactly one keeps the host, and every agent reaches the same
//! verdict from the same heartbeats.

use std::collections::HashMap;

use crate::event::{AgentEvent, AgentEventKind};

/// An agent as its heartbeats describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentClaim {
    pub agent_id: String,
    /// `None` for agents that predate machine ids: they are taken to be on
    /// another machine than any agent that knows its own.
    pub machine_id: Option<String>,
    pub started_at_ms: i64,
}

impl AgentClaim {
    /// Whether this agent keeps the host against `other`: the earlier
    /// start wins, ties go to the smaller agent id.
    pub fn precedes(&self, other: &AgentClaim) -> bool {
        (self.started_at_ms, &self.agent_id) < (other.started_at_ms, &other.agent_id)
    }

    fn same_machine(&self, other: &AgentClaim) -> bool {
        matches!((&self.machine_id, &other.machine_id), (Some(a), Some(b)) if a == b)
    }
}

/// The agents that heartbeat for one host, with when each was last heard.
#[derive(Debug, Clone)]
pub struct HostClaims {
    host: String,
    seen: HashMap<String, (AgentClaim, i64)>,
}

impl HostClaims {
    pub fn new(host: impl Into<String>) -> Self {
        HostClaims {
            host: host.into(),
            seen: HashMap::new(),
        }
    }

    /// Notes a heartbeat of this host, heard at `heard_at_ms`; other events
    /// and other hosts' heartbeats are ignored. An agent that reports no
    /// start time claims from its first heartbeat heard.
    pub fn observe(&mut self, event: &AgentEvent, heard_at_ms: i64) {
        let AgentEventKind::Heartbeat {
            machine_id,
            started_at_ms,
            ..
        } = &event.kind
        else {
            return;
        };
        if event.host != self.host {
            return;
        }
        let entry = self.seen.entry(event.agent_id.clone()).or_insert_with(|| {
            let claim = AgentClaim {
                agent_id: event.agent_id.clone(),
                machine_id: machine_id.clone(),
                started_at_ms: started_at_ms.unwrap_or(heard_at_ms),
            };
            (claim, heard_at_ms)
        });
        entry.1 = entry.1.max(heard_at_ms);
    }

    /// The live agent on another machine that `me` must yield the host to,
    /// if any: heard within `live_ms` of `now_ms` and started before `me`.
    /// Agents on `me`'s own machine are left to the lock file: one that
    /// still heartbeats while `me` holds the lock is a dead predecessor's
    /// last words.
    pub fn yield_to(&self, me: &AgentClaim, now_ms: i64, live_ms: i64) -> Option<&AgentClaim> {
        self.seen
            .values()
            .filter(|(claim, last)| {
                claim.agent_id != me.agent_id
                    && !claim.same_machine(me)
                    && now_ms - last <= live_ms
                    && claim.precedes(me)
            })
            .map(|(claim, _)| claim)
            .min_by(|a, b| (a.started_at_ms, &a.agent_id).cmp(&(b.started_at_ms, &b.agent_id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat(host: &str, agent: &str, machine: Option<&str>, started: Option<i64>) -> AgentEvent {
        AgentEvent {
            host: host.into(),
            agent_id: agent.into(),
            at_ms: 0,
            kind: AgentEventKind::Heartbeat {
                version: "0".into(),
                running_profiles: vec![],
                plugins: vec![],
                machine_id: machine.map(str::to_owned),
                started_at_ms: started,
                labels: Default::default(),
                services: Vec::new(),
                services_digest: None,
            },
        }
    }

    fn claim(agent: &str, machine: &str, started: i64) -> AgentClaim {
        AgentClaim {
            agent_id: agent.into(),
            machine_id: Some(machine.into()),
            started_at_ms: started,
        }
    }

    #[test]
    fn the_earlier_agent_on_another_machine_keeps_the_host() {
        let mut claims = HostClaims::new("web-1");
        claims.observe(&beat("web-1", "a", Some("m1"), Some(100)), 1_000);
        let late = claim("b", "m2", 200);
        assert_eq!(claims.yield_to(&late, 1_500, 30_000).unwrap().agent_id, "a");
        // The earlier agent hears the later one and keeps going.
        claims.observe(&beat("web-1", "b", Some("m2"), Some(200)), 1_200);
        assert!(claims
            .yield_to(&claim("a", "m1", 100), 1_500, 30_000)
            .is_none());
    }

    #[test]
    fn ties_go_to_the_smaller_agent_id_so_exactly_one_keeps_it() {
        let (a, b) = (claim("a", "m1", 100), claim("b", "m2", 100));
        assert!(a.precedes(&b) && !b.precedes(&a));
    }

    #[test]
    fn silent_agents_same_machine_agents_and_other_hosts_do_not_count() {
        let mut claims = HostClaims::new("web-1");
        claims.observe(&beat("web-1", "old", Some("m2"), Some(1)), 1_000);
        claims.observe(&beat("web-1", "dead", Some("m1"), Some(2)), 60_000);
        claims.observe(&beat("web-2", "other", Some("m3"), Some(3)), 60_000);
        let me = claim("me", "m1", 50_000);
        // `old` was last heard 59 s ago; `dead` is on my machine.
        assert!(claims.yield_to(&me, 60_000, 30_000).is_none());
        assert!(claims.yield_to(&me, 31_000, 30_000).is_some());
    }

    #[test]
    fn agents_without_a_start_time_claim_from_their_first_heartbeat() {
        let mut claims = HostClaims::new("web-1");
        claims.observe(&beat("web-1", "legacy", None, None), 5_000);
        claims.observe(&beat("web-1", "legacy", None, None), 9_000);
        assert!(claims
            .yield_to(&claim("me", "m1", 4_000), 9_000, 30_000)
            .is_none());
        assert_eq!(
            claims
                .yield_to(&claim("me", "m1", 6_000), 9_000, 30_000)
                .unwrap()
                .started_at_ms,
            5_000
        );
    }
}
