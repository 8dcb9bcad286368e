//! Java Flight Recorder recordings, read with the `jfrs` crate: what the
//! agent's `jvm` plugin reads from the recordings it dumps, and what the
//! api-server imports from an uploaded `.jfr` file.
//!
//! - [`parse`]: CPU samples (`jdk.ExecutionSample`, one per sampled
//!   running thread) or allocation samples (`jdk.ObjectAllocationSample`,
//!   weighted by the bytes they stand for), as stacks of Java frames, root
//!   first, per OS thread;
//! - [`waits`]: the lock waits (`jdk.JavaMonitorEnter`, `jdk.ThreadPark`)
//!   the plugin's `lock` mode records;
//! - [`recording`]: a whole recording at once, every kind of sample and
//!   wait with the sampling period its settings name, for imports.
//!
//! A recording is a sequence of self-contained chunks; each comes with its
//! start time, which is how the plugin recognises a chunk it already read
//! in an earlier dump. Stack traces live in each chunk's constant pool and
//! many samples share one, so frames are built once per trace and chunk.
//! [`read_events`] walks the chunks for any kind of event.
//!
//! jfrs trusts its input: a declared count becomes an allocation of that
//! size, a type that holds itself a recursion without end, a zero event
//! size a loop without end, none of which a panic handler catches. Every
//! recording is therefore walked first by `check`, which reads the
//! chunks' structure as jfrs will and refuses what would make jfrs
//! allocate more than the file could hold, recurse deeply or loop; what is
//! left, a panic inside jfrs, fails the read, not the caller's thread.

mod check;
pub mod recording;
pub mod waits;

use std::collections::HashMap;
use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use jfrs::reader::event::Accessor;
use jfrs::reader::metadata::Metadata;
use jfrs::reader::value_descriptor::ValueDescriptor;
use jfrs::reader::JfrReader;
use odp_core::Frame;

pub use check::{MAX_ELEMENT_DEPTH, MAX_VALUES, MAX_VALUE_DEPTH};

/// Which JFR event the samples come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleEvent {
    /// `jdk.ExecutionSample`: one sample of a thread running Java code.
    Execution,
    /// `jdk.ObjectAllocationSample`: weighted by the bytes allocated
    /// since the thread's previous sample.
    Allocation,
}

impl SampleEvent {
    pub fn jfr_name(self) -> &'static str {
        match self {
            SampleEvent::Execution => "jdk.ExecutionSample",
            SampleEvent::Allocation => "jdk.ObjectAllocationSample",
        }
    }

    fn thread_field(self) -> &'static str {
        match self {
            SampleEvent::Execution => "sampledThread",
            SampleEvent::Allocation => "eventThread",
        }
    }

    /// What one sample weighs: 1 for CPU, its bytes for allocation.
    fn weight(self, event: &Accessor<'_>) -> u64 {
        match self {
            SampleEvent::Execution => 1,
            SampleEvent::Allocation => event
                .get_field("weight")
                .and_then(|w| i64::try_from(w.value).ok())
                .map_or(0, |w| u64::try_from(w).unwrap_or(0)),
        }
    }
}

/// One sample: a stack and its weight (1 for CPU, bytes for allocation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JfrSample {
    /// The OS thread id; 0 when the recording does not say.
    pub tid: u32,
    pub thread_name: Option<String>,
    /// Root first.
    pub frames: Arc<[Frame]>,
    pub weight: u64,
}

/// What one chunk holds of the events read: samples, or waits
/// ([`waits`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkEvents<T> {
    /// When the chunk starts, in Unix nanoseconds: identifies the chunk.
    pub start_nanos: i64,
    /// How long the chunk lasts, as its header says.
    pub duration_nanos: i64,
    pub events: Vec<T>,
}

/// The samples of one chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkSamples {
    /// When the chunk starts, in Unix nanoseconds: identifies the chunk.
    pub start_nanos: i64,
    pub samples: Vec<JfrSample>,
}

#[derive(Debug, thiserror::Error)]
pub enum JfrError {
    #[error("not a JFR recording: {0}")]
    Format(String),
    #[error("JFR chunk {index}: {message}")]
    Chunk { index: usize, message: String },
}

/// The samples of `event` in every chunk of a recording.
pub fn parse(bytes: Vec<u8>, event: SampleEvent) -> Result<Vec<ChunkSamples>, JfrError> {
    let chunks = read_events(bytes, |_, name, value, traces| {
        if name != event.jfr_name() {
            return None;
        }
        let weight = event.weight(value);
        let frames = stack_of(value, traces)?;
        let (tid, thread_name) = thread_of(value, event.thread_field());
        Some(JfrSample {
            tid,
            thread_name,
            frames,
            weight,
        })
    })?;
    Ok(chunks
        .into_iter()
        .map(|c| ChunkSamples {
            start_nanos: c.start_nanos,
            samples: c.events,
        })
        .collect())
}

/// A chunk's clock: JFR times events in ticks of the chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkClock {
    /// The chunk's start, in Unix nanoseconds and in ticks.
    pub start_nanos: i64,
    pub start_ticks: i64,
    pub ticks_per_second: i64,
}

impl ChunkClock {
    /// A span of `ticks`, in nanoseconds (0 when negative).
    pub fn nanos(&self, ticks: i64) -> u64 {
        let per_second = u128::try_from(self.ticks_per_second.max(1)).unwrap_or(1);
        let ticks = u128::try_from(ticks).unwrap_or(0);
        u64::try_from(ticks * 1_000_000_000 / per_second).unwrap_or(u64::MAX)
    }

    /// The time of a tick stamp, in Unix nanoseconds.
    pub fn unix_nanos(&self, ticks: i64) -> i64 {
        let since = ticks.saturating_sub(self.start_ticks);
        let per_second = i128::from(self.ticks_per_second.max(1));
        let nanos = i128::from(since) * 1_000_000_000 / per_second;
        self.start_nanos
            .saturating_add(i64::try_from(nanos).unwrap_or(i64::MAX))
    }
}

/// The chunk an event is read from: its clock, and the names of the event
/// types it declares (settings name event types by id).
pub struct ChunkView<'a> {
    pub clock: ChunkClock,
    metadata: &'a Metadata,
}

impl ChunkView<'_> {
    /// The name of the chunk's event type `id` (`jdk.ExecutionSample`).
    pub fn type_name(&self, id: i64) -> Option<&str> {
        self.metadata.type_pool.get(id).map(|t| t.name())
    }
}

/// Stack traces built so far in a recording, by constant pool index.
pub type Traces = HashMap<i64, Arc<[Frame]>>;

/// Every chunk of a recording, each with what `read` makes of its events
/// (`None` skips one); `read` gets the chunk, the event's type name, the
/// event and the chunk's stack traces built so far.
pub fn read_events<T>(
    bytes: Vec<u8>,
    mut read: impl FnMut(&ChunkView<'_>, &str, &Accessor<'_>, &mut Traces) -> Option<T>,
) -> Result<Vec<ChunkEvents<T>>, JfrError> {
    check::check(&bytes)?;
    // What the check leaves to jfrs, a panic on some malformed input, must
    // fail this read, not the agent's profile thread or the server.
    catch_unwind(AssertUnwindSafe(|| read_checked(bytes, &mut read)))
        .unwrap_or_else(|_| Err(JfrError::Format("the JFR reader panicked".to_owned())))
}

fn read_checked<T>(
    bytes: Vec<u8>,
    read: &mut impl FnMut(&ChunkView<'_>, &str, &Accessor<'_>, &mut Traces) -> Option<T>,
) -> Result<Vec<ChunkEvents<T>>, JfrError> {
    let mut reader = JfrReader::new(Cursor::new(bytes));
    let mut out = Vec::new();
    // Stack trace ids number the JVM's traces across chunks, and the first
    // events of a chunk may still name a trace the chunk before it held
    // (as the JDK's own reader allows): traces are kept for the whole file.
    let mut traces = Traces::new();
    for (index, chunk) in reader.chunks().enumerate() {
        let chunk_error = |message: String| JfrError::Chunk { index, message };
        let (mut chunk_reader, chunk) = chunk.map_err(|e| chunk_error(e.to_string()))?;
        let view = ChunkView {
            clock: ChunkClock {
                start_nanos: chunk.header.start_time_nanos,
                start_ticks: chunk.header.start_ticks,
                ticks_per_second: chunk.header.ticks_per_second,
            },
            metadata: &chunk.metadata,
        };
        let mut events = Vec::new();
        for event in chunk_reader.events(&chunk) {
            let event = event.map_err(|e| chunk_error(e.to_string()))?;
            if let Some(item) = read(&view, event.class.name(), &event.value(), &mut traces) {
                events.push(item);
            }
        }
        out.push(ChunkEvents {
            start_nanos: view.clock.start_nanos,
            duration_nanos: chunk.header.duration_nanos,
            events,
        });
    }
    Ok(out)
}

/// The OS thread id (0 when the recording does not say) and the name of
/// the thread in an event's `field`.
pub fn thread_of(event: &Accessor<'_>, field: &str) -> (u32, Option<String>) {
    let thread = event.get_field(field);
    let tid = thread
        .as_ref()
        .and_then(|t| t.get_field("osThreadId"))
        .and_then(|id| i64::try_from(id.value).ok())
        .and_then(|id| u32::try_from(id).ok())
        .unwrap_or(0);
    let thread_name = thread
        .as_ref()
        .and_then(|t| t.get_field("javaName").or_else(|| t.get_field("osName")))
        .and_then(|n| <&str>::try_from(n.value).ok())
        .map(str::to_owned);
    (tid, thread_name)
}

/// The frames of an event's stack trace, root first, built once per trace
/// of the chunk. `None` for an event without a stack.
pub fn stack_of(event: &Accessor<'_>, traces: &mut Traces) -> Option<Arc<[Frame]>> {
    let raw = event.get_field_raw("stackTrace")?;
    let key = match raw.value {
        ValueDescriptor::ConstantPool { constant_index, .. } => Some(*constant_index),
        _ => None,
    };
    if let Some(frames) = key.and_then(|k| traces.get(&k)) {
        return Some(frames.clone());
    }
    let trace = raw.resolve()?;
    let mut frames: Vec<Frame> = trace
        .get_field("frames")?
        .as_iter()?
        .map(|frame| java_frame(&frame))
        .collect();
    if frames.is_empty() {
        return None;
    }
    // JFR lists the leaf first.
    frames.reverse();
    let frames: Arc<[Frame]> = frames.into();
    if let Some(k) = key {
        traces.insert(k, frames.clone());
    }
    Some(frames)
}

/// `java.util.Hashtable.put` in package `java.util`, with its line.
fn java_frame(frame: &Accessor<'_>) -> Frame {
    let method = frame.get_field("method");
    let class = method
        .as_ref()
        .and_then(|m| m.get_field("type"))
        .and_then(|t| class_name(&t));
    let name = method.as_ref().and_then(|m| symbol(m.get_field("name")));
    let line = frame
        .get_field("lineNumber")
        .and_then(|l| i32::try_from(l.value).ok())
        .and_then(|l| u32::try_from(l).ok())
        .filter(|&l| l > 0);
    let package = class.as_deref().map(package_of).unwrap_or_default();
    let function = match (class, name) {
        (Some(class), Some(name)) => format!("{class}.{name}"),
        (None, Some(name)) => name,
        (Some(class), None) => format!("{class}.[unknown]"),
        (None, None) => "[unknown]".to_owned(),
    };
    Frame {
        function,
        module: package,
        file: None,
        line,
    }
}

/// A JFR symbol's text.
fn symbol(accessor: Option<Accessor<'_>>) -> Option<String> {
    let value = accessor?.get_field("string")?;
    <&str>::try_from(value.value).ok().map(str::to_owned)
}

/// A `java.lang.Class` constant's name with dots (`java.util.HashMap$Node`).
pub fn class_name(class: &Accessor<'_>) -> Option<String> {
    symbol(class.get_field("name")).map(|internal| internal.replace('/', "."))
}

/// The package of a class named with dots; empty for the default package.
pub fn package_of(class: &str) -> String {
    class
        .rsplit_once('.')
        .map(|(package, _)| package.to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
