//! Triggers: profile a service's host when a condition holds there, before
//! anyone can get to it ("profile it when the CPU spikes").
//!
//! - The api-server keeps each trigger (a service, a condition, the
//!   profile to take, a cooldown and a fleet-wide cap) and sends every
//!   enabled one to every agent as a [`TriggerAssignment`], in the signed
//!   `sync_services` command beside the continuous profiles
//!   ([`crate::service::SyncServices`]).
//! - The **agent evaluates the condition on its host**, from `/proc`: the
//!   CPU the service's processes use, or how fast their memory grows. When
//!   it has held for its whole period, and the trigger's cooldown has
//!   passed on this host, the agent reports it in a signed `trigger_fired`
//!   event ([`crate::event::AgentEventKind::TriggerFired`]) with the value
//!   it observed. It never starts a profile by itself.
//! - The api-server decides: it checks the cooldown again and the cap on
//!   concurrent triggered profiles across the fleet, in one transaction,
//!   and starts an ordinary profile of the service on that host, labelled
//!   with the trigger's id and the observed value. A cap or a cooldown
//!   that holds a firing back is counted and reported once, not once per
//!   firing.

use serde::{Deserialize, Serialize};
use thiserror::Error;
use uuid::Uuid;

/// Most triggers one sync may carry.
pub const MAX_TRIGGERS: usize = 1024;
/// Longest period a condition may be required to hold.
pub const MAX_HOLD_SECS: u32 = 3600;
/// Highest CPU threshold, in percent of one core: 1,024 cores.
pub const MAX_CPU_PERCENT: u32 = 102_400;
/// Highest memory growth threshold, in MiB a minute.
pub const MAX_RSS_GROWTH_MIB_PER_MIN: u32 = 1 << 20;
/// Shortest and longest cooldown between two firings on one host.
pub const MIN_COOLDOWN_SECS: u32 = 10;
pub const MAX_COOLDOWN_SECS: u32 = 7 * 24 * 3600;

/// What must hold, on one host, for a trigger to fire. Whole numbers, so a
/// sync's digest has one encoding of it.
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TriggerCondition {
    /// The service's processes on the host use more than `percent` of one
    /// core (200 is two cores), in every second of the last `for_secs`.
    CpuAbove { percent: u32, for_secs: u32 },
    /// Their resident memory grew by more than `mib_per_min` MiB a minute
    /// over the last `for_secs`.
    RssGrowth { mib_per_min: u32, for_secs: u32 },
}

impl TriggerCondition {
    /// How long the condition must hold.
    pub fn for_secs(&self) -> u32 {
        match *self {
            TriggerCondition::CpuAbove { for_secs, .. }
            | TriggerCondition::RssGrowth { for_secs, .. } => for_secs,
        }
    }

    /// The threshold, in the unit of [`TriggerCondition::unit`].
    pub fn threshold(&self) -> u32 {
        match *self {
            TriggerCondition::CpuAbove { percent, .. } => percent,
            TriggerCondition::RssGrowth { mib_per_min, .. } => mib_per_min,
        }
    }

    /// The kind's name, as its JSON `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            TriggerCondition::CpuAbove { .. } => "cpu_above",
            TriggerCondition::RssGrowth { .. } => "rss_growth",
        }
    }

    /// What an observed value of this condition is measured in.
    pub fn unit(&self) -> &'static str {
        match self {
            TriggerCondition::CpuAbove { .. } => "% of a core",
            TriggerCondition::RssGrowth { .. } => "MiB/min",
        }
    }

    /// Checks the ranges an agent can follow.
    pub fn check(&self) -> Result<(), String> {
        let (threshold, max) = match *self {
            TriggerCondition::CpuAbove { percent, .. } => (percent, MAX_CPU_PERCENT),
            TriggerCondition::RssGrowth { mib_per_min, .. } => {
                (mib_per_min, MAX_RSS_GROWTH_MIB_PER_MIN)
            }
        };
        if !(1..=max).contains(&threshold) {
            return Err(format!(
                "the {} threshold {threshold} is outside 1..={max} ({})",
                self.kind(),
                self.unit()
            ));
        }
        if !(1..=MAX_HOLD_SECS).contains(&self.for_secs()) {
            return Err(format!(
                "`for_secs` {} is outside 1..={MAX_HOLD_SECS}",
                self.for_secs()
            ));
        }
        Ok(())
    }
}

/// One trigger, as its agents receive it: what to watch, and how often it
/// may fire on one host. What to profile when it fires stays with the
/// api-server, which starts the profile.
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerAssignment {
    pub id: Uuid,
    /// A service the same sync defines: its target says which processes.
    pub service: String,
    pub condition: TriggerCondition,
    /// After a firing, the agent does not report the trigger again on this
    /// host for this long (the api-server holds to it too).
    pub cooldown_secs: u32,
    /// The hosts that watch it, sorted; absent: every host that runs the
    /// service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<String>>,
}

impl TriggerAssignment {
    /// Whether `host` watches this trigger.
    pub fn covers(&self, host: &str) -> bool {
        crate::host_list::hosts_cover(self.hosts.as_deref(), host)
    }

    /// Checks what an agent relies on: the condition's ranges, the
    /// cooldown's, and a sorted, bounded host list.
    pub fn check(&self) -> Result<(), TriggerError> {
        let invalid = |reason: String| TriggerError::Invalid {
            id: self.id,
            reason,
        };
        self.condition.check().map_err(invalid)?;
        if !(MIN_COOLDOWN_SECS..=MAX_COOLDOWN_SECS).contains(&self.cooldown_secs) {
            return Err(invalid(format!(
                "`cooldown_secs` {} is outside {MIN_COOLDOWN_SECS}..={MAX_COOLDOWN_SECS}",
                self.cooldown_secs
            )));
        }
        if !crate::host_list::hosts_are_valid(self.hosts.as_deref()) {
            return Err(invalid(
                "its hosts must be sorted, unique and bounded".to_owned(),
            ));
        }
        Ok(())
    }

    /// Its canonical encoding for a sync's digest: its 16 id bytes; its
    /// service and condition kind as u64 little-endian lengths and UTF-8;
    /// threshold, period and cooldown as u32 little-endian; then its hosts,
    /// encoded as a continuous profile's are.
    pub fn digest_into(&self, ctx: &mut ring::digest::Context) {
        use crate::host_list::{digest_hosts, digest_text};
        ctx.update(self.id.as_bytes());
        digest_text(ctx, &self.service);
        digest_text(ctx, self.condition.kind());
        ctx.update(&self.condition.threshold().to_le_bytes());
        ctx.update(&self.condition.for_secs().to_le_bytes());
        ctx.update(&self.cooldown_secs.to_le_bytes());
        digest_hosts(ctx, self.hosts.as_deref());
    }
}

/// Why a trigger cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TriggerError {
    #[error("trigger {id}: {reason}")]
    Invalid { id: Uuid, reason: String },
    #[error("trigger {id} names service {service:?}, which the sync does not define")]
    UnknownService { id: Uuid, service: String },
    #[error("trigger {id} is assigned twice")]
    Duplicate { id: Uuid },
    #[error("{count} triggers, at most {MAX_TRIGGERS}")]
    TooMany { count: usize },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trigger(condition: TriggerCondition) -> TriggerAssignment {
        TriggerAssignment {
            id: Uuid::from_u128(3),
            service: "checkout".into(),
            condition,
            cooldown_secs: 600,
            hosts: None,
        }
    }

    const HOT: TriggerCondition = TriggerCondition::CpuAbove {
        percent: 80,
        for_secs: 30,
    };

    #[test]
    fn conditions_read_as_their_json_says() {
        let json = serde_json::to_value(HOT).expect("serialize");
        assert_eq!(
            json,
            serde_json::json!({"kind": "cpu_above", "percent": 80, "for_secs": 30})
        );
        let growth: TriggerCondition =
            serde_json::from_str(r#"{"kind":"rss_growth","mib_per_min":50,"for_secs":120}"#)
                .expect("parse");
        assert_eq!((growth.threshold(), growth.for_secs()), (50, 120));
        assert!(serde_json::from_str::<TriggerCondition>(r#"{"kind":"load"}"#).is_err());
    }

    #[test]
    fn check_refuses_what_an_agent_cannot_follow() {
        assert_eq!(trigger(HOT).check(), Ok(()));
        for bad in [
            TriggerCondition::CpuAbove {
                percent: 0,
                for_secs: 30,
            },
            TriggerCondition::CpuAbove {
                percent: MAX_CPU_PERCENT + 1,
                for_secs: 30,
            },
            TriggerCondition::CpuAbove {
                percent: 80,
                for_secs: 0,
            },
            TriggerCondition::RssGrowth {
                mib_per_min: 5,
                for_secs: MAX_HOLD_SECS + 1,
            },
        ] {
            assert!(trigger(bad).check().is_err(), "{bad:?}");
        }
        let eager = TriggerAssignment {
            cooldown_secs: MIN_COOLDOWN_SECS - 1,
            ..trigger(HOT)
        };
        assert!(eager.check().is_err());
        let unsorted = TriggerAssignment {
            hosts: Some(vec!["b".into(), "a".into()]),
            ..trigger(HOT)
        };
        assert!(unsorted.check().is_err());
    }

    #[test]
    fn hosts_absent_cover_every_host_and_a_list_only_its_own() {
        assert!(trigger(HOT).covers("any"));
        let listed = TriggerAssignment {
            hosts: Some(vec!["a".into(), "c".into()]),
            ..trigger(HOT)
        };
        assert!(listed.covers("a") && listed.covers("c") && !listed.covers("b"));
    }

    #[test]
    fn every_field_changes_the_encoding() {
        let encode = |t: &TriggerAssignment| {
            let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
            t.digest_into(&mut ctx);
            ctx.finish().as_ref().to_vec()
        };
        let base = trigger(HOT);
        let variants = [
            TriggerAssignment {
                id: Uuid::from_u128(4),
                ..base.clone()
            },
            TriggerAssignment {
                service: "cart".into(),
                ..base.clone()
            },
            trigger(TriggerCondition::CpuAbove {
                percent: 81,
                for_secs: 30,
            }),
            trigger(TriggerCondition::CpuAbove {
                percent: 80,
                for_secs: 31,
            }),
            trigger(TriggerCondition::RssGrowth {
                mib_per_min: 80,
                for_secs: 30,
            }),
            TriggerAssignment {
                cooldown_secs: 601,
                ..base.clone()
            },
            TriggerAssignment {
                hosts: Some(vec![]),
                ..base.clone()
            },
        ];
        for variant in &variants {
            assert_ne!(encode(variant), encode(&base), "{variant:?}");
        }
    }
}
