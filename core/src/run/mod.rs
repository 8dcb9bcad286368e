//! Runs: profiling a service across its fleet rather than one host.
//!
//! A run chooses some of the live hosts that run a service, profiles them
//! all at once, and may stop as soon as its aggregate is precise enough.
//! This module holds the decisions such a run makes, as pure functions
//! the API calls and tests can check without a broker or a database:
//!
//! - [`selection`]: which hosts, chosen uniformly (or by strata of their
//!   labels) and reproducibly from a seed;
//! - [`precision`]: whether the top K self shares of the aggregate are
//!   known to ±ε yet, with a between-host error because hosts differ;
//! - [`rng`]: the seeded generator both rely on, fixed so recorded seeds
//!   stay meaningful;
//! - [`ScheduleRun`]: the run a run schedule starts at each firing.

pub mod outliers;
pub mod precision;
pub mod rng;
mod schedule;
pub mod selection;

pub use precision::{
    Aggregate, ShareEstimate, StderrMethod, StopDecision, StopRule, StopRuleError,
};
pub use schedule::ScheduleRun;
pub use selection::{
    select_hosts, Host, HostSelection, Selection, SelectionError, SelectionRequest, Stratum,
};
