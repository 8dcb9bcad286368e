//! Reading speedscope files (<https://www.speedscope.app/file-format-schema.json>)
//! into stacks of [`Frame`]s: what `format=speedscope` imports.
//!
//! A file holds a table of frames shared by its profiles, and one or more
//! profiles (py-spy writes one per thread), which are merged:
//!
//! - `sampled`: stacks of frame indexes, root first, each with a weight;
//! - `evented`: frames opened (`O`) and closed (`C`) at times; each span
//!   between two events weighs its length for the exact stack open during
//!   it (self time), and frames still open at the end close at the
//!   profile's `endValue`. A close must name the innermost open frame,
//!   and times never go back: a file where they do is refused.
//!
//! Weights come out in ODP's units ([`WeightUnit`]): `none` counts samples
//! (rounded to whole ones), the time units become nanoseconds, `bytes`
//! stay bytes. Every profile of a file must come out in the same unit.
//!
//! Frames keep their `name`; `file` and `line` are kept as the agent's
//! python plugin keeps py-spy's frames, with the file as py-spy's own
//! stack output shortens it (`threading.py`, `requests/api.py`) and its
//! dotted module (`requests.api`). Profiles named as py-spy names them,
//! `Thread 7349 "MainThread"`, keep the thread id and name.
//!
//! Bounds: at most [`MAX_FRAMES`] frames and [`MAX_PROFILES`] profiles, no
//! stack deeper than [`MAX_STACK_DEPTH`], and at most [`MAX_STACK_FRAMES`]
//! frames in all the distinct stacks together (an evented profile can
//! otherwise describe far more than its size), so what a file makes stays
//! within a few times its size. Nothing in a file makes the parser panic.

use std::collections::HashMap;

use thiserror::Error;

use super::SCHEMA;
use crate::model::{EventKind, Frame};
use crate::snapshot::{StackCount, ThreadInfo, MAX_STACK_DEPTH};

#[path = "speedscope_raw.rs"]
mod raw;

use raw::{EventType, RawFile, RawFrame, RawProfile};

/// Frames in a file's shared table.
pub const MAX_FRAMES: usize = 1 << 20;
/// Profiles in a file.
pub const MAX_PROFILES: usize = 1 << 16;
/// Frames of all the distinct stacks a file describes, added up.
pub const MAX_STACK_FRAMES: usize = 1 << 25;

/// What an imported file's weights count, in ODP's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightUnit {
    /// Samples (`none`).
    Samples,
    /// Nanoseconds (from any of speedscope's time units).
    Nanoseconds,
    Bytes,
}

impl WeightUnit {
    /// What the weights measure: samples of on-CPU time, wall-clock time
    /// (speedscope's producers time what threads do, running or not), or
    /// allocated bytes.
    pub fn event(self) -> EventKind {
        match self {
            WeightUnit::Samples => EventKind::CpuClock,
            WeightUnit::Nanoseconds => EventKind::Wall,
            WeightUnit::Bytes => EventKind::AllocBytes,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WeightUnit::Samples => "samples",
            WeightUnit::Nanoseconds => "nanoseconds",
            WeightUnit::Bytes => "bytes",
        }
    }
}

/// speedscope's unit names: ODP's unit, and how many of it one is.
fn unit_of(name: &str) -> Option<(WeightUnit, f64)> {
    Some(match name {
        "none" => (WeightUnit::Samples, 1.0),
        "nanoseconds" => (WeightUnit::Nanoseconds, 1.0),
        "microseconds" => (WeightUnit::Nanoseconds, 1e3),
        "milliseconds" => (WeightUnit::Nanoseconds, 1e6),
        "seconds" => (WeightUnit::Nanoseconds, 1e9),
        "bytes" => (WeightUnit::Bytes, 1.0),
        _ => return None,
    })
}

/// A speedscope file's profiles, merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub unit: WeightUnit,
    /// The shared frame table, indexed by [`StackCount::frames`].
    pub frames: Vec<Frame>,
    /// Distinct (stack, thread) pairs with their summed weights, none 0.
    pub stacks: Vec<StackCount>,
    pub threads: Vec<ThreadInfo>,
    pub profiles: usize,
    /// The weights of every profile added up (at most `i64::MAX`).
    pub total: u64,
}

#[derive(Debug, Error, PartialEq)]
pub enum SpeedscopeError {
    #[error("not speedscope JSON: {0}")]
    Json(String),
    #[error("`$schema` is {0}, not speedscope's {SCHEMA:?}")]
    Schema(String),
    #[error("the file has no `{0}`")]
    Missing(&'static str),
    #[error("the file has no profiles")]
    NoProfiles,
    #[error("profile {profile} has type {kind:?}; speedscope's are sampled and evented")]
    UnknownType { profile: usize, kind: String },
    #[error(
        "profile {profile} has unit {unit:?}; speedscope's are none, nanoseconds, \
         microseconds, milliseconds, seconds and bytes"
    )]
    UnknownUnit { profile: usize, unit: String },
    #[error("profile {profile} counts {unit}, profile 0 {first}: a file's profiles must agree")]
    MixedUnits {
        profile: usize,
        unit: &'static str,
        first: &'static str,
    },
    #[error("profile {profile} (sampled) has no `{field}`")]
    MissingField { profile: usize, field: &'static str },
    #[error("profile {profile} has {samples} samples but {weights} weights")]
    WeightCount {
        profile: usize,
        samples: usize,
        weights: usize,
    },
    #[error("profile {profile} refers to frame {frame}, but the file has {frames} frames")]
    UnknownFrame {
        profile: usize,
        frame: u32,
        frames: usize,
    },
    #[error("profile {profile}: {what} {value} is not a finite number in range")]
    BadNumber {
        profile: usize,
        what: &'static str,
        value: f64,
    },
    #[error("profile {profile}: event {event} at {at} comes before the event before it")]
    Backwards {
        profile: usize,
        event: usize,
        at: f64,
    },
    #[error("profile {profile}: event {event} closes frame {frame}, but {open} is the innermost open frame")]
    Unbalanced {
        profile: usize,
        event: usize,
        frame: u32,
        open: String,
    },
    #[error("profile {profile}: event {event} opens a stack deeper than {MAX_STACK_DEPTH} frames")]
    TooDeep { profile: usize, event: usize },
    #[error("the file's distinct stacks hold more than {MAX_STACK_FRAMES} frames in all")]
    TooManyStackFrames,
    #[error("the weights add up to more than {}", i64::MAX)]
    Overflow,
}

/// Reads a speedscope file.
pub fn parse(bytes: &[u8]) -> Result<Imported, SpeedscopeError> {
    let raw: RawFile =
        serde_json::from_slice(bytes).map_err(|e| SpeedscopeError::Json(e.to_string()))?;
    match raw.schema.as_deref() {
        Some(SCHEMA) => {}
        Some(other) => return Err(SpeedscopeError::Schema(format!("{other:?}"))),
        None => return Err(SpeedscopeError::Schema("missing".to_owned())),
    }
    let frames: Vec<Frame> = raw
        .shared
        .ok_or(SpeedscopeError::Missing("shared"))?
        .frames
        .0
        .into_iter()
        .map(frame_of)
        .collect();
    let profiles = raw.profiles.ok_or(SpeedscopeError::Missing("profiles"))?.0;
    if profiles.is_empty() {
        return Err(SpeedscopeError::NoProfiles);
    }
    let mut merged = Merged::default();
    let mut threads: HashMap<u32, String> = HashMap::new();
    let mut unit = None;
    let count = profiles.len();
    for (index, profile) in profiles.into_iter().enumerate() {
        let (this, scale) = unit_of(&profile.unit).ok_or_else(|| SpeedscopeError::UnknownUnit {
            profile: index,
            unit: profile.unit.clone(),
        })?;
        let first = *unit.get_or_insert(this);
        if this != first {
            return Err(SpeedscopeError::MixedUnits {
                profile: index,
                unit: this.as_str(),
                first: first.as_str(),
            });
        }
        let (tid, thread) = profile
            .name
            .as_deref()
            .and_then(thread_of)
            .unwrap_or((0, None));
        if let Some(name) = thread {
            threads.entry(tid).or_insert(name);
        }
        let at = At {
            index,
            tid,
            scale,
            frames: &frames,
        };
        match profile.kind.as_str() {
            "sampled" => at.sampled(profile, &mut merged)?,
            "evented" => at.evented(profile, &mut merged)?,
            other => {
                return Err(SpeedscopeError::UnknownType {
                    profile: index,
                    kind: other.to_owned(),
                })
            }
        }
    }
    let total = u64::try_from(merged.total)
        .ok()
        .filter(|&t| t <= i64::MAX as u64)
        .ok_or(SpeedscopeError::Overflow)?;
    let mut stacks: Vec<StackCount> = merged
        .sums
        .into_iter()
        .filter(|(_, count)| *count > 0)
        .map(|((frames, tid), count)| StackCount {
            frames: frames.into_vec(),
            tid,
            count: count as u64,
        })
        .collect();
    stacks.sort_by(|a, b| (&a.frames, a.tid).cmp(&(&b.frames, b.tid)));
    let mut threads: Vec<ThreadInfo> = threads
        .into_iter()
        .map(|(tid, name)| ThreadInfo { tid, name })
        .collect();
    threads.sort_by_key(|t| t.tid);
    Ok(Imported {
        unit: unit.unwrap_or(WeightUnit::Samples),
        frames,
        stacks,
        threads,
        profiles: count,
        total,
    })
}

/// The stacks of every profile, by (stack, thread).
#[derive(Default)]
struct Merged {
    sums: HashMap<(Box<[u32]>, u32), u128>,
    /// Frames of the keys of `sums`, added up.
    stack_frames: usize,
    total: u128,
}

impl Merged {
    fn add(&mut self, stack: &[u32], tid: u32, weight: u128) -> Result<(), SpeedscopeError> {
        if weight == 0 || stack.is_empty() {
            return Ok(());
        }
        self.total += weight;
        if self.total > i64::MAX as u128 {
            return Err(SpeedscopeError::Overflow);
        }
        let key = (Box::<[u32]>::from(stack), tid);
        if let Some(sum) = self.sums.get_mut(&key) {
            *sum += weight;
            return Ok(());
        }
        self.stack_frames += stack.len();
        if self.stack_frames > MAX_STACK_FRAMES {
            return Err(SpeedscopeError::TooManyStackFrames);
        }
        self.sums.insert(key, weight);
        Ok(())
    }
}

/// One profile being read: its index, thread and unit scale.
struct At<'a> {
    index: usize,
    tid: u32,
    scale: f64,
    frames: &'a [Frame],
}

impl At<'_> {
    /// `value` (a weight or a time) in ODP's unit, rounded; within
    /// ±`i64::MAX`.
    fn amount(&self, what: &'static str, value: f64) -> Result<i64, SpeedscopeError> {
        let scaled = (value * self.scale).round();
        if scaled.is_finite() && scaled.abs() < i64::MAX as f64 {
            Ok(scaled as i64)
        } else {
            Err(SpeedscopeError::BadNumber {
                profile: self.index,
                what,
                value,
            })
        }
    }

    fn check_frame(&self, frame: u32) -> Result<(), SpeedscopeError> {
        if (frame as usize) < self.frames.len() {
            Ok(())
        } else {
            Err(SpeedscopeError::UnknownFrame {
                profile: self.index,
                frame,
                frames: self.frames.len(),
            })
        }
    }

    fn sampled(&self, profile: RawProfile, merged: &mut Merged) -> Result<(), SpeedscopeError> {
        let missing = |field| SpeedscopeError::MissingField {
            profile: self.index,
            field,
        };
        let samples = profile.samples.ok_or_else(|| missing("samples"))?;
        let weights = profile.weights.ok_or_else(|| missing("weights"))?;
        if samples.ids.len() != weights.len() {
            return Err(SpeedscopeError::WeightCount {
                profile: self.index,
                samples: samples.ids.len(),
                weights: weights.len(),
            });
        }
        for stack in &samples.stacks {
            for &frame in stack.iter() {
                self.check_frame(frame)?;
            }
        }
        let mut sums = vec![0u128; samples.stacks.len()];
        for (&id, &weight) in samples.ids.iter().zip(&weights) {
            let weight = self.amount("weight", weight)?;
            if weight < 0 {
                return Err(SpeedscopeError::BadNumber {
                    profile: self.index,
                    what: "weight",
                    value: weight as f64,
                });
            }
            sums[id as usize] += weight as u128;
        }
        for (stack, sum) in samples.stacks.iter().zip(sums) {
            merged.add(stack, self.tid, sum)?;
        }
        Ok(())
    }

    fn evented(&self, profile: RawProfile, merged: &mut Merged) -> Result<(), SpeedscopeError> {
        let events = profile.events.ok_or(SpeedscopeError::MissingField {
            profile: self.index,
            field: "events",
        })?;
        // The stacks opened, as a tree: node 0 is the empty stack, each
        // other node a frame under its parent.
        let mut nodes: Vec<(u32, u32)> = vec![(0, u32::MAX)];
        let mut children: HashMap<(u32, u32), u32> = HashMap::new();
        let mut weights: HashMap<u32, u128> = HashMap::new();
        let mut open: Vec<u32> = Vec::new();
        let mut last: Option<i64> = None;
        for (i, event) in events.iter().enumerate() {
            let at = self.amount("time", event.at)?;
            if let Some(before) = last {
                if at < before {
                    return Err(SpeedscopeError::Backwards {
                        profile: self.index,
                        event: i,
                        at: event.at,
                    });
                }
                if let Some(&node) = open.last() {
                    *weights.entry(node).or_default() += span(before, at);
                }
            }
            last = Some(at);
            self.check_frame(event.frame)?;
            let current = open.last().copied().unwrap_or(0);
            match event.kind {
                EventType::O => {
                    if open.len() == MAX_STACK_DEPTH {
                        return Err(SpeedscopeError::TooDeep {
                            profile: self.index,
                            event: i,
                        });
                    }
                    let next = nodes.len() as u32;
                    let child = *children.entry((current, event.frame)).or_insert(next);
                    if child == next {
                        nodes.push((current, event.frame));
                    }
                    open.push(child);
                }
                EventType::C => {
                    if current == 0 || nodes[current as usize].1 != event.frame {
                        let open = match open.last() {
                            Some(&n) => {
                                let frame = nodes[n as usize].1;
                                format!("frame {frame} ({})", self.frames[frame as usize].function)
                            }
                            None => "no frame".to_owned(),
                        };
                        return Err(SpeedscopeError::Unbalanced {
                            profile: self.index,
                            event: i,
                            frame: event.frame,
                            open,
                        });
                    }
                    open.pop();
                }
            }
        }
        // Frames still open close at the profile's end.
        if let (Some(&node), Some(before), Some(end)) = (open.last(), last, profile.end_value) {
            let end = self.amount("endValue", end)?;
            if end > before {
                *weights.entry(node).or_default() += span(before, end);
            }
        }
        let mut weighted: Vec<(u32, u128)> = weights.into_iter().collect();
        weighted.sort_unstable();
        let mut stack = Vec::new();
        for (node, weight) in weighted {
            stack.clear();
            let mut at = node;
            while at != 0 {
                let (parent, frame) = nodes[at as usize];
                stack.push(frame);
                at = parent;
            }
            stack.reverse();
            merged.add(&stack, self.tid, weight)?;
        }
        Ok(())
    }
}

/// The length of `from..to`, `to` not before `from`.
fn span(from: i64, to: i64) -> u128 {
    (i128::from(to) - i128::from(from)) as u128
}

/// `Thread 7349 "MainThread"` (how py-spy names a thread's profile): the
/// thread id, and its name when not empty.
fn thread_of(name: &str) -> Option<(u32, Option<String>)> {
    let rest = name.strip_prefix("Thread ")?;
    let (tid, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let tid: u32 = tid.parse().ok()?;
    let name = match rest.trim() {
        "" => None,
        quoted => {
            let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
            (!inner.is_empty()).then(|| inner.to_owned())
        }
    };
    Some((tid, name))
}

/// The file as py-spy's stack output shortens it: the path under the
/// Python installation or the packages folder, else the file's name.
fn short_file(file: &str) -> &str {
    if !file.ends_with(".py") || !file.starts_with('/') {
        return file;
    }
    for marker in ["/site-packages/", "/dist-packages/"] {
        if let Some(at) = file.rfind(marker) {
            return &file[at + marker.len()..];
        }
    }
    // The standard library: `/usr/lib/python3.11/json/decoder.py`.
    if let Some(at) = file.rfind("/lib/python") {
        if let Some((_, under)) = file[at + "/lib/".len()..].split_once('/') {
            return under;
        }
    }
    file.rsplit('/').next().unwrap_or(file)
}

/// The dotted module of a source file, as the python plugin names it:
/// `requests/api.py` → `requests.api`; other files keep their name.
fn python_module(file: &str) -> String {
    match file.strip_suffix(".py") {
        Some(stem) => stem
            .trim_start_matches('/')
            .trim_start_matches("<frozen ")
            .replace('/', "."),
        None => file.to_owned(),
    }
}

/// A frame as the python plugin makes py-spy's (see the module docs).
fn frame_of(raw: RawFrame) -> Frame {
    let line = raw
        .line
        .filter(|l| l.fract() == 0.0 && *l >= 1.0 && *l <= f64::from(u32::MAX))
        .map(|l| l as u32);
    match raw.file.filter(|f| !f.is_empty()) {
        Some(file) if line.is_some() => {
            let short = short_file(&file);
            Frame {
                function: raw.name,
                module: python_module(short),
                file: Some(short.to_owned()),
                line,
            }
        }
        // A native frame: the file is the library it lives in.
        Some(file) => Frame::function(raw.name).with_module(file),
        None => Frame {
            line,
            ..Frame::function(raw.name)
        },
    }
}
