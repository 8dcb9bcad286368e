//! Snapshots: one aggregation window of one profile on one agent, the
//! message on `odp.stacks`.
//!
//! Layout (version 2), all integers LEB128 varints unless said otherwise:
//!
//! ```text
//! magic "ODPS" | version u8 | codec u8 (0 none, 1 lz4) | body length u32 LE | body
//! body:  profile id (16 bytes) | host str | agent id str | sequence
//!        | window start ms (zigzag) | window end ms (zigzag)
//!        | event u8 | period | frequency hz
//!        | frames: count, then function str, module str, file str ("" = none), line (0 = none)
//!        | threads: count, then tid, name str
//!        | stacks: count, then tid (0 = none), count, depth, frame indexes root first
//!        | coverage (version 2 on): expected + 1 (0 = unknown),
//!          then loss reasons: count, then reason u8, samples
//! ```
//!
//! Version 1 snapshots (no coverage) are still read.
//!
//! Frames are deduplicated within a snapshot, so a stack costs one small
//! integer per frame. The `(agent id, profile id, sequence)` triple makes
//! ingestion idempotent.

use std::collections::HashMap;

use foldhash::fast::RandomState;
use thiserror::Error;
use uuid::Uuid;

use crate::coverage::{Coverage, CoverageError};
use crate::model::{EventKind, Frame};
use crate::wire::{Reader, WireError, Writer};

pub const MAGIC: &[u8; 4] = b"ODPS";
pub const VERSION: u8 = 2;
/// The oldest version read: the same layout without coverage.
const FIRST_VERSION: u8 = 1;
const CODEC_NONE: u8 = 0;
const CODEC_LZ4: u8 = 1;
const HEADER_LEN: usize = 10;
/// A body larger than this is refused before decompressing: a window of a
/// real profile is kilobytes to a few megabytes.
pub const MAX_BODY_BYTES: usize = 64 << 20;
/// Deeper stacks are refused; kernels cap call chains at 127 frames and
/// interpreters far below this.
pub const MAX_STACK_DEPTH: usize = 4096;
/// Most samples one window may carry: 2^40, far above what any window can
/// earn (10 kHz for 300 s on 300,000 threads), and low enough that the
/// sums of 2^23 such windows still fit a `u64`. A claim above it is a
/// forgery or corruption, and reads must never wrap on it.
pub const MAX_WINDOW_SAMPLES: u64 = 1 << 40;

#[derive(Debug, Error)]
pub enum SnapshotError {
    #[error("not a snapshot: bad magic bytes")]
    BadMagic,
    #[error("unsupported snapshot version {0} (this build reads version {VERSION})")]
    UnsupportedVersion(u8),
    #[error("unknown compression codec {0}")]
    UnknownCodec(u8),
    #[error("body of {0} bytes exceeds the {MAX_BODY_BYTES} byte limit")]
    BodyTooLarge(u64),
    #[error("decompression failed: {0}")]
    Decompress(String),
    #[error("malformed snapshot body: {0}")]
    Wire(#[from] WireError),
    #[error("unknown event code {0}")]
    UnknownEvent(u8),
    #[error("stack {stack} refers to frame {index} but the snapshot has {frames} frames")]
    FrameOutOfRange {
        stack: usize,
        index: u64,
        frames: usize,
    },
    #[error("stack {0} is empty")]
    EmptyStack(usize),
    #[error("stack {stack} is {depth} frames deep, more than {MAX_STACK_DEPTH}")]
    StackTooDeep { stack: usize, depth: usize },
    #[error("window ends ({end}) before it starts ({start})")]
    InvertedWindow { start: i64, end: i64 },
    #[error("{0} trailing bytes after the snapshot body")]
    TrailingBytes(usize),
    #[error("the window's counts add up to more than {MAX_WINDOW_SAMPLES} samples")]
    TooManySamples,
    #[error("malformed coverage: {0}")]
    Coverage(#[from] CoverageError),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    pub tid: u32,
    pub name: String,
}

/// One distinct stack of a window and how many samples landed on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackCount {
    /// Indexes into [`Snapshot::frames`], root first, leaf last.
    pub frames: Vec<u32>,
    /// The thread the samples came from; 0 when the plugin cannot say.
    pub tid: u32,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub profile_id: Uuid,
    pub host: String,
    pub agent_id: String,
    /// 0, 1, 2... per (agent, profile): the window's position in the profile.
    pub sequence: u64,
    /// Window bounds, Unix milliseconds.
    pub window_start_ms: i64,
    pub window_end_ms: i64,
    pub event: EventKind,
    /// Event units one sample stands for (nanoseconds for `cpu-clock`,
    /// cycles for `cycles`, bytes for allocations).
    pub period: u64,
    /// Sampling frequency in force for this window, 0 when sampling is by
    /// period instead of frequency.
    pub frequency_hz: u32,
    pub frames: Vec<Frame>,
    pub threads: Vec<ThreadInfo>,
    pub stacks: Vec<StackCount>,
    /// What the window earned and lost, when the agent measured it.
    pub coverage: Coverage,
}

impl Snapshot {
    pub fn total_samples(&self) -> u64 {
        self.stacks
            .iter()
            .fold(0u64, |total, s| total.saturating_add(s.count))
    }

    /// The record of this window's loss on the way: the same window with
    /// no samples, what it held counted as lost in transport, so that the
    /// profile still says what its target earned and why it lacks it.
    /// `None` for a window with no samples, which loses nothing.
    pub fn lost_in_transport(&self) -> Option<Snapshot> {
        let samples = self.total_samples();
        if samples == 0 {
            return None;
        }
        let mut coverage = self.coverage;
        coverage
            .lost
            .add(crate::coverage::LossReason::Transport, samples);
        Some(Snapshot {
            host: self.host.clone(),
            agent_id: self.agent_id.clone(),
            frames: Vec::new(),
            threads: Vec::new(),
            stacks: Vec::new(),
            coverage,
            ..*self
        })
    }

    /// The frames of one stack, root first.
    pub fn stack_frames<'a>(
        &'a self,
        stack: &'a StackCount,
    ) -> impl Iterator<Item = &'a Frame> + 'a {
        stack.frames.iter().map(|&i| &self.frames[i as usize])
    }

    /// Encodes with LZ4 compression.
    pub fn encode(&self) -> Vec<u8> {
        let body = self.encode_body();
        let compressed = lz4_flex::compress(&body);
        let mut w = Writer::default();
        w.bytes(MAGIC);
        w.u8(VERSION);
        w.u8(CODEC_LZ4);
        w.bytes(&(body.len() as u32).to_le_bytes());
        w.bytes(&compressed);
        w.into_inner()
    }

    /// Encodes without compression (for tests and debugging).
    pub fn encode_uncompressed(&self) -> Vec<u8> {
        let body = self.encode_body();
        let mut w = Writer::default();
        w.bytes(MAGIC);
        w.u8(VERSION);
        w.u8(CODEC_NONE);
        w.bytes(&(body.len() as u32).to_le_bytes());
        w.bytes(&body);
        w.into_inner()
    }

    fn encode_body(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.bytes(self.profile_id.as_bytes());
        w.str(&self.host);
        w.str(&self.agent_id);
        w.varint(self.sequence);
        w.zigzag(self.window_start_ms);
        w.zigzag(self.window_end_ms);
        w.u8(self.event.code());
        w.varint(self.period);
        w.varint(u64::from(self.frequency_hz));
        w.varint(self.frames.len() as u64);
        for frame in &self.frames {
            w.str(&frame.function);
            w.str(&frame.module);
            w.str(frame.file.as_deref().unwrap_or(""));
            w.varint(u64::from(frame.line.unwrap_or(0)));
        }
        w.varint(self.threads.len() as u64);
        for thread in &self.threads {
            w.varint(u64::from(thread.tid));
            w.str(&thread.name);
        }
        w.varint(self.stacks.len() as u64);
        for stack in &self.stacks {
            w.varint(u64::from(stack.tid));
            w.varint(stack.count);
            w.varint(stack.frames.len() as u64);
            for &index in &stack.frames {
                w.varint(u64::from(index));
            }
        }
        self.coverage.encode(&mut w);
        w.into_inner()
    }

    /// Decodes and validates a snapshot. Any malformed input is an error.
    pub fn decode(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        if bytes.len() < HEADER_LEN || &bytes[..4] != MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let version = bytes[4];
        if !(FIRST_VERSION..=VERSION).contains(&version) {
            return Err(SnapshotError::UnsupportedVersion(version));
        }
        let body_len = u32::from_le_bytes([bytes[6], bytes[7], bytes[8], bytes[9]]) as usize;
        if body_len > MAX_BODY_BYTES {
            return Err(SnapshotError::BodyTooLarge(body_len as u64));
        }
        let payload = &bytes[HEADER_LEN..];
        let body = match bytes[5] {
            CODEC_NONE => {
                if payload.len() != body_len {
                    return Err(SnapshotError::Decompress(format!(
                        "header says {body_len} bytes, found {}",
                        payload.len()
                    )));
                }
                std::borrow::Cow::Borrowed(payload)
            }
            CODEC_LZ4 => std::borrow::Cow::Owned(
                lz4_flex::decompress(payload, body_len)
                    .map_err(|e| SnapshotError::Decompress(e.to_string()))?,
            ),
            other => return Err(SnapshotError::UnknownCodec(other)),
        };
        if body.len() != body_len {
            return Err(SnapshotError::Decompress(format!(
                "expected {body_len} bytes, got {}",
                body.len()
            )));
        }
        decode_body(&body, version)
    }
}

/// Whether `bytes` (a snapshot [`Snapshot::decode`] read) are in the form
/// [`Snapshot::encode`] writes: this version, LZ4. The store keeps blocks
/// in this form, so such bytes are stored as they came; a snapshot of an
/// older version or uncompressed is encoded again first.
pub fn is_current_form(bytes: &[u8]) -> bool {
    bytes.len() >= HEADER_LEN
        && bytes[..4] == *MAGIC
        && bytes[4] == VERSION
        && bytes[5] == CODEC_LZ4
}

fn decode_body(body: &[u8], version: u8) -> Result<Snapshot, SnapshotError> {
    let mut r = Reader::new(body);
    let profile_id = Uuid::from_slice(r.take(16)?).expect("16 bytes make a uuid");
    let host = r.str()?;
    let agent_id = r.str()?;
    let sequence = r.varint()?;
    let window_start_ms = r.zigzag()?;
    let window_end_ms = r.zigzag()?;
    if window_end_ms < window_start_ms {
        return Err(SnapshotError::InvertedWindow {
            start: window_start_ms,
            end: window_end_ms,
        });
    }
    let event_code = r.u8()?;
    let event = EventKind::from_code(event_code).ok_or(SnapshotError::UnknownEvent(event_code))?;
    let period = r.varint()?;
    let frequency_hz = r.u32_varint("frequency")?;

    // Each frame takes at least 4 bytes (three empty strings and a line).
    let frame_count = r.count("frame count", 4)?;
    let mut frames = Vec::with_capacity(frame_count);
    for _ in 0..frame_count {
        let function = r.str()?;
        let module = r.str()?;
        let file = r.str()?;
        let line = r.u32_varint("line")?;
        frames.push(Frame {
            function,
            module,
            file: (!file.is_empty()).then_some(file),
            line: (line != 0).then_some(line),
        });
    }

    let thread_count = r.count("thread count", 2)?;
    let mut threads = Vec::with_capacity(thread_count);
    for _ in 0..thread_count {
        let tid = r.u32_varint("tid")?;
        let name = r.str()?;
        threads.push(ThreadInfo { tid, name });
    }

    let stack_count = r.count("stack count", 4)?;
    let mut stacks = Vec::with_capacity(stack_count);
    let mut samples = 0u64;
    for stack in 0..stack_count {
        let tid = r.u32_varint("tid")?;
        let count = r.varint()?;
        samples = samples.saturating_add(count);
        if samples > MAX_WINDOW_SAMPLES {
            return Err(SnapshotError::TooManySamples);
        }
        let depth = r.count("stack depth", 1)?;
        if depth == 0 {
            return Err(SnapshotError::EmptyStack(stack));
        }
        if depth > MAX_STACK_DEPTH {
            return Err(SnapshotError::StackTooDeep { stack, depth });
        }
        let mut indexes = Vec::with_capacity(depth);
        for _ in 0..depth {
            let index = r.varint()?;
            if index >= frames.len() as u64 {
                return Err(SnapshotError::FrameOutOfRange {
                    stack,
                    index,
                    frames: frames.len(),
                });
            }
            indexes.push(index as u32);
        }
        stacks.push(StackCount {
            frames: indexes,
            tid,
            count,
        });
    }
    let coverage = if version >= 2 {
        Coverage::decode(&mut r, MAX_WINDOW_SAMPLES)?
    } else {
        Coverage::default()
    };
    if r.remaining() != 0 {
        return Err(SnapshotError::TrailingBytes(r.remaining()));
    }
    debug_assert_eq!(r.offset(), body.len());
    Ok(Snapshot {
        profile_id,
        host,
        agent_id,
        sequence,
        window_start_ms,
        window_end_ms,
        event,
        period,
        frequency_hz,
        frames,
        threads,
        stacks,
        coverage,
    })
}

/// Accumulates the samples of one window: deduplicates frames and merges
/// identical (stack, thread) pairs, then becomes a [`Snapshot`].
#[derive(Debug, Default)]
pub struct SnapshotBuilder {
    frames: Vec<Frame>,
    // foldhash, seeded per process: interning hashes every frame and
    // stack of every window, where SipHash took a tenth of OTLP ingest.
    frame_index: HashMap<Frame, u32, RandomState>,
    stacks: HashMap<(Vec<u32>, u32), u64, RandomState>,
    threads: HashMap<u32, String>,
    samples: u64,
}

impl SnapshotBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Interns a frame and returns its index, for callers that cache their
    /// own address → frame index mapping.
    pub fn intern(&mut self, frame: &Frame) -> u32 {
        if let Some(&index) = self.frame_index.get(frame) {
            return index;
        }
        let index = self.frames.len() as u32;
        self.frames.push(frame.clone());
        self.frame_index.insert(frame.clone(), index);
        index
    }

    /// Adds `count` samples of a stack given as interned frame indexes,
    /// root first. Empty stacks are ignored.
    pub fn add_indexes(&mut self, frames: Vec<u32>, tid: u32, count: u64) {
        if frames.is_empty() || count == 0 {
            return;
        }
        *self.stacks.entry((frames, tid)).or_insert(0) += count;
        self.samples += count;
    }

    /// Adds `count` samples of a stack of frames, root first.
    pub fn add(&mut self, frames: &[Frame], tid: u32, count: u64) {
        let indexes = frames.iter().map(|f| self.intern(f)).collect();
        self.add_indexes(indexes, tid, count);
    }

    pub fn name_thread(&mut self, tid: u32, name: impl Into<String>) {
        self.threads.insert(tid, name.into());
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty()
    }

    /// Finishes the window. Stacks and threads come out sorted so the same
    /// samples always encode to the same bytes.
    pub fn build(self, header: SnapshotHeader) -> Snapshot {
        let mut stacks: Vec<StackCount> = self
            .stacks
            .into_iter()
            .map(|((frames, tid), count)| StackCount { frames, tid, count })
            .collect();
        stacks.sort_by(|a, b| (&a.frames, a.tid).cmp(&(&b.frames, b.tid)));
        let mut threads: Vec<ThreadInfo> = self
            .threads
            .into_iter()
            .map(|(tid, name)| ThreadInfo { tid, name })
            .collect();
        threads.sort_by_key(|t| t.tid);
        Snapshot {
            profile_id: header.profile_id,
            host: header.host,
            agent_id: header.agent_id,
            sequence: header.sequence,
            window_start_ms: header.window_start_ms,
            window_end_ms: header.window_end_ms,
            event: header.event,
            period: header.period,
            frequency_hz: header.frequency_hz,
            frames: self.frames,
            threads,
            stacks,
            coverage: Coverage::default(),
        }
    }
}

/// Everything in a snapshot but its samples.
#[derive(Debug, Clone)]
pub struct SnapshotHeader {
    pub profile_id: Uuid,
    pub host: String,
    pub agent_id: String,
    pub sequence: u64,
    pub window_start_ms: i64,
    pub window_end_ms: i64,
    pub event: EventKind,
    pub period: u64,
    pub frequency_hz: u32,
}

mod split;
#[cfg(test)]
mod tests;

pub use split::MAX_MESSAGE_BYTES;
