//! The domain's enums that are stored by name: what a profile measures,
//! the kinds and states of control requests, deliveries, re-analyses and
//! schedule runs. Their names are the values of the store's text columns
//! and of the REST API's JSON (`odp-api-types` re-exports them), so each
//! is defined once, here, beside [`crate::ProfileStatus`].

use crate::EventKind;

/// An enum that travels as one of its names (snake_case unless a variant
/// is renamed), in JSON and in the database's text columns: `ALL`,
/// `as_str`, `Display` and `FromStr` (how the store reads a column into
/// it).
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$variant_meta:meta])* $variant:ident => $text:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$variant_meta])* $variant,)+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownValue;

            fn from_str(text: &str) -> Result<Self, UnknownValue> {
                match text {
                    $($text => Ok($name::$variant),)+
                    other => Err(UnknownValue {
                        what: stringify!($name),
                        value: other.to_owned(),
                    }),
                }
            }
        }
    };
}

/// A name that is none of an enum's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownValue {
    pub what: &'static str,
    pub value: String,
}

impl std::fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} is no {}", self.value, self.what)
    }
}

impl std::error::Error for UnknownValue {}

wire_enum! {
    /// What a profile measures. Profiles of different modes of one target
    /// may run at the same time (a CPU and an allocation profile); two of
    /// the same mode may not.
    pub enum ProfileMode {
        Cpu => "cpu",
        Wall => "wall",
        #[serde(rename = "off-cpu")]
        OffCpu => "off-cpu",
        Lock => "lock",
        Alloc => "alloc",
        Heap => "heap",
    }
}

impl ProfileMode {
    /// The mode of a profile measuring `event` (CPU when the agent's
    /// default event is asked for).
    pub fn of(event: Option<EventKind>) -> ProfileMode {
        match event {
            None | Some(EventKind::Cycles | EventKind::CpuClock) => ProfileMode::Cpu,
            Some(EventKind::Wall) => ProfileMode::Wall,
            Some(EventKind::OffCpu) => ProfileMode::OffCpu,
            Some(EventKind::Lock) => ProfileMode::Lock,
            Some(EventKind::AllocBytes) => ProfileMode::Alloc,
            Some(EventKind::HeapBytes) => ProfileMode::Heap,
        }
    }
}

wire_enum! {
    /// What a control request asks for.
    pub enum RequestKind {
        Deploy => "deploy",
        Undeploy => "undeploy",
        Stop => "stop",
    }
}

wire_enum! {
    /// Where a control request stands.
    pub enum RequestStatus {
        Requested => "requested",
        Dispatched => "dispatched",
        Running => "running",
        Finished => "finished",
        Failed => "failed",
    }
}

wire_enum! {
    /// How a channel sends its alerts.
    pub enum ChannelKind {
        /// POSTs each alert as JSON signed with the secret (`X-ODP-Signature`).
        Webhook => "webhook",
        /// Mails each alert as plain text through an SMTP relay.
        Email => "email",
    }
}

wire_enum! {
    /// Where a delivery stands.
    pub enum DeliveryStatus {
        Pending => "pending",
        Delivered => "delivered",
        Failed => "failed",
    }
}

wire_enum! {
    /// Where a re-analysis stands.
    pub enum ReanalysisStatus {
        Pending => "pending",
        Running => "running",
        Finished => "finished",
        Failed => "failed",
    }
}

wire_enum! {
    /// What happened to one occurrence of a schedule.
    pub enum RunOutcome {
        /// A profile was started; `profile_id` links it (a run schedule's
        /// run: `run_id`).
        Started => "started",
        /// Not fired: it fell due while no scheduler ran, or too long ago.
        Missed => "missed",
        /// Not fired: the target already had a live profile (a run
        /// schedule: its previous run is still running).
        SkippedBusy => "skipped_busy",
        /// Firing failed; `detail` says why.
        Failed => "failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_names_are_wire_names<T>(all: &[T], as_str: fn(&T) -> &'static str)
    where
        T: serde::Serialize
            + serde::de::DeserializeOwned
            + std::str::FromStr
            + PartialEq
            + std::fmt::Debug,
        T::Err: std::fmt::Debug,
    {
        for value in all {
            let json = serde_json::to_value(value).unwrap();
            assert_eq!(json, as_str(value), "{value:?}");
            assert_eq!(&serde_json::from_value::<T>(json).unwrap(), value);
            assert_eq!(&as_str(value).parse::<T>().unwrap(), value);
        }
    }

    #[test]
    fn every_wire_enum_shows_the_name_it_parses() {
        json_names_are_wire_names(RequestKind::ALL, |v| v.as_str());
        json_names_are_wire_names(RequestStatus::ALL, |v| v.as_str());
        json_names_are_wire_names(ProfileMode::ALL, |v| v.as_str());
        json_names_are_wire_names(DeliveryStatus::ALL, |v| v.as_str());
        json_names_are_wire_names(ReanalysisStatus::ALL, |v| v.as_str());
        json_names_are_wire_names(RunOutcome::ALL, |v| v.as_str());
        json_names_are_wire_names(ChannelKind::ALL, |v| v.as_str());
        assert_eq!(
            "bogus".parse::<ChannelKind>().unwrap_err().to_string(),
            "\"bogus\" is no ChannelKind"
        );
    }
}
