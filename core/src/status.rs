//! A profile's lifecycle: requested → dispatched → running → finished,
//! stopped or failed, or expired when no agent acknowledged it. Shared by
//! the store (which moves profiles only forward) and the API (which shows
//! the status).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// requested → dispatched → running → finished / stopped / failed, or
/// expired when no agent ever acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProfileStatus {
    Requested,
    Dispatched,
    Running,
    Finished,
    Stopped,
    Failed,
    Expired,
}

impl ProfileStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileStatus::Requested => "requested",
            ProfileStatus::Dispatched => "dispatched",
            ProfileStatus::Running => "running",
            ProfileStatus::Finished => "finished",
            ProfileStatus::Stopped => "stopped",
            ProfileStatus::Failed => "failed",
            ProfileStatus::Expired => "expired",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ProfileStatus::Finished
                | ProfileStatus::Stopped
                | ProfileStatus::Failed
                | ProfileStatus::Expired
        )
    }

    /// The states a profile may be in to move to `self`: lifecycle events
    /// may be redelivered or arrive late, and must never move a profile
    /// backwards or out of a terminal state.
    pub fn allowed_from(self) -> &'static [ProfileStatus] {
        use ProfileStatus::{Dispatched, Requested, Running};
        match self {
            ProfileStatus::Requested => &[],
            ProfileStatus::Dispatched => &[Requested],
            ProfileStatus::Running => &[Requested, Dispatched],
            ProfileStatus::Finished | ProfileStatus::Stopped | ProfileStatus::Failed => {
                &[Requested, Dispatched, Running]
            }
            ProfileStatus::Expired => &[Requested, Dispatched],
        }
    }
}

impl fmt::Display for ProfileStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status no profile has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown profile status {0:?}")]
pub struct UnknownStatus(pub String);

impl FromStr for ProfileStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, UnknownStatus> {
        Ok(match s {
            "requested" => ProfileStatus::Requested,
            "dispatched" => ProfileStatus::Dispatched,
            "running" => ProfileStatus::Running,
            "finished" => ProfileStatus::Finished,
            "stopped" => ProfileStatus::Stopped,
            "failed" => ProfileStatus::Failed,
            "expired" => ProfileStatus::Expired,
            other => return Err(UnknownStatus(other.to_owned())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_parse_and_never_leave_terminal_states() {
        for s in [
            ProfileStatus::Requested,
            ProfileStatus::Dispatched,
            ProfileStatus::Running,
            ProfileStatus::Finished,
            ProfileStatus::Stopped,
            ProfileStatus::Failed,
            ProfileStatus::Expired,
        ] {
            assert_eq!(s.as_str().parse::<ProfileStatus>().unwrap(), s);
            for &from in s.allowed_from() {
                assert!(!from.is_terminal(), "{s} may not follow terminal {from}");
            }
        }
        assert!("bogus".parse::<ProfileStatus>().is_err());
    }
}
