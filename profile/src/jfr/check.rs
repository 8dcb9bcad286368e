//! The structural walk every recording gets before jfrs reads it.
//!
//! jfrs (0.2) reads a chunk as the file says: a string's or array's
//! declared length becomes `Vec::with_capacity` of that length, a string
//! table's declared count too; a class whose field is the class itself
//! (not through the constant pool) recurses until the stack overflows; an
//! event declaring size 0 is read again forever; constant pools whose
//! offsets point at one another are read in a loop. An allocation failure
//! or a stack overflow aborts the process, and a loop never ends, so none
//! can be left to `catch_unwind`.
//!
//! This walk reads each chunk exactly as jfrs will (the metadata event's
//! string table and element tree, the classes it declares, every constant
//! pool and every event, value by value) without building anything, and
//! refuses a chunk where:
//!
//! - a count or length is negative or larger than the bytes left in the
//!   chunk (every element takes at least a byte, so no real file does);
//! - the metadata's elements nest deeper than [`MAX_ELEMENT_DEPTH`], or a
//!   value's inline objects deeper than [`MAX_VALUE_DEPTH`] (which a type
//!   holding itself always does);
//! - an event's size does not move past its own header, or the constant
//!   pools' offsets leave the chunk or come back to one already read;
//! - the recording holds more than [`MAX_VALUES`] values in all: jfrs
//!   builds one 40-byte node per value, so this bounds what it allocates
//!   (and the time it takes) whatever the file declares; declared counts
//!   are taken from it before jfrs makes room for them.
//!
//! What the walk accepts, jfrs reads with at most [`MAX_VALUES`] nodes and
//! a recursion depth of [`MAX_VALUE_DEPTH`]; what it refuses jfrs would
//! either refuse too or could not read safely.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::JfrError;

/// A chunk header's size: magic, version, then eight fields.
const HEADER: usize = 68;
/// Nesting of the metadata's elements (root, metadata, class, field,
/// annotation: 5 in the JDK's recordings).
pub const MAX_ELEMENT_DEPTH: usize = 16;
/// Nesting of inline objects in one value (the JDK's events and constants
/// nest 2 or 3 deep; their objects refer to one another through the
/// constant pool).
pub const MAX_VALUE_DEPTH: usize = 32;
/// Values (numbers, strings, objects, arrays, constant references) in a
/// whole recording: the JDK's recordings hold about one per 10 bytes (a
/// 145 KB one 13,833), so one of the import's 32 MiB some 3.5 million.
/// jfrs builds a 40-byte node per value, so this caps it at 340 MB.
pub const MAX_VALUES: u64 = 1 << 23;

/// Walks every chunk of `bytes`: the values the recording holds, or an
/// error naming what jfrs must not read.
pub(super) fn check(bytes: &[u8]) -> Result<u64, JfrError> {
    if bytes.is_empty() {
        return Err(JfrError::Format("empty file".to_owned()));
    }
    let mut budget = MAX_VALUES;
    let mut at = 0;
    let mut index = 0;
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
        check_chunk(&bytes[at..at + size], &mut budget)
            .map_err(|message| JfrError::Chunk { index, message })?;
        at += size;
        index += 1;
    }
    Ok(MAX_VALUES - budget)
}

type Check<T> = Result<T, String>;

fn check_chunk(chunk: &[u8], budget: &mut u64) -> Check<()> {
    let field = |at: usize| i64::from_be_bytes(chunk[at..at + 8].try_into().expect("8 bytes"));
    let constant_pool_offset = field(16);
    let metadata_offset = field(24);
    let features = i32::from_be_bytes(chunk[64..68].try_into().expect("4 bytes"));
    let compressed = features & 1 != 0;
    let reader = |offset: i64| -> Check<Reader<'_>> {
        let pos = usize::try_from(offset)
            .ok()
            .filter(|&p| p < chunk.len())
            .ok_or_else(|| format!("offset {offset} is outside the chunk"))?;
        Ok(Reader {
            data: chunk,
            pos,
            compressed,
        })
    };
    let types = metadata(reader(metadata_offset)?, budget)?;
    let mut walk = Walk {
        types: &types,
        budget,
    };
    // Constant pools: each names the offset of the one before it.
    let mut seen = HashSet::new();
    let (mut offset, mut delta) = (0i64, constant_pool_offset);
    while delta != 0 {
        offset = offset
            .checked_add(delta)
            .ok_or("constant pool offsets overflow")?;
        if !seen.insert(offset) {
            return Err(format!("the constant pools loop back to offset {offset}"));
        }
        let mut r = reader(offset)?;
        r.i32()?;
        if r.i64()? != 1 {
            return Err(format!("no constant pool event at offset {offset}"));
        }
        r.i64()?;
        r.i64()?;
        delta = r.i64()?;
        r.i8()?;
        let pools = r.i32()?;
        for _ in 0..pools.max(0) {
            let class = r.i64()?;
            let constants = r.i32()?;
            for _ in 0..constants.max(0) {
                r.i64()?;
                walk.value(&mut r, class, 0)?;
            }
        }
    }
    // Events, one after another from the end of the header.
    let mut at = HEADER;
    while at < chunk.len() {
        let mut r = reader(at as i64)?;
        let size = r.i32()?;
        let kind = r.i64()?;
        let size = usize::try_from(size).unwrap_or(0);
        if size < r.pos - at {
            return Err(format!("the event at byte {at} has size {size}"));
        }
        if kind != 0 && kind != 1 {
            walk.value(&mut r, kind, 0)?;
        }
        at += size;
    }
    Ok(())
}

/// A class as jfrs declares it from the metadata.
#[derive(Debug, Default)]
struct Class {
    name: String,
    fields: Vec<Field>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Field {
    class: i64,
    constant_pool: bool,
    array: bool,
}

/// An element of the metadata's tree, as much of it as jfrs keeps.
#[derive(Debug)]
enum Element {
    Root(Vec<(i64, Class)>),
    Metadata(Vec<(i64, Class)>),
    Class(i64, Option<Class>),
    Field(Option<Field>),
    Other,
}

/// The classes the chunk's metadata event declares, by id.
fn metadata(mut r: Reader<'_>, budget: &mut u64) -> Check<HashMap<i64, Class>> {
    r.i32()?;
    if r.i64()? != 0 {
        return Err("no metadata event at the metadata offset".to_owned());
    }
    r.i64()?;
    r.i64()?;
    r.i64()?;
    // jfrs makes room for the declared count at once.
    let count = r.count("metadata strings")?;
    spend(budget, count as u64)?;
    let mut strings = Vec::new();
    for _ in 0..count {
        strings.push(r.string()?);
    }
    r.i32()?;
    match element(&mut r, &strings, Element::Root(Vec::new()), 0)? {
        Element::Root(classes) => Ok(classes.into_iter().collect()),
        _ => Ok(HashMap::new()),
    }
}

fn element<'a>(
    r: &mut Reader<'a>,
    strings: &[Option<Cow<'a, str>>],
    mut current: Element,
    depth: usize,
) -> Check<Element> {
    if depth > MAX_ELEMENT_DEPTH {
        return Err(format!(
            "the metadata nests deeper than {MAX_ELEMENT_DEPTH}"
        ));
    }
    let string = |index: i32| -> Check<&str> {
        usize::try_from(index)
            .ok()
            .and_then(|i| strings.get(i))
            .and_then(|s| s.as_deref())
            .ok_or_else(|| format!("no metadata string {index}"))
    };
    let attributes = r.i32()?;
    for _ in 0..attributes.max(0) {
        let key = string(r.i32()?)?;
        let value = string(r.i32()?)?;
        let bad = || format!("metadata attribute {key} = {value:?}");
        match &mut current {
            Element::Class(id, class) => match key {
                "id" => *id = value.parse().map_err(|_| bad())?,
                "name" => class.get_or_insert_with(Class::default).name = value.to_owned(),
                _ => {}
            },
            Element::Field(field) => {
                let field = field.get_or_insert_with(Field::default);
                match key {
                    "class" => field.class = value.parse().map_err(|_| bad())?,
                    "constantPool" => field.constant_pool = value.parse().map_err(|_| bad())?,
                    "dimension" => field.array = value.parse::<i32>().map_err(|_| bad())? > 0,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let children = r.i32()?;
    for _ in 0..children.max(0) {
        let child = match string(r.i32()?)? {
            "metadata" => Element::Metadata(Vec::new()),
            "class" => Element::Class(0, None),
            "field" => Element::Field(None),
            "region" | "setting" | "annotation" => Element::Other,
            other => return Err(format!("unknown metadata element {other:?}")),
        };
        let child = element(r, strings, child, depth + 1)?;
        // What jfrs keeps of a child: a metadata element under the root
        // (the last one), classes under it, fields under a class.
        match (&mut current, child) {
            (Element::Root(classes), Element::Metadata(declared)) => *classes = declared,
            (Element::Metadata(classes), Element::Class(id, class)) => {
                classes.push((id, class.unwrap_or_default()));
            }
            (Element::Class(_, class), Element::Field(field)) => class
                .get_or_insert_with(Class::default)
                .fields
                .push(field.unwrap_or_default()),
            _ => {}
        }
    }
    Ok(current)
}

/// Takes `values` from what is left of the recording's budget.
fn spend(budget: &mut u64, values: u64) -> Check<()> {
    *budget = budget
        .checked_sub(values)
        .ok_or_else(|| format!("the recording holds more than {MAX_VALUES} values"))?;
    Ok(())
}

/// The walk over values, with what is left of the recording's budget.
struct Walk<'t, 'b> {
    types: &'t HashMap<i64, Class>,
    budget: &'b mut u64,
}

impl Walk<'_, '_> {
    fn spend(&mut self, values: u64) -> Check<()> {
        spend(self.budget, values)
    }

    /// One value of class `class`, as jfrs's `ValueDescriptor::try_new`
    /// reads it.
    fn value(&mut self, r: &mut Reader<'_>, class: i64, depth: usize) -> Check<()> {
        let types = self.types;
        let Some(desc) = types.get(&class) else {
            return Err(format!("no class {class} in the metadata"));
        };
        self.spend(1)?;
        match desc.name.as_str() {
            "int" => drop(r.i32()?),
            "short" => drop(r.i16()?),
            "long" => drop(r.i64()?),
            "float" => drop(r.take(4)?),
            "double" => drop(r.take(8)?),
            "char" => r.char()?,
            "boolean" | "byte" => drop(r.i8()?),
            "java.lang.String" => drop(r.string()?),
            _ => {
                if depth >= MAX_VALUE_DEPTH {
                    return Err(format!(
                        "class {} nests deeper than {MAX_VALUE_DEPTH}",
                        desc.name
                    ));
                }
                for field in &desc.fields {
                    if field.array {
                        // jfrs makes room for the declared count at once.
                        let count = r.count("array elements")?;
                        self.spend(count as u64)?;
                        for _ in 0..count {
                            self.single(r, field, depth)?;
                        }
                    } else {
                        self.single(r, field, depth)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn single(&mut self, r: &mut Reader<'_>, field: &Field, depth: usize) -> Check<()> {
        if field.constant_pool {
            self.spend(1)?;
            r.i64().map(drop)
        } else {
            self.value(r, field.class, depth + 1)
        }
    }
}

/// Reads a chunk's bytes as jfrs's `ByteStream` does: big-endian, or
/// jfrs's varints when the chunk's features say its integers are
/// compressed.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    compressed: bool,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Check<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.data.len())
            .ok_or_else(|| format!("truncated at byte {}", self.pos))?;
        let bytes = &self.data[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    fn i8(&mut self) -> Check<i8> {
        Ok(self.take(1)?[0] as i8)
    }

    fn raw<const N: usize>(&mut self) -> Check<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    fn varint(&mut self) -> Check<i64> {
        let mut value = 0i64;
        for i in 0..8 {
            let b = i64::from(self.i8()?);
            value = value.wrapping_add((b & 0x7f) << (7 * i));
            if b >= 0 {
                return Ok(value);
            }
        }
        Ok(value.wrapping_add((i64::from(self.i8()?) & 0xff) << 56))
    }

    fn i16(&mut self) -> Check<i16> {
        if self.compressed {
            Ok(self.varint()? as i16)
        } else {
            Ok(i16::from_be_bytes(self.raw()?))
        }
    }

    fn i32(&mut self) -> Check<i32> {
        if self.compressed {
            Ok(self.varint()? as i32)
        } else {
            Ok(i32::from_be_bytes(self.raw()?))
        }
    }

    fn i64(&mut self) -> Check<i64> {
        if self.compressed {
            self.varint()
        } else {
            Ok(i64::from_be_bytes(self.raw()?))
        }
    }

    fn char(&mut self) -> Check<()> {
        if self.compressed {
            self.varint().map(drop)
        } else {
            self.take(2).map(drop)
        }
    }

    /// A declared count: never negative, never more than the bytes left.
    fn count(&mut self, what: &str) -> Check<usize> {
        let at = self.pos;
        let count = self.i32()?;
        usize::try_from(count)
            .ok()
            .filter(|&n| n <= self.left())
            .ok_or_else(|| {
                format!(
                    "{count} {what} declared at byte {at}, with {} bytes left",
                    self.left()
                )
            })
    }

    /// A string as jfrs reads it; its text when it has one.
    fn string(&mut self) -> Check<Option<Cow<'a, str>>> {
        let at = self.pos;
        match self.i8()? {
            0 => Ok(None),
            1 => Ok(Some(Cow::Borrowed(""))),
            2 => self.i64().map(|_| None),
            3 => {
                let n = self.count("string bytes")?;
                let bytes = self.take(n)?;
                let text = std::str::from_utf8(bytes)
                    .map_err(|_| format!("the string at byte {at} is not UTF-8"))?;
                Ok(Some(Cow::Borrowed(text)))
            }
            4 => {
                let n = self.count("string characters")?;
                let mut text = String::new();
                for _ in 0..n {
                    let code = if self.compressed {
                        self.varint()? as u32
                    } else {
                        i16::from_be_bytes(self.raw()?) as u32
                    };
                    text.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                Ok(Some(Cow::Owned(text)))
            }
            5 => {
                let n = self.count("string bytes")?;
                Ok(Some(Cow::Owned(
                    self.take(n)?.iter().map(|&b| char::from(b)).collect(),
                )))
            }
            other => Err(format!("string encoding {other} at byte {at}")),
        }
    }
}
