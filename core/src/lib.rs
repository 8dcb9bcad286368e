//! The sans-I/O core of ODP.
//!
//! Everything that crosses a process boundary is defined here, as plain data
//! with encoders and decoders that never touch a socket or a file:
//!
//! - [`model`]: frames, events (what a sample measures) and targets;
//! - [`snapshot`]: one aggregation window of one agent, the compact binary
//!   message on `odp.stacks`;
//! - [`command`]: the signed commands on `odp.commands`, and their verifier;
//! - [`cost`]: per-profile cost-control options of a start command and
//!   the agent's reports of what it adjusted;
//! - [`event`]: lifecycle and heartbeat messages on `odp.events`, with
//!   [`runtime`]: what an agent learned about a target's runtime, and
//!   [`liveness`]: which of several agents claiming one host keeps it;
//! - [`folded`], [`flamegraph`] and [`stats`]: what queries turn stored
//!   stacks into; [`filter`], [`merge`] and [`diff`]: how they select,
//!   aggregate across instances and compare them;
//! - [`pprof`] and [`speedscope`]: the files other tools exchange
//!   profiles in;
//! - [`hash`] and [`partition`]: the content hashes that make storage
//!   deduplicate, and Kafka's key partitioner so an agent can find its own
//!   partition.
//!
//! Decoders return errors on any malformed input and never panic: the
//! pipeline sends such input to the dead-letter topic with the error's text.

pub mod command;
pub mod cost;
pub mod coverage;
pub mod diff;
pub mod event;
pub mod filter;
pub mod flamegraph;
pub mod folded;
pub mod hash;
pub mod identity;
pub mod liveness;
pub mod merge;
pub mod model;
pub mod partition;
mod pattern;
pub mod pprof;
pub mod pyroscope;
pub mod run;
pub mod runtime;
pub mod service;
pub mod snapshot;
pub mod speedscope;
pub mod stats;
pub mod status;
pub mod token;
pub mod wire;

pub use model::{EventKind, Frame, Language, Target, WeightedStack};
pub use snapshot::{Snapshot, SnapshotBuilder, StackCount, ThreadInfo};
pub use status::ProfileStatus;
