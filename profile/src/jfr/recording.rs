//! A whole recording read at once, for an import: the stacks of each kind
//! of sample or wait it holds, the sampling period its settings name, and
//! the time it spans.
//!
//! | kind | JFR events | weight | ODP event |
//! | --- | --- | --- | --- |
//! | `cpu` | `jdk.ExecutionSample` | 1 a sample | `cpu-clock` |
//! | `alloc` | `jdk.ObjectAllocationSample` | bytes | `alloc-bytes` |
//! | `lock` | `jdk.JavaMonitorEnter`, `jdk.ThreadPark` | nanoseconds waited | `lock` |
//!
//! Frames are the `jvm` plugin's ([`super::stack_of`]); a wait's stack
//! ends in the leaf naming what it waited for ([`super::waits`]). The CPU
//! samples' period is the `period` setting of `jdk.ExecutionSample`
//! (`jdk.ActiveSetting` events, written when the recording's settings
//! enable them), when the recording names one and only one.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use jfrs::reader::event::Accessor;
use odp_core::{EventKind, Frame};

use super::waits::{read_wait, JfrWait};
use super::{read_events, stack_of, thread_of, ChunkView, JfrError, SampleEvent, Traces};

/// What an import of a recording counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Cpu,
    Alloc,
    Lock,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Cpu, Kind::Alloc, Kind::Lock];

    /// The name an import picks it by (`sample_type`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::Alloc => "alloc",
            Kind::Lock => "lock",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The JFR events it reads.
    pub fn jfr_events(self) -> &'static str {
        match self {
            Kind::Cpu => "jdk.ExecutionSample",
            Kind::Alloc => "jdk.ObjectAllocationSample",
            Kind::Lock => "jdk.JavaMonitorEnter and jdk.ThreadPark",
        }
    }

    /// What its weights measure.
    pub fn event(self) -> EventKind {
        match self {
            Kind::Cpu => EventKind::CpuClock,
            Kind::Alloc => EventKind::AllocBytes,
            Kind::Lock => EventKind::Lock,
        }
    }
}

/// One stack of a kind, on one thread, with its summed weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JfrStack {
    /// The OS thread id; 0 when the recording does not say.
    pub tid: u32,
    /// Root first.
    pub frames: Stack,
    pub weight: u64,
}

/// The events of one kind a recording holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindStacks {
    /// Events read (samples with a stack trace, or waits).
    pub events: u64,
    /// Their weights added up.
    pub weight: u128,
    pub stacks: Vec<JfrStack>,
}

/// Everything an import reads of a recording.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recording {
    pub kinds: BTreeMap<Kind, KindStacks>,
    /// Thread names by OS thread id.
    pub threads: BTreeMap<u32, String>,
    /// The CPU samples' period, when the settings name exactly one.
    pub cpu_period_nanos: Option<u64>,
    /// When the first chunk starts, in Unix nanoseconds.
    pub start_nanos: Option<i64>,
    /// From then to the end of the last chunk.
    pub duration_nanos: Option<i64>,
}

impl Recording {
    /// The kinds the recording holds events of, in [`Kind::ALL`]'s order.
    pub fn kinds_present(&self) -> Vec<Kind> {
        self.kinds
            .iter()
            .filter(|(_, k)| k.events > 0)
            .map(|(&kind, _)| kind)
            .collect()
    }

    /// The kind an import counts when it names none: CPU samples, else
    /// the first kind the recording has.
    pub fn default_kind(&self) -> Option<Kind> {
        self.kinds_present().first().copied()
    }
}

/// What one event of the recording is, for the import.
enum Item {
    Sample(Kind, u32, Option<String>, Stack, u64),
    Wait(JfrWait),
    Period(String),
}

/// Frames root first, shared by the events with the same stack trace.
pub type Stack = Arc<[Frame]>;

/// A stack's identity: its allocation (the traces of a recording are
/// shared, see [`Traces`], so equal stacks are mostly the same one).
fn address(stack: &Stack) -> usize {
    Arc::as_ptr(stack) as *const Frame as usize
}

/// Weights summed by kind, thread and stack.
#[derive(Default)]
struct Sums {
    /// Each stack is kept with its sum, so its address is not reused by
    /// another stack while it is a key.
    by_stack: HashMap<(Kind, u32, usize), (Stack, u64)>,
    /// A wait's stack with its leaf under it, once per trace and leaf
    /// (the trace kept for the same reason).
    with_leaf: HashMap<(usize, Frame), (Stack, Stack)>,
}

impl Sums {
    fn add(&mut self, recording: &mut Recording, kind: Kind, tid: u32, stack: Stack, weight: u64) {
        let entry = self
            .by_stack
            .entry((kind, tid, address(&stack)))
            .or_insert_with(|| (stack, 0));
        entry.1 = entry.1.saturating_add(weight);
        let kind = recording.kinds.entry(kind).or_default();
        kind.events += 1;
        kind.weight += u128::from(weight);
    }

    fn add_wait(&mut self, recording: &mut Recording, wait: JfrWait) {
        let key = (address(&wait.frames), wait.blocker);
        let (_, stack) = self.with_leaf.entry(key).or_insert_with_key(|(_, leaf)| {
            let with: Stack = wait.frames.iter().chain([leaf]).cloned().collect();
            (wait.frames.clone(), with)
        });
        let stack = stack.clone();
        self.add(recording, Kind::Lock, wait.tid, stack, wait.nanos);
    }
}

/// Reads every chunk of a recording.
pub fn read(bytes: Vec<u8>) -> Result<Recording, JfrError> {
    let chunks = read_events(bytes, read_item)?;
    let mut recording = Recording::default();
    let mut periods: Vec<String> = Vec::new();
    let mut sums = Sums::default();
    let (mut start, mut end) = (i64::MAX, i64::MIN);
    for chunk in chunks {
        start = start.min(chunk.start_nanos);
        end = end.max(
            chunk
                .start_nanos
                .saturating_add(chunk.duration_nanos.max(0)),
        );
        for item in chunk.events {
            match item {
                Item::Sample(kind, tid, name, frames, weight) => {
                    name_thread(&mut recording, tid, name);
                    sums.add(&mut recording, kind, tid, frames, weight);
                }
                Item::Wait(mut wait) => {
                    name_thread(&mut recording, wait.tid, wait.thread_name.take());
                    sums.add_wait(&mut recording, wait);
                }
                Item::Period(value) => periods.push(value),
            }
        }
    }
    for ((kind, tid, _), (frames, weight)) in sums.by_stack {
        let stacks = &mut recording.kinds.entry(kind).or_default().stacks;
        stacks.push(JfrStack {
            tid,
            frames,
            weight,
        });
    }
    for kind in recording.kinds.values_mut() {
        // Independent of the hash map's order.
        kind.stacks
            .sort_by(|a, b| (a.tid, &a.frames).cmp(&(b.tid, &b.frames)));
    }
    periods.sort();
    periods.dedup();
    recording.cpu_period_nanos = match periods.as_slice() {
        [one] => timespan_nanos(one),
        _ => None,
    };
    if start <= end {
        recording.start_nanos = Some(start);
        recording.duration_nanos = Some(end.saturating_sub(start));
    }
    Ok(recording)
}

fn name_thread(recording: &mut Recording, tid: u32, name: Option<String>) {
    if let (true, Some(name)) = (tid != 0, name) {
        recording.threads.entry(tid).or_insert(name);
    }
}

fn read_item(
    chunk: &ChunkView<'_>,
    name: &str,
    value: &Accessor<'_>,
    traces: &mut Traces,
) -> Option<Item> {
    for (kind, event) in [
        (Kind::Cpu, SampleEvent::Execution),
        (Kind::Alloc, SampleEvent::Allocation),
    ] {
        if name == event.jfr_name() {
            let frames = stack_of(value, traces)?;
            let (tid, thread) = thread_of(value, event.thread_field());
            return Some(Item::Sample(kind, tid, thread, frames, event.weight(value)));
        }
    }
    if name == "jdk.ActiveSetting" {
        let text = |field: &str| {
            value
                .get_field(field)
                .and_then(|v| <&str>::try_from(v.value).ok())
                .map(str::to_owned)
        };
        let id = value
            .get_field("id")
            .and_then(|v| i64::try_from(v.value).ok())?;
        let execution = chunk.type_name(id) == Some(SampleEvent::Execution.jfr_name());
        return (execution && text("name")? == "period")
            .then(|| text("value"))
            .flatten()
            .map(Item::Period);
    }
    read_wait(chunk, name, value, traces).map(Item::Wait)
}

/// A JFR timespan setting (`10 ms`, `20ms`, `1 s`) in nanoseconds; `None`
/// for the other values a period takes (`everyChunk`, `endChunk`).
pub fn timespan_nanos(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let scale: u64 = match unit.trim() {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    };
    number.checked_mul(scale).filter(|&n| n > 0)
}
