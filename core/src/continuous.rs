//! Continuous profiles: a service profiled always, at a low rate and
//! within a per-host CPU budget, beside its on-demand profiles and runs.
//!
//! - The api-server keeps each service's **continuous configuration** and
//!   sends every enabled one to every agent as a [`ContinuousAssignment`],
//!   in the same signed `sync_services` command that carries the service
//!   definitions ([`crate::service::SyncServices`]). The agent keeps them
//!   across restarts as it keeps the definitions, and a heartbeat's digest
//!   tells the api-server when an agent holds an older set: an agent that
//!   restarts, or a new host, takes its assignments back by itself.
//! - An agent profiles the processes of an assigned service on its host in
//!   **segments** of [`SEGMENT_SECS`], aligned to the Unix epoch. Each
//!   segment of each host is an ordinary profile, whose id both sides
//!   derive ([`segment_profile_id`]) without a message between them: the
//!   pipeline creates the profile when its first window arrives, signed by
//!   the host's agent, so a control plane that is down loses nothing.
//!   Within a segment the profile's windows flow, are stored exactly once
//!   and are checked by detection rules like any other profile's.

use serde::{Deserialize, Serialize};
use thiserror::Error;
use uuid::Uuid;

use crate::cost::StartOptions;
use crate::model::EventKind;

/// A continuous profile's segment: one profile per host every hour, the
/// hours of the Unix epoch.
pub const SEGMENT_SECS: i64 = 3600;
/// The rate of a continuous profile unless its configuration says another.
pub const DEFAULT_FREQUENCY_HZ: u32 = 19;
/// The CPU a host's agent may spend on one continuous profile unless its
/// configuration says another, in millionths of one core: 0.5 %.
pub const DEFAULT_CPU_BUDGET_PPM: u32 = 5_000;
/// Millionths of one core in a core.
pub const PPM: u32 = 1_000_000;
/// Most assignments one sync may carry.
pub const MAX_ASSIGNMENTS: usize = 1024;
pub use crate::host_list::MAX_ASSIGNED_HOSTS;

/// One service profiled continuously, as its agents receive it.
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinuousAssignment {
    /// The configuration's id, from which each segment's profile id is
    /// derived.
    pub id: Uuid,
    /// A service the same sync defines: its target says which processes.
    pub service: String,
    pub event: EventKind,
    pub frequency_hz: u32,
    /// CPU the agent may spend on it, in millionths of one core (5,000 =
    /// 0.5 %): the frequency is lowered to stay inside it. Whole numbers,
    /// so the sync's digest has one encoding of it.
    pub cpu_budget_ppm: u32,
    /// The hosts that profile it, sorted; absent: every host that runs the
    /// service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<String>>,
}

impl ContinuousAssignment {
    /// Whether `host` profiles this service.
    pub fn covers(&self, host: &str) -> bool {
        crate::host_list::hosts_cover(self.hosts.as_deref(), host)
    }

    /// The options of each segment's start: the event and the budget.
    pub fn start_options(&self) -> StartOptions {
        StartOptions {
            event: Some(self.event),
            overhead_budget: Some(f64::from(self.cpu_budget_ppm) / f64::from(PPM)),
            ..StartOptions::default()
        }
    }

    /// Checks what an agent relies on: a rate inside the agent's range, a
    /// budget in (0, 1], and a sorted, bounded host list.
    pub fn check(&self) -> Result<(), AssignmentError> {
        if self.frequency_hz == 0 || self.frequency_hz > crate::cost::MAX_FREQUENCY_HZ {
            return Err(AssignmentError::Frequency {
                id: self.id,
                frequency_hz: self.frequency_hz,
            });
        }
        if self.cpu_budget_ppm == 0 || self.cpu_budget_ppm > PPM {
            return Err(AssignmentError::Budget {
                id: self.id,
                cpu_budget_ppm: self.cpu_budget_ppm,
            });
        }
        if !crate::host_list::hosts_are_valid(self.hosts.as_deref()) {
            return Err(AssignmentError::Hosts { id: self.id });
        }
        Ok(())
    }
}

/// Why an assignment cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AssignmentError {
    #[error("continuous profile {id}: frequency {frequency_hz} Hz is outside 1..={max}", max = crate::cost::MAX_FREQUENCY_HZ)]
    Frequency { id: Uuid, frequency_hz: u32 },
    #[error(
        "continuous profile {id}: CPU budget {cpu_budget_ppm} ppm of a core is outside 1..={PPM}"
    )]
    Budget { id: Uuid, cpu_budget_ppm: u32 },
    #[error(
        "continuous profile {id}: its hosts must be sorted, unique and at most {MAX_ASSIGNED_HOSTS}"
    )]
    Hosts { id: Uuid },
    #[error("continuous profile {id} names service {service:?}, which the sync does not define")]
    UnknownService { id: Uuid, service: String },
    #[error("continuous profile {id} is assigned twice")]
    Duplicate { id: Uuid },
    #[error("{count} continuous profiles, at most {MAX_ASSIGNMENTS}")]
    TooMany { count: usize },
}

/// The start of the segment holding `unix_s`, in Unix seconds.
pub fn segment_start(unix_s: i64) -> i64 {
    unix_s.div_euclid(SEGMENT_SECS) * SEGMENT_SECS
}

/// The profile id of `host`'s segment of `assignment` that starts at
/// `segment_start_s`: the first 16 bytes of SHA-256 over a domain tag, the
/// assignment id, the segment start and the host, as a version-8 UUID.
/// The agent names its windows with it; the pipeline recognises them by
/// it.
pub fn segment_profile_id(assignment: Uuid, host: &str, segment_start_s: i64) -> Uuid {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(b"odp-continuous-segment-v1\n");
    ctx.update(assignment.as_bytes());
    ctx.update(&segment_start_s.to_le_bytes());
    ctx.update(host.as_bytes());
    let digest = ctx.finish();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.as_ref()[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}

/// Of `assignments`, the one whose segment of `host` holding `unix_s` is
/// `profile_id`, with that segment's start. What the pipeline asks of a
/// window for a profile it does not know yet.
pub fn find_segment<'a>(
    assignments: impl IntoIterator<Item = &'a ContinuousAssignment>,
    profile_id: Uuid,
    host: &str,
    unix_s: i64,
) -> Option<(&'a ContinuousAssignment, i64)> {
    let start = segment_start(unix_s);
    assignments
        .into_iter()
        .find(|a| segment_profile_id(a.id, host, start) == profile_id)
        .map(|a| (a, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment(hosts: Option<Vec<&str>>) -> ContinuousAssignment {
        ContinuousAssignment {
            id: Uuid::from_u128(7),
            service: "checkout".into(),
            event: EventKind::CpuClock,
            frequency_hz: DEFAULT_FREQUENCY_HZ,
            cpu_budget_ppm: DEFAULT_CPU_BUDGET_PPM,
            hosts: hosts.map(|h| h.into_iter().map(str::to_owned).collect()),
        }
    }

    #[test]
    fn segments_are_the_hours_of_the_epoch() {
        assert_eq!(segment_start(0), 0);
        assert_eq!(segment_start(3599), 0);
        assert_eq!(segment_start(3600), 3600);
        assert_eq!(segment_start(-1), -3600);
        assert_eq!(segment_start(1_800_003_700), 1_800_003_600);
    }

    #[test]
    fn a_segment_id_differs_by_assignment_host_and_hour_and_is_stable() {
        let id = segment_profile_id(Uuid::from_u128(7), "web-1", 3600);
        assert_eq!(id, segment_profile_id(Uuid::from_u128(7), "web-1", 3600));
        assert_ne!(id, segment_profile_id(Uuid::from_u128(8), "web-1", 3600));
        assert_ne!(id, segment_profile_id(Uuid::from_u128(7), "web-2", 3600));
        assert_ne!(id, segment_profile_id(Uuid::from_u128(7), "web-1", 7200));
        assert_eq!(id.get_version(), Some(uuid::Version::Custom));
        // Pinned (computed apart, with Python's hashlib): agents and
        // pipelines of other releases must derive the same id.
        assert_eq!(
            segment_profile_id(Uuid::nil(), "h", 0).to_string(),
            "3d105d93-144a-8edf-b807-776e034e236d"
        );
    }

    #[test]
    fn a_window_finds_its_segment_among_the_assignments() {
        let a = assignment(None);
        let b = ContinuousAssignment {
            id: Uuid::from_u128(9),
            ..assignment(None)
        };
        let id = segment_profile_id(b.id, "web-1", 7200);
        let all = [a, b.clone()];
        let (found, start) = find_segment(&all, id, "web-1", 7200 + 1234).expect("found");
        assert_eq!((found.id, start), (b.id, 7200));
        assert!(find_segment(&all, id, "web-2", 7200 + 1234).is_none());
        assert!(find_segment(&all, id, "web-1", 3600 + 1234).is_none());
    }

    #[test]
    fn hosts_absent_cover_every_host_and_a_list_only_its_own() {
        assert!(assignment(None).covers("any"));
        let listed = assignment(Some(vec!["a", "c"]));
        assert!(listed.covers("a") && listed.covers("c") && !listed.covers("b"));
    }

    #[test]
    fn check_refuses_what_an_agent_cannot_follow() {
        assert_eq!(assignment(None).check(), Ok(()));
        let zero = ContinuousAssignment {
            frequency_hz: 0,
            ..assignment(None)
        };
        assert!(matches!(
            zero.check(),
            Err(AssignmentError::Frequency { .. })
        ));
        let greedy = ContinuousAssignment {
            cpu_budget_ppm: PPM + 1,
            ..assignment(None)
        };
        assert!(matches!(
            greedy.check(),
            Err(AssignmentError::Budget { .. })
        ));
        let nothing = ContinuousAssignment {
            cpu_budget_ppm: 0,
            ..assignment(None)
        };
        assert!(matches!(
            nothing.check(),
            Err(AssignmentError::Budget { .. })
        ));
        let unsorted = assignment(Some(vec!["b", "a"]));
        assert!(matches!(
            unsorted.check(),
            Err(AssignmentError::Hosts { .. })
        ));
    }
}
