//! ODP's profile data model, pure code shared by the store, the rules, the
//! api-server and the pipeline.
//!
//! A [`Profile`] is a frame dictionary, a [`StackTree`] of call paths over
//! it (parent pointers, dense ids), the windows agents reported, thread
//! names, and samples as `(window, node, thread, count)` rows. It is
//! stored as one compact block ([`codec`]: string table, varint columns,
//! deflate), merged with others over integer ids ([`Profile::merge`]), and
//! read without rebuilding anything from strings:
//!
//! - [`select`]: windows, threads and stacks kept, summed per node, with
//!   windows of different sampling periods merged by time;
//! - [`NameTree`]: the same tree by frames' display names, as users see
//!   it, and [`View`]: a selection's counts on it, merged across profiles;
//! - [`flame`]: flame graph trees cut to a node budget, with exact totals;
//! - [`sources`]: the file and line each node of a view names;
//! - [`top`]: the hottest functions with error bounds;
//! - [`many`]: flame graphs and top tables of many views without merging
//!   their trees (aggregates);
//! - [`diff`]: differential flame graphs of two sides, cut to a node
//!   budget, and the functions whose shares moved most;
//! - [`stacks`]: stacks by name for folded, pprof, speedscope and SVG;
//! - [`windows`]: dropping and merging windows (retention, downsampling);
//! - [`frames`]: samples per distinct stack with frames deduplicated, what
//!   detection rules match;
//! - [`sums`]: the same summed part by part over a table many profiles
//!   share, keeping apart only the stacks the rules read;
//! - [`halves`]: work over many parts on two threads;
//! - [`jfr`]: Java Flight Recorder recordings as stacks of Java frames,
//!   what the agent's jvm plugin and imports read.
//!
//! Decoding never panics on bad input.

pub mod codec;
pub mod diff;
pub mod flame;
pub mod frames;
pub mod halves;
pub mod jfr;
pub mod many;
pub mod names;
pub mod profile;
pub mod select;
pub mod sources;
pub mod stacks;
pub mod sums;
pub mod top;
pub mod tree;
pub mod view;
pub mod windows;

pub use codec::{CodecError, Level};
pub use frames::{FrameRef, ProfileFrames, StackSamples};
pub use names::NameTree;
pub use profile::{Profile, ProfileBuilder, Sample, ThreadName, Window};
pub use select::{scale, weigh, NodeSums, Selection, WindowHits};
pub use sources::{SourceLine, Sources};
pub use sums::{FrameRead, FrameReads, FrameSums, StackTable};
pub use tree::StackTree;
pub use view::View;
