//! The stored form of a [`Profile`]: columns of varints over one string
//! table, compressed.
//!
//! After the magic `ODPP` and a version byte, the body is compressed as
//! the version says:
//! - version 1: one raw deflate stream ([`Level::Fast`], [`Level::Small`]);
//! - version 2: the body's length (u32, little-endian), then the body as
//!   one LZ4 block ([`Level::Quick`]): about a third larger than deflate
//!   at level 6, decompressed about ten times faster.
//!
//! Both versions are read for good: stored blocks keep their version.
//! The body (the same in both):
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
use crate::tree::{StackTree, ROOT};

const MAGIC: &[u8; 4] = b"ODPP";
/// A deflate body.
const DEFLATE: u8 = 1;
/// A body's length, then the body as an LZ4 block.
const LZ4: u8 = 2;
/// Decoded bodies larger than this are refused (a hostile or corrupt
/// block cannot make the reader allocate without bound).
const MAX_BODY_BYTES: u64 = 1 << 31;
/// An LZ4 block decompresses to at most about 255 times its size (a
/// match grows by 255 bytes per byte of its length): a version 2 block
/// whose stated length is larger is refused before anything is
/// allocated.
const LZ4_MAX_RATIO: u64 = 255;

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

/// How to compress: compacted profiles want size; blocks read in bulk
/// (a service's days) want speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Deflate at its fastest level (version 1).
    Fast,
    /// Deflate at level 6 (version 1).
    Small,
    /// LZ4 (version 2): about a third larger than [`Level::Small`],
    /// encoded some fifty times and decompressed some ten times faster.
    Quick,
}

impl Profile {
    pub fn encode(&self, level: Level) -> Vec<u8> {
        let body = encode_body(self);
        let compression = match level {
            Level::Fast => flate2::Compression::fast(),
            Level::Small => flate2::Compression::new(6),
            Level::Quick => return encode_lz4(&body),
        };
        let mut out = Vec::with_capacity(body.len() / 3 + 16);
        out.extend_from_slice(MAGIC);
        out.push(DEFLATE);
        let mut encoder = flate2::write::DeflateEncoder::new(out, compression);
        encoder.write_all(&body).expect("writing to a Vec");
        encoder.finish().expect("writing to a Vec")
    }

    pub fn decode(bytes: &[u8]) -> Result<Profile, CodecError> {
        let rest = bytes.strip_prefix(MAGIC).ok_or(CodecError::BadMagic)?;
        let (&version, compressed) = rest.split_first().ok_or(CodecError::BadMagic)?;
        let body = match version {
            DEFLATE => inflate(compressed)?,
            LZ4 => decompress_lz4(compressed)?,
            _ => return Err(CodecError::Version(version)),
        };
        decode_body(&body)
    }
}

/// About how much work decoding `block` is, in LZ4-stored bytes: a
/// deflate block's byte costs about 2.3 times an LZ4 block's (17 and 7.4
/// CPU-ms a stored MB over a month of a service's hours and days,
/// `cargo bench -p odp-profile --bench history_read`), so that work
/// split by it keeps two threads equally busy.
pub fn decode_weight(block: &[u8]) -> usize {
    match block.get(MAGIC.len()) {
        Some(&DEFLATE) => block.len() * 23 / 10,
        _ => block.len(),
    }
}

/// Whether `block` is stored in [`Level::Quick`]'s codec (LZ4).
pub fn is_quick(block: &[u8]) -> bool {
    block.starts_with(MAGIC) && block.get(MAGIC.len()) == Some(&LZ4)
}

fn inflate(compressed: &[u8]) -> Result<Vec<u8>, CodecError> {
    let mut body = Vec::new();
    flate2::read::DeflateDecoder::new(compressed)
        .take(MAX_BODY_BYTES + 1)
        .read_to_end(&mut body)
        .map_err(|e| CodecError::Compression(e.to_string()))?;
    if body.len() as u64 > MAX_BODY_BYTES {
        return Err(CodecError::Invalid("block too large".into()));
    }
    Ok(body)
}

fn encode_lz4(body: &[u8]) -> Vec<u8> {
    let length = u32::try_from(body.len())
        .ok()
        .filter(|&n| u64::from(n) <= MAX_BODY_BYTES)
        .expect("a profile body under MAX_BODY_BYTES");
    let compressed = lz4_flex::block::compress(body);
    let mut out = Vec::with_capacity(MAGIC.len() + 5 + compressed.len());
    out.extend_from_slice(MAGIC);
    out.push(LZ4);
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(&compressed);
    out
}

/// A version 2 body: its stated length is checked (against
/// [`MAX_BODY_BYTES`] and what the LZ4 block can hold) before it is
/// allocated, and must be what the block decompresses to.
fn decompress_lz4(rest: &[u8]) -> Result<Vec<u8>, CodecError> {
    let (length, compressed) = rest
        .split_first_chunk::<4>()
        .ok_or_else(|| CodecError::Compression("no body length".into()))?;
    let length = u64::from(u32::from_le_bytes(*length));
    if length > MAX_BODY_BYTES {
        return Err(CodecError::Invalid("block too large".into()));
    }
    if length > LZ4_MAX_RATIO * compressed.len() as u64 {
        return Err(CodecError::Compression(format!(
            "{} compressed bytes cannot hold a body of {length}",
            compressed.len()
        )));
    }
    let mut body = vec![0; length as usize];
    let written = lz4_flex::block::decompress_into(compressed, &mut body)
        .map_err(|e| CodecError::Compression(e.to_string()))?;
    if written != body.len() {
        return Err(CodecError::Compression(format!(
            "the body is {written} bytes, not {length}"
        )));
    }
    Ok(body)
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

    // The tree's columns, the root's entries first, read in place.
    let nodes = r.count("stack nodes", 2)?;
    let mut parents = Vec::with_capacity(nodes + 1);
    parents.push(ROOT);
    for node in 1..=nodes as u64 {
        let distance = r.varint()?;
        if distance == 0 || distance > node {
            return Err(CodecError::Invalid(format!(
                "node {node}'s parent is not before it"
            )));
        }
        parents.push((node - distance) as u32);
    }
    let mut node_frames = Vec::with_capacity(nodes + 1);
    node_frames.push(u32::MAX);
    for _ in 0..nodes {
        node_frames.push(index(&mut r, "frame", frames.len())?);
    }
    let tree = StackTree::from_columns(parents, node_frames)
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

    // The samples' columns, each read into the samples in place.
    let count = r.count("samples", 4)?;
    let mut samples: Vec<Sample> = window_column(&mut r, count, windows.len())?
        .into_iter()
        .map(|window| Sample {
            window,
            node: 0,
            tid: 0,
            count: 0,
        })
        .collect();
    let mut previous = (u32::MAX, 0i64);
    for sample in &mut samples {
        let base = if previous.0 == sample.window {
            previous.1
        } else {
            0
        };
        let node = base.saturating_add(r.zigzag()?);
        if node <= 0 || node >= tree.len() as i64 {
            return Err(CodecError::Index {
                what: "stack node",
                index: node as u64,
                len: tree.len(),
            });
        }
        sample.node = node as u32;
        previous = (sample.window, node);
    }
    for sample in &mut samples {
        sample.tid = r.u32_varint("tid")?;
    }
    for sample in &mut samples {
        sample.count = r.varint()?;
        if sample.count == 0 {
            return Err(CodecError::Invalid("a sample count is 0".into()));
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProfileBuilder;
    use odp_core::Frame;

    fn profile() -> Profile {
        let mut b = ProfileBuilder::default();
        let frames: Vec<u32> = (0..50)
            .map(|i| b.frame(&Frame::function(format!("f{i}"))))
            .collect();
        let w = b.window(Window {
            profile_id: uuid::Uuid::nil(),
            host: "web-1".into(),
            agent_id: "a".into(),
            sequence: 0,
            start_ms: 1_764_000_000_000,
            end_ms: 1_764_000_010_000,
            event: EventKind::CpuClock,
            period: 10_101_010,
            frequency_hz: 99,
        });
        b.thread(w, 7, "worker");
        for i in 0..200 {
            b.samples(
                w,
                7,
                &[frames[i % 3], frames[i % 50], frames[i % 7]],
                1 + i as u64,
            );
        }
        b.build()
    }

    /// A version 2 block with `length` stated for `compressed`.
    fn lz4_block(length: u32, compressed: &[u8]) -> Vec<u8> {
        let mut block = MAGIC.to_vec();
        block.push(LZ4);
        block.extend_from_slice(&length.to_le_bytes());
        block.extend_from_slice(compressed);
        block
    }

    #[test]
    fn quick_blocks_are_version_2_and_round_trip() {
        let profile = profile();
        let quick = profile.encode(Level::Quick);
        assert_eq!(quick[4], LZ4);
        assert_eq!(Profile::decode(&quick).unwrap(), profile);
        let small = profile.encode(Level::Small);
        assert_eq!(small[4], DEFLATE);
        assert_eq!(Profile::decode(&small).unwrap(), profile);
    }

    #[test]
    fn blocks_tell_their_codec_and_decoding_weight() {
        let (quick, small) = (
            profile().encode(Level::Quick),
            profile().encode(Level::Small),
        );
        assert!(is_quick(&quick) && !is_quick(&small) && !is_quick(b"ODP"));
        assert_eq!(decode_weight(&quick), quick.len());
        assert_eq!(decode_weight(&small), small.len() * 23 / 10);
    }

    #[test]
    fn truncated_version_2_blocks_are_errors() {
        let block = profile().encode(Level::Quick);
        for end in 0..block.len() {
            assert!(Profile::decode(&block[..end]).is_err(), "{end} bytes");
        }
        assert_eq!(
            Profile::decode(&block[..7]),
            Err(CodecError::Compression("no body length".into()))
        );
    }

    #[test]
    fn a_version_2_body_must_be_its_stated_length() {
        let body = encode_body(&profile());
        let compressed = lz4_flex::block::compress(&body);
        let n = body.len() as u32;
        assert_eq!(
            Profile::decode(&lz4_block(n, &compressed)).unwrap(),
            profile()
        );
        for wrong in [n - 1, n + 1, 0] {
            assert!(
                matches!(
                    Profile::decode(&lz4_block(wrong, &compressed)),
                    Err(CodecError::Compression(_))
                ),
                "stated {wrong} of {n}"
            );
        }
        let mut corrupt = compressed.clone();
        corrupt[0] = 0xff;
        assert!(Profile::decode(&lz4_block(n, &corrupt)).is_err());
    }

    #[test]
    fn oversized_version_2_blocks_are_refused_before_allocating() {
        assert_eq!(
            Profile::decode(&lz4_block(u32::MAX, &[0; 64])),
            Err(CodecError::Invalid("block too large".into()))
        );
        // Within MAX_BODY_BYTES but more than 10 bytes of LZ4 can hold.
        assert_eq!(
            Profile::decode(&lz4_block(1 << 30, &[0; 10])),
            Err(CodecError::Compression(
                "10 compressed bytes cannot hold a body of 1073741824".into()
            ))
        );
    }

    #[test]
    fn lz4_compresses_within_its_maximum_ratio() {
        let zeros = vec![0u8; 10 << 20];
        let compressed = lz4_flex::block::compress(&zeros);
        assert!(LZ4_MAX_RATIO * compressed.len() as u64 >= zeros.len() as u64);
        assert_eq!(
            lz4_flex::block::decompress(&compressed, zeros.len()).unwrap(),
            zeros
        );
    }

    #[test]
    fn unknown_versions_are_refused() {
        let mut block = profile().encode(Level::Quick);
        block[4] = 3;
        assert_eq!(Profile::decode(&block), Err(CodecError::Version(3)));
    }
}
