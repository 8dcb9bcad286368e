//! The REST API's contract: every JSON body the api-server reads or
//! answers, in one place. The server serves these types (and, with the
//! `schema` feature, documents them in `/api/openapi.json`), the client and
//! `odpctl` read and send them, and the web UI's TypeScript types are
//! generated from the document, so one definition decides the wire shape.
//!
//! Types of the domain that the API shows as they are (a profile's
//! [`Target`], flame graph and diff trees, function shares, a target's
//! runtime) live in `odp-core` and are re-exported here.

pub mod channels;
pub mod control;
pub mod error;
pub mod profiles;
pub mod queries;
pub mod rules;
pub mod schedules;

pub use odp_core::command::UndeployMode;
pub use odp_core::diff::{DiffNode, FunctionChange};
pub use odp_core::flamegraph::FlameNode;
pub use odp_core::runtime::ProfileRuntime;
pub use odp_core::stats::FunctionShare;
pub use odp_core::{ProfileStatus, Target};

pub use channels::*;
pub use control::*;
pub use error::*;
pub use profiles::*;
pub use queries::*;
pub use rules::*;
pub use schedules::*;

/// The default of `enabled` fields in create requests.
pub(crate) fn enabled() -> bool {
    true
}
