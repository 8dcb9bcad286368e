//! pprof profiles (gzip-compressed `perftools.profiles.Profile` protocol
//! buffers, as `go tool pprof` and most profilers read and write them),
//! to and from [`WeightedStack`]s.
//!
//! The messages below are the fields of
//! github.com/google/pprof/proto/profile.proto this module needs, written
//! by hand with `prost` so the build needs no `protoc`. Decoding checks
//! every index and length: a malformed file is an error, never a panic.

use std::collections::HashMap;
use std::io::{Read, Write};

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;
use thiserror::Error;

use crate::model::{display_name, EventKind, WeightedStack};
use crate::snapshot::MAX_STACK_DEPTH;

/// A decompressed profile larger than this is refused: it would be far
/// larger than any profile worth importing, and gzip bombs are cheap.
pub const MAX_DECODED_BYTES: u64 = 256 << 20;

#[derive(Clone, PartialEq, Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    /// Index into the string table.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    /// Leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One per sample type.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Labels of this sample (thread, the SDK's tags, …).
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Label {
    /// Index into the string table.
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// Index into the string table; 0 when the label is numeric.
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    #[prost(int64, tag = "5")]
    pub filename: i64,
    #[prost(int64, tag = "6")]
    pub build_id: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Innermost (inlined) function first, its callers after.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}

/// What a profile's header says besides its stacks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PprofMeta {
    /// What the counts measure; `samples` when unknown.
    pub event: Option<EventKind>,
    /// Nanoseconds one sample stands for, for time-based events: adds a
    /// second value, `cpu` (or `wall`) in nanoseconds.
    pub period_nanos: Option<i64>,
    pub duration_nanos: Option<i64>,
    /// When the profile started, Unix nanoseconds.
    pub time_nanos: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedPprof {
    /// The chosen sample type's name and unit (`samples`/`count`).
    pub sample_type: String,
    pub unit: String,
    /// Every sample type the profile has, in order.
    pub sample_types: Vec<String>,
    /// The sampling period, when the period type is in nanoseconds.
    pub period_nanos: Option<i64>,
    pub duration_nanos: Option<i64>,
    pub time_nanos: Option<i64>,
    /// Root first, with the chosen sample type's values as counts;
    /// samples with a zero value or no location are left out.
    pub stacks: Vec<WeightedStack>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PprofError {
    #[error("not a pprof profile: {0}")]
    Malformed(String),
    #[error("the gzip stream is corrupt: {0}")]
    Gzip(String),
    #[error("the decompressed profile exceeds {MAX_DECODED_BYTES} bytes")]
    TooLarge,
    #[error("the profile has no sample types")]
    NoSampleTypes,
    #[error("no sample type {wanted:?}; the profile has {available:?}")]
    UnknownSampleType {
        wanted: String,
        available: Vec<String>,
    },
    #[error("{what} refers to string {index}, but the string table has {len} entries")]
    StringOutOfRange {
        what: String,
        index: i64,
        len: usize,
    },
    #[error("sample {sample} refers to location {id}, which the profile does not define")]
    UnknownLocation { sample: usize, id: u64 },
    #[error("location {location} refers to function {id}, which the profile does not define")]
    UnknownFunction { location: u64, id: u64 },
    #[error("sample {sample} has {got} values but the profile has {want} sample types")]
    ValueCount {
        sample: usize,
        got: usize,
        want: usize,
    },
    #[error("sample {sample} has the negative value {value}")]
    NegativeValue { sample: usize, value: i64 },
    #[error("sample {sample} is {depth} frames deep, more than {MAX_STACK_DEPTH}")]
    StackTooDeep { sample: usize, depth: usize },
}

/// Encodes `stacks` as a gzip-compressed pprof profile.
pub fn encode(stacks: &[WeightedStack], meta: &PprofMeta) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&to_profile(stacks, meta).encode_to_vec())
        .expect("writing to a Vec cannot fail");
    gz.finish().expect("writing to a Vec cannot fail")
}

/// The profile message [`encode`] compresses: one function and one
/// location per distinct frame name, ids counting from 1.
pub fn to_profile(stacks: &[WeightedStack], meta: &PprofMeta) -> Profile {
    let mut strings = StringTable::default();
    let event = meta.event.map_or("samples", EventKind::as_str);
    let mut sample_type = vec![ValueType {
        r#type: strings.intern(event),
        unit: strings.intern("count"),
    }];
    let period = meta.period_nanos.filter(|&p| p > 0);
    let period_type = period.map(|_| ValueType {
        r#type: strings.intern(if meta.event == Some(EventKind::Wall) {
            "wall"
        } else {
            "cpu"
        }),
        unit: strings.intern("nanoseconds"),
    });
    sample_type.extend(period_type.clone());

    let mut location_of: HashMap<&str, u64> = HashMap::new();
    let (mut function, mut location) = (Vec::new(), Vec::new());
    let mut sample = Vec::with_capacity(stacks.len());
    for stack in stacks {
        if stack.count == 0 || stack.frames.is_empty() {
            continue;
        }
        let location_id = stack
            .frames
            .iter()
            .rev()
            .map(|name| {
                *location_of.entry(name.as_str()).or_insert_with(|| {
                    let id = function.len() as u64 + 1;
                    let name = strings.intern(name);
                    function.push(Function {
                        id,
                        name,
                        system_name: name,
                        ..Function::default()
                    });
                    location.push(Location {
                        id,
                        line: vec![Line {
                            function_id: id,
                            line: 0,
                        }],
                        ..Location::default()
                    });
                    id
                })
            })
            .collect();
        let count = i64::try_from(stack.count).unwrap_or(i64::MAX);
        let mut value = vec![count];
        if let Some(period) = period {
            value.push(count.saturating_mul(period));
        }
        sample.push(Sample {
            location_id,
            value,
            label: Vec::new(),
        });
    }
    Profile {
        sample_type,
        sample,
        location,
        function,
        string_table: strings.strings,
        time_nanos: meta.time_nanos.unwrap_or(0),
        duration_nanos: meta.duration_nanos.unwrap_or(0),
        period_type,
        period: period.unwrap_or(0),
        ..Profile::default()
    }
}

/// Strings by first use; index 0 is always "" as the format requires.
struct StringTable {
    strings: Vec<String>,
    index: HashMap<String, i64>,
}

impl Default for StringTable {
    fn default() -> Self {
        StringTable {
            strings: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }
}

impl StringTable {
    fn intern(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len() as i64;
        self.strings.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

/// Decodes a pprof profile, gzip-compressed or not. `sample_type` picks
/// the values to count by name; by default the profile's
/// `default_sample_type`, else its first.
pub fn decode(bytes: &[u8], sample_type: Option<&str>) -> Result<DecodedPprof, PprofError> {
    from_profile(&decode_message(bytes)?, sample_type)
}

/// The profile message of a pprof file, gzip-compressed or not, for
/// callers that read several of its sample types ([`from_profile`]).
pub fn decode_message(bytes: &[u8]) -> Result<Profile, PprofError> {
    let raw;
    let message = if bytes.starts_with(&[0x1f, 0x8b]) {
        raw = gunzip(bytes)?;
        raw.as_slice()
    } else {
        bytes
    };
    Profile::decode(message).map_err(|e| PprofError::Malformed(e.to_string()))
}

/// The text labels every sample of `profile` carries with one value (an
/// SDK's tags, which it writes on each sample): what describes the whole
/// profile. Labels that vary (thread ids) or are numeric are left out.
pub fn common_labels(profile: &Profile) -> Result<Vec<(String, String)>, PprofError> {
    let strings = Strings(&profile.string_table);
    let Some((first, rest)) = profile.sample.split_first() else {
        return Ok(Vec::new());
    };
    let mut common = Vec::new();
    for label in first.label.iter().filter(|l| l.str != 0) {
        let everywhere = rest.iter().all(|sample| {
            sample
                .label
                .iter()
                .any(|l| l.key == label.key && l.str == label.str)
        });
        if everywhere {
            let what = || "sample label".to_owned();
            common.push((
                strings.get(what, label.key)?.to_owned(),
                strings.get(what, label.str)?.to_owned(),
            ));
        }
    }
    Ok(common)
}

/// Each sample type's name and unit, as the string table spells them.
pub fn sample_types(profile: &Profile) -> Result<Vec<(String, String)>, PprofError> {
    let strings = Strings(&profile.string_table);
    let mut types = Vec::with_capacity(profile.sample_type.len());
    for (i, t) in profile.sample_type.iter().enumerate() {
        let what = || format!("sample type {i}");
        types.push((
            strings.get(what, t.r#type)?.to_owned(),
            strings.get(what, t.unit)?.to_owned(),
        ));
    }
    Ok(types)
}

fn gunzip(bytes: &[u8]) -> Result<Vec<u8>, PprofError> {
    let mut out = Vec::new();
    GzDecoder::new(bytes)
        .take(MAX_DECODED_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| PprofError::Gzip(e.to_string()))?;
    if out.len() as u64 > MAX_DECODED_BYTES {
        return Err(PprofError::TooLarge);
    }
    Ok(out)
}

/// See [`decode`].
pub fn from_profile(
    profile: &Profile,
    sample_type: Option<&str>,
) -> Result<DecodedPprof, PprofError> {
    let strings = Strings(&profile.string_table);
    let mut types = Vec::with_capacity(profile.sample_type.len());
    for (i, t) in profile.sample_type.iter().enumerate() {
        let what = || format!("sample type {i}");
        types.push((strings.get(what, t.r#type)?, strings.get(what, t.unit)?));
    }
    if types.is_empty() {
        return Err(PprofError::NoSampleTypes);
    }
    let names: Vec<String> = types.iter().map(|(name, _)| name.to_string()).collect();
    let default = strings.get(|| "default_sample_type".into(), profile.default_sample_type)?;
    let chosen =
        match sample_type {
            Some(wanted) => names.iter().position(|n| n == wanted).ok_or_else(|| {
                PprofError::UnknownSampleType {
                    wanted: wanted.to_owned(),
                    available: names.clone(),
                }
            })?,
            None => names
                .iter()
                .position(|n| !default.is_empty() && n == default)
                .unwrap_or(0),
        };

    let functions: HashMap<u64, &Function> = profile.function.iter().map(|f| (f.id, f)).collect();
    let mappings: HashMap<u64, &Mapping> = profile.mapping.iter().map(|m| (m.id, m)).collect();
    // Each location's frame names, innermost first, resolved once.
    let mut locations: HashMap<u64, Vec<String>> = HashMap::with_capacity(profile.location.len());
    for location in &profile.location {
        let mut frames = Vec::with_capacity(location.line.len().max(1));
        for line in &location.line {
            let function = functions
                .get(&line.function_id)
                .ok_or(PprofError::UnknownFunction {
                    location: location.id,
                    id: line.function_id,
                })?;
            let what = || format!("function {}", function.id);
            let name = strings.get(what, function.name)?;
            let system_name = strings.get(what, function.system_name)?;
            strings.get(what, function.filename)?;
            let name = if name.is_empty() { system_name } else { name };
            frames.push(display_name(name, ""));
        }
        if frames.is_empty() {
            frames.push(unsymbolized(location, &mappings, &strings)?);
        }
        locations.insert(location.id, frames);
    }
    for (i, mapping) in profile.mapping.iter().enumerate() {
        let what = || format!("mapping {i}");
        strings.get(what, mapping.filename)?;
        strings.get(what, mapping.build_id)?;
    }

    let mut stacks = Vec::with_capacity(profile.sample.len());
    for (i, sample) in profile.sample.iter().enumerate() {
        if sample.value.len() != types.len() {
            return Err(PprofError::ValueCount {
                sample: i,
                got: sample.value.len(),
                want: types.len(),
            });
        }
        let value = sample.value[chosen];
        if value < 0 {
            return Err(PprofError::NegativeValue { sample: i, value });
        }
        let mut frames = Vec::new();
        for &id in sample.location_id.iter().rev() {
            let names = locations
                .get(&id)
                .ok_or(PprofError::UnknownLocation { sample: i, id })?;
            // Outermost caller of an inlined chain first, as stacks are.
            frames.extend(names.iter().rev().cloned());
            if frames.len() > MAX_STACK_DEPTH {
                return Err(PprofError::StackTooDeep {
                    sample: i,
                    depth: frames.len(),
                });
            }
        }
        if value == 0 || frames.is_empty() {
            continue;
        }
        stacks.push(WeightedStack {
            frames,
            count: value as u64,
        });
    }

    let period_type = match &profile.period_type {
        Some(t) => Some(strings.get(|| "period_type".into(), t.unit)?),
        None => None,
    };
    let nonzero = |v: i64| (v != 0).then_some(v);
    Ok(DecodedPprof {
        sample_type: types[chosen].0.to_owned(),
        unit: types[chosen].1.to_owned(),
        sample_types: names,
        period_nanos: (period_type == Some("nanoseconds") && profile.period > 0)
            .then_some(profile.period),
        duration_nanos: nonzero(profile.duration_nanos),
        time_nanos: nonzero(profile.time_nanos),
        stacks,
    })
}

/// The string table, every lookup bounds-checked.
struct Strings<'a>(&'a [String]);

impl<'a> Strings<'a> {
    /// String `index`; `what` names the referrer in the error.
    fn get(&self, what: impl FnOnce() -> String, index: i64) -> Result<&'a str, PprofError> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.0.get(i))
            .map(String::as_str)
            .ok_or_else(|| PprofError::StringOutOfRange {
                what: what(),
                index,
                len: self.0.len(),
            })
    }
}

/// A location without symbols: its module, as perf shows such frames, or
/// its address.
fn unsymbolized(
    location: &Location,
    mappings: &HashMap<u64, &Mapping>,
    strings: &Strings<'_>,
) -> Result<String, PprofError> {
    let module = match mappings.get(&location.mapping_id) {
        Some(mapping) => strings.get(|| format!("mapping {}", mapping.id), mapping.filename)?,
        None => "",
    };
    Ok(if module.is_empty() {
        format!("0x{:x}", location.address)
    } else {
        display_name("", module)
    })
}

#[cfg(test)]
#[path = "pprof_tests.rs"]
mod tests;
