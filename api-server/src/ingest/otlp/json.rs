//! OTLP/JSON, read into the same messages as protocol buffers.
//!
//! The `opentelemetry-proto` crate's serde support does not read what
//! OTLP/JSON producers send for profiles: its structs want every field
//! (producers leave out those at their default) and 64-bit integers as
//! numbers (the proto3 JSON mapping writes them as strings). So the
//! request is read here, by OTLP/JSON's rules: keys in lowerCamelCase
//! (others are unknown fields, which are ignored), absent fields at their
//! default, integers as numbers or strings, `traceId`, `spanId` and
//! `profileId` in hex (and, leniently, in base64 as protobuf's own JSON
//! mapping writes them: the lengths tell them apart), other bytes in
//! base64.

use std::marker::PhantomData;

use base64::Engine;
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1 as common;
use opentelemetry_proto::tonic::profiles::v1development as profiles;
use opentelemetry_proto::tonic::resource::v1::Resource;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// Reads an OTLP/JSON `ExportProfilesServiceRequest`: a JSON object
/// (serde would also read a struct from an array of its fields in order,
/// which no OTLP/JSON producer writes).
pub(super) fn decode(body: &[u8]) -> Result<ExportProfilesServiceRequest, String> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err("the request is not a JSON object".to_owned());
    }
    serde_json::from_slice::<Request>(body)
        .map(Into::into)
        .map_err(|e| e.to_string())
}

/// An integer as a JSON number or string.
#[derive(Debug, Default, Clone, Copy)]
struct Int<T>(T);

impl<'de, T: TryFrom<i128>> Deserialize<'de> for Int<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<T: TryFrom<i128>> V<T> {
            fn fit<E: de::Error>(v: i128) -> Result<Int<T>, E> {
                T::try_from(v)
                    .map(Int)
                    .map_err(|_| E::custom(format!("integer {v} out of range")))
            }
        }
        impl<T: TryFrom<i128>> Visitor<'_> for V<T> {
            type Value = Int<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an integer, as a number or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int<T>, E> {
                Self::fit(v.into())
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int<T>, E> {
                Self::fit(v.into())
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Int<T>, E> {
                if v.fract() == 0.0 && v.abs() < 1e19 {
                    Self::fit(v as i128)
                } else {
                    Err(E::custom(format!("{v} is not an integer")))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Int<T>, E> {
                let parsed: i128 = v
                    .parse()
                    .map_err(|_| E::custom(format!("{v:?} is not an integer")))?;
                Self::fit(parsed)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A double as a JSON number or one of proto3's strings for it.
#[derive(Debug, Default, Clone, Copy)]
struct Double(f64);

impl<'de> Deserialize<'de> for Double {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(v) => Ok(Double(v)),
            Raw::Text(t) => match t.as_str() {
                "NaN" => Ok(Double(f64::NAN)),
                "Infinity" => Ok(Double(f64::INFINITY)),
                "-Infinity" => Ok(Double(f64::NEG_INFINITY)),
                other => other
                    .parse()
                    .map(Double)
                    .map_err(|_| de::Error::custom(format!("{other:?} is not a number"))),
            },
        }
    }
}

/// Bytes in base64.
#[derive(Debug, Default, Clone)]
struct Base64(Vec<u8>);

impl<'de> Deserialize<'de> for Base64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        base64_bytes(&text).map(Base64).map_err(de::Error::custom)
    }
}

fn base64_bytes(text: &str) -> Result<Vec<u8>, String> {
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::URL_SAFE,
    ];
    engines
        .iter()
        .find_map(|engine| engine.decode(text).ok())
        .ok_or_else(|| format!("{text:?} is not base64"))
}

/// A trace, span or profile id: hex as OTLP/JSON says, or base64.
#[derive(Debug, Default, Clone)]
struct Id(Vec<u8>);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        id_bytes(&text).map(Id).map_err(de::Error::custom)
    }
}

fn id_bytes(text: &str) -> Result<Vec<u8>, String> {
    // 16 or 8 bytes: 32 or 16 hex digits, 24 or 12 base64 characters.
    if text.len().is_multiple_of(2) && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|e| e.to_string()))
            .collect();
    }
    base64_bytes(text).map_err(|_| format!("{text:?} is not a hex (or base64) id"))
}

fn ints<T: Copy>(values: Vec<Int<T>>) -> Vec<T> {
    values.into_iter().map(|v| v.0).collect()
}

fn all<A, B: From<A>>(items: Vec<A>) -> Vec<B> {
    items.into_iter().map(B::from).collect()
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Request {
    resource_profiles: Vec<ResourceProfiles>,
    dictionary: Option<Dictionary>,
}

impl From<Request> for ExportProfilesServiceRequest {
    fn from(r: Request) -> Self {
        ExportProfilesServiceRequest {
            resource_profiles: all(r.resource_profiles),
            dictionary: r.dictionary.map(Into::into),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ResourceProfiles {
    resource: Option<ResourceJson>,
    scope_profiles: Vec<ScopeProfiles>,
    schema_url: String,
}

impl From<ResourceProfiles> for profiles::ResourceProfiles {
    fn from(r: ResourceProfiles) -> Self {
        profiles::ResourceProfiles {
            resource: r.resource.map(|r| Resource {
                attributes: all(r.attributes),
                dropped_attributes_count: r.dropped_attributes_count.0,
                entity_refs: Vec::new(),
            }),
            scope_profiles: all(r.scope_profiles),
            schema_url: r.schema_url,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ResourceJson {
    attributes: Vec<KeyValue>,
    dropped_attributes_count: Int<u32>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ScopeProfiles {
    scope: Option<Scope>,
    profiles: Vec<Profile>,
    schema_url: String,
}

impl From<ScopeProfiles> for profiles::ScopeProfiles {
    fn from(s: ScopeProfiles) -> Self {
        profiles::ScopeProfiles {
            scope: s.scope.map(|s| common::InstrumentationScope {
                name: s.name,
                version: s.version,
                attributes: all(s.attributes),
                dropped_attributes_count: s.dropped_attributes_count.0,
            }),
            profiles: all(s.profiles),
            schema_url: s.schema_url,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Scope {
    name: String,
    version: String,
    attributes: Vec<KeyValue>,
    dropped_attributes_count: Int<u32>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Profile {
    sample_type: Option<ValueType>,
    samples: Vec<Sample>,
    time_unix_nano: Int<u64>,
    duration_nano: Int<u64>,
    period_type: Option<ValueType>,
    period: Int<i64>,
    profile_id: Id,
    dropped_attributes_count: Int<u32>,
    original_payload_format: String,
    original_payload: Base64,
    attribute_indices: Vec<Int<i32>>,
}

impl From<Profile> for profiles::Profile {
    fn from(p: Profile) -> Self {
        profiles::Profile {
            sample_type: p.sample_type.map(Into::into),
            samples: all(p.samples),
            time_unix_nano: p.time_unix_nano.0,
            duration_nano: p.duration_nano.0,
            period_type: p.period_type.map(Into::into),
            period: p.period.0,
            profile_id: p.profile_id.0,
            dropped_attributes_count: p.dropped_attributes_count.0,
            original_payload_format: p.original_payload_format,
            original_payload: p.original_payload.0,
            attribute_indices: ints(p.attribute_indices),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ValueType {
    type_strindex: Int<i32>,
    unit_strindex: Int<i32>,
}

impl From<ValueType> for profiles::ValueType {
    fn from(v: ValueType) -> Self {
        profiles::ValueType {
            type_strindex: v.type_strindex.0,
            unit_strindex: v.unit_strindex.0,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Sample {
    stack_index: Int<i32>,
    attribute_indices: Vec<Int<i32>>,
    link_index: Int<i32>,
    values: Vec<Int<i64>>,
    timestamps_unix_nano: Vec<Int<u64>>,
}

impl From<Sample> for profiles::Sample {
    fn from(s: Sample) -> Self {
        profiles::Sample {
            stack_index: s.stack_index.0,
            attribute_indices: ints(s.attribute_indices),
            link_index: s.link_index.0,
            values: ints(s.values),
            timestamps_unix_nano: ints(s.timestamps_unix_nano),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Dictionary {
    mapping_table: Vec<Mapping>,
    location_table: Vec<Location>,
    function_table: Vec<Function>,
    link_table: Vec<Link>,
    string_table: Vec<String>,
    attribute_table: Vec<KeyValueAndUnit>,
    stack_table: Vec<Stack>,
}

impl From<Dictionary> for profiles::ProfilesDictionary {
    fn from(d: Dictionary) -> Self {
        profiles::ProfilesDictionary {
            mapping_table: all(d.mapping_table),
            location_table: all(d.location_table),
            function_table: all(d.function_table),
            link_table: all(d.link_table),
            string_table: d.string_table,
            attribute_table: all(d.attribute_table),
            stack_table: all(d.stack_table),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Mapping {
    memory_start: Int<u64>,
    memory_limit: Int<u64>,
    file_offset: Int<u64>,
    filename_strindex: Int<i32>,
    attribute_indices: Vec<Int<i32>>,
}

impl From<Mapping> for profiles::Mapping {
    fn from(m: Mapping) -> Self {
        profiles::Mapping {
            memory_start: m.memory_start.0,
            memory_limit: m.memory_limit.0,
            file_offset: m.file_offset.0,
            filename_strindex: m.filename_strindex.0,
            attribute_indices: ints(m.attribute_indices),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Location {
    mapping_index: Int<i32>,
    address: Int<u64>,
    lines: Vec<Line>,
    attribute_indices: Vec<Int<i32>>,
}

impl From<Location> for profiles::Location {
    fn from(l: Location) -> Self {
        profiles::Location {
            mapping_index: l.mapping_index.0,
            address: l.address.0,
            lines: l
                .lines
                .into_iter()
                .map(|line| profiles::Line {
                    function_index: line.function_index.0,
                    line: line.line.0,
                    column: line.column.0,
                })
                .collect(),
            attribute_indices: ints(l.attribute_indices),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Line {
    function_index: Int<i32>,
    line: Int<i64>,
    column: Int<i64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Function {
    name_strindex: Int<i32>,
    system_name_strindex: Int<i32>,
    filename_strindex: Int<i32>,
    start_line: Int<i64>,
}

impl From<Function> for profiles::Function {
    fn from(f: Function) -> Self {
        profiles::Function {
            name_strindex: f.name_strindex.0,
            system_name_strindex: f.system_name_strindex.0,
            filename_strindex: f.filename_strindex.0,
            start_line: f.start_line.0,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Link {
    trace_id: Id,
    span_id: Id,
}

impl From<Link> for profiles::Link {
    fn from(l: Link) -> Self {
        profiles::Link {
            trace_id: l.trace_id.0,
            span_id: l.span_id.0,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct KeyValueAndUnit {
    key_strindex: Int<i32>,
    value: Option<AnyValue>,
    unit_strindex: Int<i32>,
}

impl From<KeyValueAndUnit> for profiles::KeyValueAndUnit {
    fn from(a: KeyValueAndUnit) -> Self {
        profiles::KeyValueAndUnit {
            key_strindex: a.key_strindex.0,
            value: a.value.map(Into::into),
            unit_strindex: a.unit_strindex.0,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Stack {
    location_indices: Vec<Int<i32>>,
}

impl From<Stack> for profiles::Stack {
    fn from(s: Stack) -> Self {
        profiles::Stack {
            location_indices: ints(s.location_indices),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct KeyValue {
    key: String,
    value: Option<AnyValue>,
    key_strindex: Int<i32>,
}

impl From<KeyValue> for common::KeyValue {
    fn from(kv: KeyValue) -> Self {
        common::KeyValue {
            key: kv.key,
            value: kv.value.map(Into::into),
            key_strindex: kv.key_strindex.0,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct AnyValue {
    string_value: Option<String>,
    bool_value: Option<bool>,
    int_value: Option<Int<i64>>,
    double_value: Option<Double>,
    array_value: Option<Values<AnyValue>>,
    kvlist_value: Option<Values<KeyValue>>,
    bytes_value: Option<Base64>,
    string_value_strindex: Option<Int<i32>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Values<T> {
    values: Vec<T>,
}

impl<T> Default for Values<T> {
    fn default() -> Self {
        Values { values: Vec::new() }
    }
}

impl From<AnyValue> for common::AnyValue {
    fn from(v: AnyValue) -> Self {
        use common::any_value::Value;
        let value = if let Some(s) = v.string_value {
            Some(Value::StringValue(s))
        } else if let Some(b) = v.bool_value {
            Some(Value::BoolValue(b))
        } else if let Some(i) = v.int_value {
            Some(Value::IntValue(i.0))
        } else if let Some(d) = v.double_value {
            Some(Value::DoubleValue(d.0))
        } else if let Some(a) = v.array_value {
            Some(Value::ArrayValue(common::ArrayValue {
                values: all(a.values),
            }))
        } else if let Some(kv) = v.kvlist_value {
            Some(Value::KvlistValue(common::KeyValueList {
                values: all(kv.values),
            }))
        } else if let Some(b) = v.bytes_value {
            Some(Value::BytesValue(b.0))
        } else {
            v.string_value_strindex
                .map(|i| Value::StringValueStrindex(i.0))
        };
        common::AnyValue { value }
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
