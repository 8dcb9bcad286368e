//! The REST API's contract: every JSON body the api-server reads or
//! answers, in one place. The server serves these types (and, with the
//! `schema` feature, documents them in `/api/openapi.json`), the client and
//! `odpctl` read and send them, and the web UI's TypeScript types are
//! generated from the document, so one definition decides the wire shape.
//!
//! Types of the domain that the API shows as they are (a profile's
//! [`Target`], flame graph and diff trees, function shares, a target's
//! runtime, a timeline's windows and their coverage, a run schedule's
//! run, and the enums the store keeps by name such as [`ProfileMode`])
//! live in `odp-core` and are re-exported here: the store depends on
//! `odp-core`, never on this contract.

pub mod channels;
pub mod continuous;
pub mod control;
pub mod error;
pub mod identities;
pub mod profiles;
pub mod queries;
pub mod rules;
pub mod run_reads;
pub mod runs;
pub mod schedules;
pub mod services;
pub mod triggers;

pub use odp_core::command::UndeployMode;
pub use odp_core::diff::{DiffNode, FunctionChange};
pub use odp_core::domain::{
    ChannelKind, DeliveryStatus, ProfileMode, ReanalysisStatus, RequestKind, RequestStatus,
    RunOutcome, UnknownValue,
};
pub use odp_core::flamegraph::FlameNode;
pub use odp_core::run::ScheduleRun;
pub use odp_core::runtime::ProfileRuntime;
pub use odp_core::stats::FunctionShare;
pub use odp_core::timeline::{
    loss_in_words, LostSamples, SampleCoverage, TimelineWindow, MISSING_WARNING_SHARE,
};
pub use odp_core::{ProfileStatus, Target};

pub use channels::*;
pub use continuous::*;
pub use control::*;
pub use error::*;
pub use identities::*;
pub use profiles::*;
pub use queries::*;
pub use rules::*;
pub use run_reads::*;
pub use runs::*;
pub use schedules::*;
pub use services::*;
pub use triggers::*;

/// The default of `enabled` fields in create requests.
pub(crate) fn enabled() -> bool {
    true
}
