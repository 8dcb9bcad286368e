//! The request's `ProfilesDictionary`: the tables every profile of the
//! request points into. Entry 0 of each table is the null entry an index
//! 0 means, so it must be the zero value; every other index is checked
//! when a profile first uses it, and a profile using a bad one is refused
//! alone. Stacks resolve to frames once per request, root first, with a
//! location's inlined lines expanded outermost first, as pprof files are
//! read (`odp_core::pprof`): each line a frame of its function (or system
//! name), its file and line, in the location's mapping; a location
//! without lines a frame of its mapping (`[libc.so.6]`) or address.

use std::collections::HashMap;

use odp_core::snapshot::MAX_STACK_DEPTH;
use odp_core::Frame;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::AnyValue;
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Link, Location, Mapping, ProfilesDictionary, Stack,
};

/// The semantic conventions' sample attributes that name a thread.
pub(super) const THREAD_ID: &str = "thread.id";
pub(super) const THREAD_NAME: &str = "thread.name";

/// An attribute of the table: its key and, when it is a scalar, its
/// value as text.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Attribute {
    pub key: String,
    pub value: Option<String>,
    /// The thread it names, when it is a `thread.id` ODP can keep.
    pub tid: Option<u32>,
}

/// A sample's link to a span, as the labels that name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct SpanLink {
    pub trace_id: String,
    pub span_id: String,
}

/// The dictionary with what was resolved from it so far.
pub(super) struct Dictionary<'a> {
    tables: &'a ProfilesDictionary,
    /// Each stack's frames (indexes into `frames`), root first.
    stacks: Vec<Option<Result<Vec<u32>, String>>>,
    /// Each location's frames, outermost first.
    locations: Vec<Option<Result<Vec<u32>, String>>>,
    attributes: Vec<Option<Result<Attribute, String>>>,
    links: Vec<Option<Result<SpanLink, String>>>,
    frames: Vec<Frame>,
    /// Frames by what makes them, so a frame is built once.
    frame_ids: HashMap<FrameKey, u32>,
}

/// What a frame is made of, in dictionary indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum FrameKey {
    /// A line: its function, the location's mapping and the line number.
    Line {
        function: usize,
        mapping: usize,
        line: i64,
    },
    /// A location without lines in a mapping with a file name.
    Module(usize),
    /// A location without lines or mapping.
    Address(u64),
    /// The null location.
    Unknown,
}

/// Fails unless entry 0 of every table is the zero value (or the table
/// is empty, so that nothing can point at a non-null entry 0).
pub(super) fn check_null_entries(tables: &ProfilesDictionary) -> Result<(), String> {
    fn zero<T: Default + PartialEq>(table: &[T]) -> bool {
        table.first().is_none_or(|first| *first == T::default())
    }
    let checks = [
        ("mapping_table", zero::<Mapping>(&tables.mapping_table)),
        ("location_table", zero::<Location>(&tables.location_table)),
        ("function_table", zero::<Function>(&tables.function_table)),
        ("link_table", zero::<Link>(&tables.link_table)),
        ("string_table", zero::<String>(&tables.string_table)),
        (
            "attribute_table",
            zero::<KeyValueAndUnit>(&tables.attribute_table),
        ),
        ("stack_table", zero::<Stack>(&tables.stack_table)),
    ];
    match checks.iter().find(|(_, ok)| !ok) {
        None => Ok(()),
        Some((table, _)) => Err(format!(
            "dictionary.{table}[0] is not the zero value: entry 0 of every dictionary table \
             is the null entry that index 0 stands for"
        )),
    }
}

/// `index` into a table of `len` entries, or why it is not one (`what`
/// names the referrer, built only then).
fn checked(index: i32, len: usize, what: impl FnOnce() -> String) -> Result<usize, String> {
    match usize::try_from(index) {
        Ok(i) if i < len || (i == 0 && len == 0) => Ok(i),
        _ => Err(format!(
            "{} index {index} is out of range (dictionary table of {len} entries)",
            what()
        )),
    }
}

impl<'a> Dictionary<'a> {
    pub(super) fn new(tables: &'a ProfilesDictionary) -> Self {
        Dictionary {
            tables,
            stacks: vec![None; tables.stack_table.len()],
            locations: vec![None; tables.location_table.len()],
            attributes: vec![None; tables.attribute_table.len()],
            links: vec![None; tables.link_table.len()],
            frames: Vec::new(),
            frame_ids: HashMap::new(),
        }
    }

    /// String `index` of the string table.
    pub(super) fn string(
        &self,
        index: i32,
        what: impl FnOnce() -> String,
    ) -> Result<&'a str, String> {
        let table = &self.tables.string_table;
        let i = checked(index, table.len(), what)?;
        Ok(table.get(i).map_or("", String::as_str))
    }

    /// Frame `id` of a resolved stack.
    pub(super) fn frame(&self, id: u32) -> &Frame {
        &self.frames[id as usize]
    }

    /// How many frames the resolved stacks use, for tables by frame id.
    pub(super) fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// The frames of stack `index`, which [`Dictionary::stack`] resolved
    /// before; empty otherwise.
    pub(super) fn resolved_stack(&self, index: i32) -> &[u32] {
        match usize::try_from(index).ok().and_then(|i| self.stacks.get(i)) {
            Some(Some(Ok(frames))) => frames,
            _ => &[],
        }
    }

    /// Stack `index`'s frames, root first; empty for the null stack.
    pub(super) fn stack(&mut self, index: i32) -> Result<&[u32], String> {
        let i = checked(index, self.tables.stack_table.len(), || "stack".into())?;
        if i == 0 {
            return Ok(&[]);
        }
        if self.stacks[i].is_none() {
            let resolved = self.resolve_stack(i);
            self.stacks[i] = Some(resolved);
        }
        match &self.stacks[i] {
            Some(Ok(frames)) => Ok(frames),
            Some(Err(e)) => Err(e.clone()),
            None => Ok(&[]),
        }
    }

    fn resolve_stack(&mut self, i: usize) -> Result<Vec<u32>, String> {
        let tables = self.tables;
        let mut frames = Vec::new();
        // Leaf first on the wire; root first in ODP.
        for &location in tables.stack_table[i].location_indices.iter().rev() {
            if location == 0 {
                // The null location: a frame nobody could name.
                let unknown = self.intern(FrameKey::Unknown, || Frame::function(UNKNOWN));
                frames.push(unknown);
            } else {
                frames.extend_from_slice(self.location(location)?);
            }
            if frames.len() > MAX_STACK_DEPTH {
                return Err(format!(
                    "stack {i} is more than {MAX_STACK_DEPTH} frames deep"
                ));
            }
        }
        Ok(frames)
    }

    /// Location `index` (not 0)'s frames, outermost first.
    fn location(&mut self, index: i32) -> Result<&[u32], String> {
        let i = checked(index, self.tables.location_table.len(), || {
            "location".into()
        })?;
        if self.locations[i].is_none() {
            let resolved = self.resolve_location(i);
            self.locations[i] = Some(resolved);
        }
        match &self.locations[i] {
            Some(Ok(frames)) => Ok(frames),
            Some(Err(e)) => Err(e.clone()),
            None => Ok(&[]),
        }
    }

    fn resolve_location(&mut self, i: usize) -> Result<Vec<u32>, String> {
        let tables = self.tables;
        let attributes = tables.attribute_table.len();
        let location = &tables.location_table[i];
        for &attribute in &location.attribute_indices {
            checked(attribute, attributes, || format!("location {i}: attribute"))?;
        }
        let m = checked(location.mapping_index, tables.mapping_table.len(), || {
            format!("location {i}: mapping")
        })?;
        let module = match tables.mapping_table.get(m) {
            Some(mapping) => {
                for &attribute in &mapping.attribute_indices {
                    checked(attribute, attributes, || format!("mapping {m}: attribute"))?;
                }
                self.string(mapping.filename_strindex, || {
                    format!("mapping {m}: file name string")
                })?
            }
            None => "",
        };
        if location.lines.is_empty() {
            let id = if module.is_empty() {
                let address = location.address;
                self.intern(FrameKey::Address(address), || {
                    Frame::function(format!("0x{address:x}"))
                })
            } else {
                self.intern(FrameKey::Module(m), || {
                    Frame::function(UNKNOWN).with_module(module)
                })
            };
            return Ok(vec![id]);
        }
        let mut frames = Vec::with_capacity(location.lines.len());
        // The last line is the caller the others were inlined into.
        for line in location.lines.iter().rev() {
            let f = checked(line.function_index, tables.function_table.len(), || {
                format!("location {i}: function")
            })?;
            let key = FrameKey::Line {
                function: f,
                mapping: m,
                line: line.line,
            };
            if let Some(&id) = self.frame_ids.get(&key) {
                frames.push(id);
                continue;
            }
            let (name, file) = match tables.function_table.get(f) {
                Some(function) => {
                    let what =
                        |field: &'static str| move || format!("function {f}: {field} string");
                    let name = self.string(function.name_strindex, what("name"))?;
                    let system_name =
                        self.string(function.system_name_strindex, what("system name"))?;
                    let file = self.string(function.filename_strindex, what("file name"))?;
                    (if name.is_empty() { system_name } else { name }, file)
                }
                None => ("", ""),
            };
            let number = line.line;
            frames.push(self.intern(key, || Frame {
                function: if name.is_empty() { UNKNOWN } else { name }.to_owned(),
                module: module.to_owned(),
                file: (!file.is_empty()).then(|| file.to_owned()),
                line: u32::try_from(number).ok().filter(|&l| l > 0),
            }));
        }
        Ok(frames)
    }

    fn intern(&mut self, key: FrameKey, frame: impl FnOnce() -> Frame) -> u32 {
        if let Some(&id) = self.frame_ids.get(&key) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push(frame());
        self.frame_ids.insert(key, id);
        id
    }

    /// Attribute `index` of the attribute table; `None` for the null
    /// attribute.
    pub(super) fn attribute(&mut self, index: i32) -> Result<Option<&Attribute>, String> {
        let i = checked(index, self.tables.attribute_table.len(), || {
            "attribute".into()
        })?;
        if i == 0 {
            return Ok(None);
        }
        if self.attributes[i].is_none() {
            let resolved = self.resolve_attribute(i);
            self.attributes[i] = Some(resolved);
        }
        match &self.attributes[i] {
            Some(Ok(attribute)) => Ok(Some(attribute)),
            Some(Err(e)) => Err(e.clone()),
            None => Ok(None),
        }
    }

    fn resolve_attribute(&self, i: usize) -> Result<Attribute, String> {
        let entry = &self.tables.attribute_table[i];
        let key = self.string(entry.key_strindex, || format!("attribute {i}: key string"))?;
        self.string(entry.unit_strindex, || {
            format!("attribute {i}: unit string")
        })?;
        let value = self.scalar(entry.value.as_ref(), || format!("attribute {i}"))?;
        let tid = match key {
            THREAD_ID => value
                .as_deref()
                .and_then(|v| v.parse().ok())
                .filter(|&t| t > 0),
            _ => None,
        };
        Ok(Attribute {
            key: key.to_owned(),
            value,
            tid,
        })
    }

    /// An attribute value as label text: `None` for arrays, maps, bytes
    /// and absent values, which labels cannot hold.
    pub(super) fn scalar(
        &self,
        value: Option<&AnyValue>,
        what: impl FnOnce() -> String,
    ) -> Result<Option<String>, String> {
        Ok(match value.and_then(|v| v.value.as_ref()) {
            Some(Value::StringValue(s)) => Some(s.clone()),
            Some(Value::StringValueStrindex(i)) => Some(
                self.string(*i, || format!("{}: value string", what()))?
                    .to_owned(),
            ),
            Some(Value::BoolValue(b)) => Some(b.to_string()),
            Some(Value::IntValue(i)) => Some(i.to_string()),
            Some(Value::DoubleValue(d)) => Some(d.to_string()),
            Some(Value::ArrayValue(_) | Value::KvlistValue(_) | Value::BytesValue(_)) | None => {
                None
            }
        })
    }

    /// Link `index`: `None` for the null link.
    pub(super) fn link(&mut self, index: i32) -> Result<Option<&SpanLink>, String> {
        let i = checked(index, self.tables.link_table.len(), || "link".into())?;
        if i == 0 {
            return Ok(None);
        }
        if self.links[i].is_none() {
            let resolved = resolve_link(i, &self.tables.link_table[i]);
            self.links[i] = Some(resolved);
        }
        match &self.links[i] {
            Some(Ok(link)) => Ok(Some(link)),
            Some(Err(e)) => Err(e.clone()),
            None => Ok(None),
        }
    }
}

fn resolve_link(i: usize, link: &Link) -> Result<SpanLink, String> {
    if link.trace_id.len() != 16 || link.trace_id.iter().all(|&b| b == 0) {
        return Err(format!(
            "link {i}: trace_id must be 16 bytes, not all zero ({} given)",
            link.trace_id.len()
        ));
    }
    if link.span_id.len() != 8 {
        return Err(format!(
            "link {i}: span_id must be 8 bytes ({} given)",
            link.span_id.len()
        ));
    }
    Ok(SpanLink {
        trace_id: hex(&link.trace_id),
        span_id: hex(&link.span_id),
    })
}

/// A frame nobody could name, as symbolizers write it.
const UNKNOWN: &str = "[unknown]";

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
