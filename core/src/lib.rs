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
//! - [`flamegraph`], [`stats`] and [`diff`]: the shapes reads answer in
//!   (flame graph nodes, function shares, differential nodes and when a
//!   change is significant), which `odp-profile` computes; [`folded`]:
//!   stacks as text; [`filter`] and [`merge`]: how reads select stacks
//!   and aggregate across instances;
//! - [`domain`]: the enums stored and shown by name (a profile's mode,
//!   requests', deliveries', re-analyses' and schedule runs' states), with
//!   [`status`]: a profile's lifecycle; [`timeline`]: a profile's windows
//!   and what they earned against what they hold;
//! - [`pprof`] and [`speedscope`]: the files other tools exchange
//!   profiles in;
//! - [`hash`] and [`partition`]: the content hashes that make storage
//!   deduplicate, and Kafka's key partitioner so an agent can find its own
//!   partition.
//!
//! Decoders return errors on any malformed input and never panic: the
//! pipeline sends such input to the dead-letter topic with the error's text.

pub mod command;
pub mod continuous;
pub mod cost;
pub mod coverage;
pub mod diff;
pub mod domain;
pub mod event;
pub mod filter;
pub mod flamegraph;
pub mod folded;
pub mod hash;
mod host_list;
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
pub mod timeline;
pub mod token;
pub mod trend;
pub mod trigger;
pub mod wire;

pub use model::{EventKind, Frame, Language, Target, WeightedStack};
pub use snapshot::{Snapshot, SnapshotBuilder, StackCount, ThreadInfo};
pub use status::ProfileStatus;
