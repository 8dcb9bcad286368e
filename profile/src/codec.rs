//! The stored form of a [`Profile`]: columns of varints over one string
//! table, deflate-compressed.
//!
//! Layout (version 1), after the magic `ODPP` and a version byte, all in
//! one deflate stream:
//! - strings: every distinct function, module, file, host, agent, event
//!   and thread name once;
//! - frames: function, module, file and line as string indexes (file and
//!   line + 1, 0 for none);
//! - the stack tree: each node's distance to its parent, then each node's
//!   frame (columns compress better than rows);
//! - windows: profile id (16 bytes), host, agent, sequence, start (delta
//!   to the previous window's), length, event, period, frequency;
//! - threads and samples, sorted, as columns of deltas: window, then node
//!   (delta within the window), thread and count.
//!
//! Decoding checks every index and count against what precedes it and
//! never panics on bad input.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::str::FromStr;

use odp_core::wire::{Reader, WireError, Writer};
use odp_core::{EventKind, Frame};

use crate::profile::{Profile, Sample, ThreadName, Window};
use crate::tree::StackTree;

const MAGIC: &[u8; 4] = b"ODPP";
const VERSION: u8 = 1;
/// Decoded bodies larger than this are refused (a hostile or corrupt
/// block cannot make the reader allocate without bound).
const MAX_BODY_BYTES: u64 = 1 << 31;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodecError {
    #[error("not a profile block (bad magic)")]
    BadMagic,
    #[error("profile block version {0} is not supported")]
    Version(u8),
    #[error("corrupt compressed profile block: {0}")]
    Compression(String),
    #[error("profile block: {0}")]
    Wire(#[from] WireError),
    #[error("profile block: {what} {index} out of range (of {len})")]
    Index {
        what: &'static str,
        index: u64,
        len: usize,
    },
    #[error("profile block: {0}")]
    Invalid(String),
}

/// How hard to compress: storing windows as they arrive wants speed,
/// compacted profiles size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Fast,
    Small,
}

impl Profile {
    pub fn encode(&self, level: Level) -> Vec<u8> {
        let body = encode_body(self);
        let mut out = Vec::with_capacity(body.len() / 3 + 16);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        let compression = match level {
            Level::Fast => flate2::Compression::fast(),
            Level::Small => flate2::Compression::new(6),
        };
        let mut encoder = flate2::write::DeflateEncoder::new(out, compression);
        encoder.write_all(&body).expect("writing to a Vec");
        encoder.finish().expect("writing to a Vec")
    }

    pub fn decode(bytes: &[u8]) -> Result<Profile, CodecError> {
        let rest = bytes.strip_prefix(MAGIC).ok_or(CodecError::BadMagic)?;
        let (&version, compressed) = rest.split_first().ok_or(CodecError::BadMagic)?;
        if version != VERSION {
            return Err(CodecError::Version(version));
        }
        let mut body = Vec::new();
        flate2::read::DeflateDecoder::new(compressed)
            .take(MAX_BODY_BYTES + 1)
            .read_to_end(&mut body)
            .map_err(|e| CodecError::Compression(e.to_string()))?;
        if body.len() as u64 > MAX_BODY_BYTES {
            return Err(CodecError::Invalid("block too large".into()));
        }
        decode_body(&body)
    }
}

/// Interns strings in first-use order.
#[derive(Default)]
struct Strings<'a> {
    ids: HashMap<&'a str, u32>,
    list: Vec<&'a str>,
}

impl<'a> Strings<'a> {
    fn id(&mut self, s: &'a str) -> u64 {
        let next = self.list.len() as u32;
        let id = *self.ids.entry(s).or_insert_with(|| {
            self.list.push(s);
            next
        });
        u64::from(id)
    }
}

fn encode_body(profile: &Profile) -> Vec<u8> {
    let mut strings = Strings::default();
    let mut w = Writer::default();
    let optional = |id: Option<u64>| id.map_or(0, |id| id + 1);

    let mut frames = Writer::default();
    frames.varint(profile.frames.len() as u64);
    for frame in &profile.frames {
        frames.varint(strings.id(&frame.function));
        frames.varint(strings.id(&frame.module));
        frames.varint(optional(frame.file.as_deref().map(|f| strings.id(f))));
        frames.varint(optional(frame.line.map(u64::from)));
    }

    let mut tree = Writer::default();
    tree.varint(profile.tree.len() as u64 - 1);
    let edges: Vec<(u32, u32)> = profile.tree.edges().collect();
    for (node, &(parent, _)) in (1u32..).zip(&edges) {
        tree.varint(u64::from(node - parent));
    }
    for &(_, frame) in &edges {
        tree.varint(u64::from(frame));
    }

    let mut windows = Writer::default();
    windows.varint(profile.windows.len() as u64);
    let mut previous_start = 0i64;
    for window in &profile.windows {
        windows.bytes(window.profile_id.as_bytes());
        windows.varint(strings.id(&window.host));
        windows.varint(strings.id(&window.agent_id));
        windows.varint(window.sequence);
        windows.zigzag(window.start_ms.wrapping_sub(previous_start));
        windows.zigzag(window.end_ms.wrapping_sub(window.start_ms));
        windows.varint(strings.id(window.event.as_str()));
        windows.varint(window.period);
        windows.varint(u64::from(window.frequency_hz));
        previous_start = window.start_ms;
    }

    let mut threads = Writer::default();
    threads.varint(profile.threads.len() as u64);
    let mut previous_window = 0;
    for thread in &profile.threads {
        threads.varint(u64::from(thread.window - previous_window));
        previous_window = thread.window;
    }
    for thread in &profile.threads {
        threads.varint(u64::from(thread.tid));
    }
    for thread in &profile.threads {
        threads.varint(strings.id(&thread.name));
    }

    let mut samples = Writer::default();
    samples.varint(profile.samples.len() as u64);
    let mut previous_window = 0;
    for sample in &profile.samples {
        samples.varint(u64::from(sample.window - previous_window));
        previous_window = sample.window;
    }
    let mut previous = (u32::MAX, 0i64);
    for sample in &profile.samples {
        let base = if previous.0 == sample.window {
            previous.1
        } else {
            0
        };
        samples.zigzag(i64::from(sample.node) - base);
        previous = (sample.window, i64::from(sample.node));
    }
    for sample in &profile.samples {
        samples.varint(u64::from(sample.tid));
    }
    for sample in &profile.samples {
        samples.varint(sample.count);
    }

    w.varint(strings.list.len() as u64);
    for s in &strings.list {
        w.str(s);
    }
    for part in [frames, tree, windows, threads, samples] {
        w.bytes(&part.into_inner());
    }
    w.into_inner()
}

fn index(r: &mut Reader<'_>, what: &'static str, len: usize) -> Result<u32, CodecError> {
    let value = r.varint()?;
    if value >= len as u64 {
        return Err(CodecError::Index {
            what,
            index: value,
            len,
        });
    }
    Ok(value as u32)
}

fn decode_body(body: &[u8]) -> Result<Profile, CodecError> {
    let mut r = Reader::new(body);
    let count = r.count("strings", 1)?;
    let strings = (0..count)
        .map(|_| r.str())
        .collect::<Result<Vec<String>, WireError>>()?;
    let string = |r: &mut Reader<'_>, what| -> Result<String, CodecError> {
        Ok(strings[index(r, what, strings.len())? as usize].clone())
    };
    let optional_string = |r: &mut Reader<'_>| -> Result<Option<String>, CodecError> {
        match index(r, "file", strings.len() + 1)? {
            0 => Ok(None),
            id => Ok(Some(strings[id as usize - 1].clone())),
        }
    };

    let count = r.count("frames", 4)?;
    let mut frames = Vec::with_capacity(count);
    for _ in 0..count {
        frames.push(Frame {
            function: string(&mut r, "function")?,
            module: string(&mut r, "module")?,
            file: optional_string(&mut r)?,
            line: match r.u32_varint("line")? {
                0 => None,
                line => Some(line - 1),
            },
        });
    }

    let nodes = r.count("stack nodes", 2)?;
    let mut parents = Vec::with_capacity(nodes);
    for node in 1..=nodes as u64 {
        let distance = r.varint()?;
        if distance == 0 || distance > node {
            return Err(CodecError::Invalid(format!(
                "node {node}'s parent is not before it"
            )));
        }
        parents.push((node - distance) as u32);
    }
    let mut edges = Vec::with_capacity(nodes);
    for parent in parents {
        edges.push((parent, index(&mut r, "frame", frames.len())?));
    }
    let tree = StackTree::from_edges(edges)
        .ok_or_else(|| CodecError::Invalid("a stack node's parent follows it".into()))?;

    let count = r.count("windows", 24)?;
    let mut windows = Vec::with_capacity(count);
    let mut start_ms = 0i64;
    for _ in 0..count {
        let profile_id = uuid::Uuid::from_slice(r.take(16)?).expect("16 bytes");
        let host = string(&mut r, "host")?;
        let agent_id = string(&mut r, "agent")?;
        let sequence = r.varint()?;
        start_ms = start_ms.wrapping_add(r.zigzag()?);
        let end_ms = start_ms.wrapping_add(r.zigzag()?);
        let event = string(&mut r, "event")?;
        let event = EventKind::from_str(&event)
            .map_err(|_| CodecError::Invalid(format!("unknown event {event:?}")))?;
        windows.push(Window {
            profile_id,
            host,
            agent_id,
            sequence,
            start_ms,
            end_ms,
            event,
            period: r.varint()?,
            frequency_hz: r.u32_varint("frequency")?,
        });
    }

    let count = r.count("threads", 3)?;
    let thread_windows = window_column(&mut r, count, windows.len())?;
    let tids = (0..count)
        .map(|_| r.u32_varint("tid"))
        .collect::<Result<Vec<u32>, WireError>>()?;
    let mut threads = Vec::with_capacity(count);
    for (window, tid) in thread_windows.into_iter().zip(tids) {
        threads.push(ThreadName {
            window,
            tid,
            name: string(&mut r, "thread name")?,
        });
    }

    let count = r.count("samples", 4)?;
    let sample_windows = window_column(&mut r, count, windows.len())?;
    let mut sample_nodes = Vec::with_capacity(count);
    let mut previous = (u32::MAX, 0i64);
    for &window in &sample_windows {
        let base = if previous.0 == window { previous.1 } else { 0 };
        let node = base.saturating_add(r.zigzag()?);
        if node <= 0 || node >= tree.len() as i64 {
            return Err(CodecError::Index {
                what: "stack node",
                index: node as u64,
                len: tree.len(),
            });
        }
        sample_nodes.push(node as u32);
        previous = (window, node);
    }
    let tids = (0..count)
        .map(|_| r.u32_varint("tid"))
        .collect::<Result<Vec<u32>, WireError>>()?;
    let mut samples = Vec::with_capacity(count);
    for ((window, node), tid) in sample_windows.into_iter().zip(sample_nodes).zip(tids) {
        let count = r.varint()?;
        if count == 0 {
            return Err(CodecError::Invalid("a sample count is 0".into()));
        }
        samples.push(Sample {
            window,
            node,
            tid,
            count,
        });
    }
    if r.remaining() != 0 {
        return Err(CodecError::Invalid(format!(
            "{} bytes after the samples",
            r.remaining()
        )));
    }
    let key = |s: &Sample| (s.window, s.node, s.tid);
    if !samples.windows(2).all(|pair| key(&pair[0]) < key(&pair[1])) {
        return Err(CodecError::Invalid("samples out of order".into()));
    }
    Ok(Profile {
        frames,
        tree,
        windows,
        threads,
        samples,
    })
}

/// A sorted column of window indexes stored as deltas.
fn window_column(r: &mut Reader<'_>, count: usize, windows: usize) -> Result<Vec<u32>, CodecError> {
    let mut out = Vec::with_capacity(count);
    let mut window = 0u64;
    for _ in 0..count {
        window = window.saturating_add(r.varint()?);
        if window >= windows as u64 {
            return Err(CodecError::Index {
                what: "window",
                index: window,
                len: windows,
            });
        }
        out.push(window as u32);
    }
    Ok(out)
}
