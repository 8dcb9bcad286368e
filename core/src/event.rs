//! Messages on `odp.events`: agent heartbeats and profile lifecycle, as
//! JSON so operators can read them with any Kafka tool.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::cost::CostEventKind;
use crate::model::{EventKind, Language};
use crate::runtime::RuntimeInfo;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEvent {
    pub host: String,
    pub agent_id: String,
    /// Unix milliseconds on the agent's clock.
    pub at_ms: i64,
    #[serde(flatten)]
    pub kind: AgentEventKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    DurationElapsed,
    Stopped,
    TargetExited,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum AgentEventKind {
    Heartbeat {
        version: String,
        running_profiles: Vec<Uuid>,
        plugins: Vec<String>,
        /// The machine the agent runs on (`/etc/machine-id`), so agents of
        /// one host id on different machines can tell each other apart;
        /// absent from older agents.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        machine_id: Option<String>,
        /// When the agent started (unix ms): of two agents claiming one
        /// host, the earlier one keeps it ([`crate::liveness`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started_at_ms: Option<i64>,
        /// The host's labels: those the agent discovers (`kernel`,
        /// `cpu_model`, `cores`, `arch`: [`crate::service::DISCOVERED_LABELS`])
        /// and those its operator gave it (`--label zone=eu-1`; `zone` and
        /// `version` by convention). Keys are `[a-z0-9_.-]`, values
        /// non-empty without control characters
        /// ([`crate::service::check_label_key`]). Absent from older agents.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        labels: BTreeMap<String, String>,
        /// The defined services (of the last `sync_services`) with at least
        /// one live matching process on the host at this heartbeat, sorted;
        /// absent when none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        services: Vec<String>,
        /// The [`crate::service::services_digest`] of the service
        /// definitions the agent holds (that of the empty set when it holds
        /// none). Absent only from agents that predate `sync_services`,
        /// which must not be sent one. A digest other than the api-server's
        /// means the agent's set is stale: send a sync.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        services_digest: Option<String>,
    },
    ProfileStarted {
        profile_id: Uuid,
        event: EventKind,
        frequency_hz: u32,
        pids: Vec<u32>,
        /// The runtime detected (or requested) and so the plugin used;
        /// absent from agents that predate language plugins.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<Language>,
        /// The runtime's version when the agent could tell cheaply
        /// (`3.11`, `17.0.15`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        runtime_version: Option<String>,
        /// Flags, libraries and build id of the target (of its first
        /// process when a target has several).
        #[serde(default, skip_serializing_if = "RuntimeInfo::is_empty")]
        runtime: RuntimeInfo,
    },
    ProfileFinished {
        profile_id: Uuid,
        reason: FinishReason,
        /// Snapshots (and their samples) the broker had acknowledged when
        /// the profile ended; windows the agent spooled during a broker
        /// outage arrive later and are not counted here.
        snapshots: u64,
        samples: u64,
        /// Windows (and their samples) in the agent's spool when the
        /// profile ended, sent when the broker takes them: once delivered,
        /// the profile holds `snapshots + spooled_snapshots` windows.
        #[serde(default)]
        spooled_snapshots: u64,
        #[serde(default)]
        spooled_samples: u64,
    },
    ProfileFailed {
        profile_id: Uuid,
        error: String,
    },
    CommandRejected {
        command_id: Option<Uuid>,
        profile_id: Option<Uuid>,
        reason: String,
    },
    /// A trigger's condition held on the host for its whole period
    /// ([`crate::trigger`]): the api-server decides whether to profile.
    TriggerFired {
        trigger_id: Uuid,
        /// What the agent measured over the period, in the condition's
        /// unit ([`crate::trigger::TriggerCondition::unit`]).
        observed: f64,
        /// When the condition began to hold (unix ms, agent's clock).
        held_since_ms: i64,
    },
    /// Cost-control reports (FSP pruning, FDA and budget frequency
    /// changes), tagged by their own `type`.
    #[serde(untagged)]
    Cost(CostEventKind),
}

impl AgentEvent {
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("agent events always serialize")
    }

    pub fn from_json(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// The profile this event is about, if any.
    pub fn profile_id(&self) -> Option<Uuid> {
        match &self.kind {
            AgentEventKind::Heartbeat { .. } | AgentEventKind::TriggerFired { .. } => None,
            AgentEventKind::ProfileStarted { profile_id, .. }
            | AgentEventKind::ProfileFinished { profile_id, .. }
            | AgentEventKind::ProfileFailed { profile_id, .. } => Some(*profile_id),
            AgentEventKind::CommandRejected { profile_id, .. } => *profile_id,
            AgentEventKind::Cost(report) => Some(report.profile_id()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_flat_tagged_json() {
        let event = AgentEvent {
            host: "h".into(),
            agent_id: "a".into(),
            at_ms: 5,
            kind: AgentEventKind::ProfileStarted {
                profile_id: Uuid::nil(),
                event: EventKind::CpuClock,
                frequency_hz: 99,
                pids: vec![1],
                language: Some(Language::Python),
                runtime_version: Some("3.11".into()),
                runtime: RuntimeInfo {
                    flags: vec!["-O".into()],
                    ..RuntimeInfo::default()
                },
            },
        };
        let json: serde_json::Value = serde_json::from_slice(&event.to_json()).unwrap();
        assert_eq!(json["type"], "profile_started");
        assert_eq!(json["event"], "cpu-clock");
        assert_eq!(json["language"], "python");
        // An older agent's event, without the runtime fields, still decodes.
        let mut old = json.clone();
        old.as_object_mut().unwrap().remove("language");
        old.as_object_mut().unwrap().remove("runtime_version");
        old.as_object_mut().unwrap().remove("runtime");
        let decoded = AgentEvent::from_json(&serde_json::to_vec(&old).unwrap()).unwrap();
        assert!(matches!(
            decoded.kind,
            AgentEventKind::ProfileStarted {
                language: None,
                runtime_version: None,
                ref runtime,
                ..
            } if runtime.is_empty()
        ));
        assert_eq!(json["runtime"]["flags"][0], "-O");
        assert_eq!(json["host"], "h");
        assert_eq!(AgentEvent::from_json(&event.to_json()).unwrap(), event);
        assert_eq!(event.profile_id(), Some(Uuid::nil()));
        assert!(AgentEvent::from_json(b"{\"type\":\"nope\"}").is_err());
    }

    #[test]
    fn heartbeats_carry_labels_and_services_and_old_ones_still_decode() {
        let beat = AgentEvent {
            host: "h".into(),
            agent_id: "a".into(),
            at_ms: 5,
            kind: AgentEventKind::Heartbeat {
                version: "0.1.0".into(),
                running_profiles: vec![],
                plugins: vec!["native".into()],
                machine_id: None,
                started_at_ms: None,
                labels: BTreeMap::from([
                    ("kernel".to_owned(), "6.8.0".to_owned()),
                    ("zone".to_owned(), "eu-1".to_owned()),
                ]),
                services: vec!["checkout".into()],
                services_digest: Some("ab".into()),
            },
        };
        let json: serde_json::Value = serde_json::from_slice(&beat.to_json()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "host": "h", "agent_id": "a", "at_ms": 5, "type": "heartbeat",
                "version": "0.1.0", "running_profiles": [], "plugins": ["native"],
                "labels": {"kernel": "6.8.0", "zone": "eu-1"},
                "services": ["checkout"],
                "services_digest": "ab",
            })
        );
        assert_eq!(AgentEvent::from_json(&beat.to_json()).unwrap(), beat);

        // An older agent's heartbeat has none of them; empty ones are left out.
        let old = br#"{"host":"h","agent_id":"a","at_ms":1,"type":"heartbeat",
            "version":"0","running_profiles":[],"plugins":[]}"#;
        let decoded = AgentEvent::from_json(old).unwrap();
        let AgentEventKind::Heartbeat {
            labels,
            services,
            services_digest,
            ..
        } = &decoded.kind
        else {
            panic!("a heartbeat")
        };
        assert!(labels.is_empty() && services.is_empty() && services_digest.is_none());
        let again: serde_json::Value = serde_json::from_slice(&decoded.to_json()).unwrap();
        for field in ["labels", "services", "services_digest"] {
            assert!(again.get(field).is_none(), "{field} serialized when empty");
        }
    }
}
