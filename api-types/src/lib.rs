//! The REST API's contract: every JSON body the api-server reads or
//! answers, in one place. The server serves these types (and, with the
//! `schema` feature, documents them in `/api/openapi.json`), the client and
//! `odpctl` read and send them, and the web UI's TypeScript types are
//! generated from the document, so one definition decides the wire shape.
//!
//! Types of the domain that the API shows as they are (a profile's
//! [`Target`], flame graph and diff trees, function shares, a target's
//! runtime) live in `odp-core` and are re-exported here.

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
            type Err = $crate::UnknownValue;

            fn from_str(text: &str) -> Result<Self, $crate::UnknownValue> {
                match text {
                    $($text => Ok($name::$variant),)+
                    other => Err($crate::UnknownValue {
                        what: stringify!($name),
                        value: other.to_owned(),
                    }),
                }
            }
        }
    };
}

pub mod channels;
pub mod control;
pub mod coverage;
pub mod error;
pub mod identities;
pub mod profiles;
pub mod queries;
pub mod rules;
pub mod run_reads;
pub mod runs;
pub mod schedules;
pub mod services;

pub use odp_core::command::UndeployMode;
pub use odp_core::diff::{DiffNode, FunctionChange};
pub use odp_core::flamegraph::FlameNode;
pub use odp_core::runtime::ProfileRuntime;
pub use odp_core::stats::FunctionShare;
pub use odp_core::{ProfileStatus, Target};

pub use channels::*;
pub use control::*;
pub use coverage::*;
pub use error::*;
pub use identities::*;
pub use profiles::*;
pub use queries::*;
pub use rules::*;
pub use run_reads::*;
pub use runs::*;
pub use schedules::*;
pub use services::*;

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

/// The default of `enabled` fields in create requests.
pub(crate) fn enabled() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_names_are_wire_names<T>(all: &[T], as_str: fn(&T) -> &'static str)
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        for value in all {
            let json = serde_json::to_value(value).unwrap();
            assert_eq!(json, as_str(value), "{value:?}");
            assert_eq!(&serde_json::from_value::<T>(json).unwrap(), value);
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
        for mode in ProfileMode::ALL {
            assert_eq!(mode.as_str().parse::<ProfileMode>().unwrap(), *mode);
        }
    }
}
