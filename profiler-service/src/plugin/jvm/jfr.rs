//! Samples out of a JFR recording, read with the `jfrs` crate: CPU samples
//! (`jdk.ExecutionSample`, one per sampled running thread) or allocation
//! samples (`jdk.ObjectAllocationSample`, weighted by the bytes they stand
//! for), as stacks of Java frames, root first, per OS thread.
//!
//! A recording is a sequence of self-contained chunks; each comes with its
//! start time, which is how the session recognises a chunk it already read
//! in an earlier dump. Stack traces live in each chunk's constant pool and
//! many samples share one, so frames are built once per trace and chunk.

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
    check_chunk_sizes(&bytes)?;
    // jfrs is not hardened against every malformed input; a panic in it
    // must fail this dump, not the agent's profile thread.
    catch_unwind(AssertUnwindSafe(|| parse_checked(bytes, event)))
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

fn parse_checked(bytes: Vec<u8>, event: SampleEvent) -> Result<Vec<ChunkSamples>, JfrError> {
    let mut reader = JfrReader::new(Cursor::new(bytes));
    let mut out = Vec::new();
    for (index, chunk) in reader.chunks().enumerate() {
        let chunk_error = |message: String| JfrError::Chunk { index, message };
        let (mut chunk_reader, chunk) = chunk.map_err(|e| chunk_error(e.to_string()))?;
        let mut traces: HashMap<i64, Arc<[Frame]>> = HashMap::new();
        let mut samples = Vec::new();
        for read in chunk_reader.events(&chunk) {
            let read = read.map_err(|e| chunk_error(e.to_string()))?;
            if read.class.name() != event.jfr_name() {
                continue;
            }
            let value = read.value();
            let weight = match event {
                SampleEvent::Execution => 1,
                SampleEvent::Allocation => value
                    .get_field("weight")
                    .and_then(|w| i64::try_from(w.value).ok())
                    .map_or(0, |w| u64::try_from(w).unwrap_or(0)),
            };
            let Some(frames) = stack_of(&value, &mut traces) else {
                continue;
            };
            let thread = value.get_field(event.thread_field());
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
            samples.push(JfrSample {
                tid,
                thread_name,
                frames,
                weight,
            });
        }
        out.push(ChunkSamples {
            start_nanos: chunk.header.start_time_nanos,
            samples,
        });
    }
    Ok(out)
}

/// The frames of an event's stack trace, root first, built once per trace
/// of the chunk. `None` for an event without a stack.
fn stack_of(event: &Accessor<'_>, traces: &mut HashMap<i64, Arc<[Frame]>>) -> Option<Arc<[Frame]>> {
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
    let symbol = |accessor: Option<Accessor<'_>>| -> Option<String> {
        let value = accessor?.get_field("string")?;
        <&str>::try_from(value.value).ok().map(str::to_owned)
    };
    let class = method
        .as_ref()
        .and_then(|m| m.get_field("type"))
        .and_then(|t| symbol(t.get_field("name")))
        .map(|internal| internal.replace('/', "."));
    let name = method.as_ref().and_then(|m| symbol(m.get_field("name")));
    let line = frame
        .get_field("lineNumber")
        .and_then(|l| i32::try_from(l.value).ok())
        .and_then(|l| u32::try_from(l).ok())
        .filter(|&l| l > 0);
    let package = class
        .as_deref()
        .and_then(|c| c.rsplit_once('.'))
        .map(|(package, _)| package.to_owned())
        .unwrap_or_default();
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
