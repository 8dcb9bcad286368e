//! Samples out of a JFR recording, read with the `jfrs` crate: CPU samples
//! (`jdk.ExecutionSample`, one per sampled running thread) or allocation
//! samples (`jdk.ObjectAllocationSample`, weighted by the bytes they stand
//! for), as stacks of Java frames, root first, per OS thread.
//!
//! A recording is a sequence of self-contained chunks; each comes with its
//! start time, which is how the session recognises a chunk it already read
//! in an earlier dump. Stack traces live in each chunk's constant pool and
//! many samples share one, so frames are built once per trace and chunk.
//! [`read_events`] walks the chunks for any kind of event; the lock mode's
//! waits are read with it in [`super::lock`].

use std::collections::HashMap;
use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use jfrs::reader::event::Accessor;
use jfrs::reader::value_descriptor::ValueDescriptor;
use jfrs::reader::JfrReader;
use odp_core::Frame;

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
/// ([`super::lock`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkEvents<T> {
    /// When the chunk starts, in Unix nanoseconds: identifies the chunk.
    pub start_nanos: i64,
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
        let weight = match event {
            SampleEvent::Execution => 1,
            SampleEvent::Allocation => value
                .get_field("weight")
                .and_then(|w| i64::try_from(w.value).ok())
                .map_or(0, |w| u64::try_from(w).unwrap_or(0)),
        };
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

/// Stack traces built so far in a recording, by constant pool index.
pub type Traces = HashMap<i64, Arc<[Frame]>>;

/// Every chunk of a recording, each with what `read` makes of its events
/// (`None` skips one); `read` gets the chunk's clock, the event's type
/// name, the event and the chunk's stack traces built so far.
pub fn read_events<T>(
    bytes: Vec<u8>,
    mut read: impl FnMut(&ChunkClock, &str, &Accessor<'_>, &mut Traces) -> Option<T>,
) -> Result<Vec<ChunkEvents<T>>, JfrError> {
    check_chunk_sizes(&bytes)?;
    // jfrs is not hardened against every malformed input; a panic in it
    // must fail this dump, not the agent's profile thread.
    catch_unwind(AssertUnwindSafe(|| read_checked(bytes, &mut read)))
        .unwrap_or_else(|_| Err(JfrError::Format("the JFR reader panicked".to_owned())))
}

/// Every chunk header's size must fit the file: jfrs allocates a chunk's
/// declared size before reading it.
fn check_chunk_sizes(bytes: &[u8]) -> Result<(), JfrError> {
    const HEADER: usize = 68;
    let mut at = 0;
    while at < bytes.len() {
        let header = bytes
            .get(at..at + HEADER)
            .ok_or_else(|| JfrError::Format(format!("truncated chunk header at byte {at}")))?;
        if &header[..4] != b"FLR\0" {
            return Err(JfrError::Format(format!("no chunk magic at byte {at}")));
        }
        let size = i64::from_be_bytes(header[8..16].try_into().expect("8 bytes"));
        let size = usize::try_from(size).unwrap_or(0);
        if size < HEADER || size > bytes.len() - at {
            return Err(JfrError::Format(format!(
                "chunk at byte {at} claims {size} bytes"
            )));
        }
        at += size;
    }
    if bytes.is_empty() {
        return Err(JfrError::Format("empty file".to_owned()));
    }
    Ok(())
}

fn read_checked<T>(
    bytes: Vec<u8>,
    read: &mut impl FnMut(&ChunkClock, &str, &Accessor<'_>, &mut Traces) -> Option<T>,
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
        let clock = ChunkClock {
            start_nanos: chunk.header.start_time_nanos,
            start_ticks: chunk.header.start_ticks,
            ticks_per_second: chunk.header.ticks_per_second,
        };
        let mut events = Vec::new();
        for event in chunk_reader.events(&chunk) {
            let event = event.map_err(|e| chunk_error(e.to_string()))?;
            if let Some(item) = read(&clock, event.class.name(), &event.value(), &mut traces) {
                events.push(item);
            }
        }
        out.push(ChunkEvents {
            start_nanos: clock.start_nanos,
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
mod tests {
    use super::*;

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse(Vec::new(), SampleEvent::Execution).is_err());
        assert!(parse(
            b"not a recording at all, clearly".repeat(4),
            SampleEvent::Execution
        )
        .is_err());
        // A chunk header claiming more bytes than the file has.
        let mut lying = b"FLR\0\0\x02\0\x01".to_vec();
        lying.extend_from_slice(&i64::MAX.to_be_bytes());
        lying.resize(80, 0);
        let error = parse(lying, SampleEvent::Execution).unwrap_err();
        assert!(error.to_string().contains("claims"), "{error}");
    }
}
