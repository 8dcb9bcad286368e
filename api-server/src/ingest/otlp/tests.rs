//! The OTLP mapping on requests built as producers build them: what each
//! kind of sample, frame and attribute becomes, what is refused and with
//! which message, and that no input makes it panic.

use std::collections::HashMap;

use odp_core::model::EventKind;
use odp_core::snapshot::MAX_STACK_DEPTH;
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, Profile, ProfilesDictionary,
    ResourceProfiles, Sample, ScopeProfiles, Stack, ValueType,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::map::{map, Mapped, MAX_TRACE_PROFILES};
use super::Exported;
use crate::ingest::Incoming;

/// 2023-11-14T22:13:20Z.
pub(super) const T0: u64 = 1_700_000_000_000_000_000;
const SECOND: u64 = 1_000_000_000;

/// A dictionary filled as producers fill one: every table's entry 0 the
/// zero value, strings interned.
#[derive(Default)]
pub(super) struct Builder {
    dict: ProfilesDictionary,
    strings: HashMap<String, i32>,
    functions: HashMap<String, i32>,
}

impl Builder {
    pub(super) fn new() -> Self {
        let mut b = Builder::default();
        b.dict.string_table.push(String::new());
        b.dict.mapping_table.push(Mapping::default());
        b.dict.location_table.push(Location::default());
        b.dict.function_table.push(Function::default());
        b.dict.link_table.push(Link::default());
        b.dict.attribute_table.push(KeyValueAndUnit::default());
        b.dict.stack_table.push(Stack::default());
        b
    }

    pub(super) fn string(&mut self, s: &str) -> i32 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.dict.string_table.len() as i32;
        self.dict.string_table.push(s.to_owned());
        self.strings.insert(s.to_owned(), i);
        i
    }

    pub(super) fn function(&mut self, name: &str) -> i32 {
        if let Some(&i) = self.functions.get(name) {
            return i;
        }
        let name_strindex = self.string(name);
        let i = self.dict.function_table.len() as i32;
        self.dict.function_table.push(Function {
            name_strindex,
            ..Function::default()
        });
        self.functions.insert(name.to_owned(), i);
        i
    }

    /// A location of `functions`, innermost (inlined) first.
    pub(super) fn location(&mut self, functions: &[&str]) -> i32 {
        let lines = functions
            .iter()
            .map(|f| Line {
                function_index: self.function(f),
                ..Line::default()
            })
            .collect();
        self.push_location(Location {
            lines,
            ..Location::default()
        })
    }

    pub(super) fn push_location(&mut self, location: Location) -> i32 {
        self.dict.location_table.push(location);
        self.dict.location_table.len() as i32 - 1
    }

    /// A stack of one location per function, root first.
    pub(super) fn stack(&mut self, root_first: &[&str]) -> i32 {
        let leaf_first = root_first
            .iter()
            .rev()
            .map(|f| self.location(&[f]))
            .collect();
        self.push_stack(leaf_first)
    }

    pub(super) fn push_stack(&mut self, location_indices: Vec<i32>) -> i32 {
        self.dict.stack_table.push(Stack { location_indices });
        self.dict.stack_table.len() as i32 - 1
    }

    pub(super) fn attribute(&mut self, key: &str, value: &str) -> i32 {
        let key_strindex = self.string(key);
        self.dict.attribute_table.push(KeyValueAndUnit {
            key_strindex,
            value: Some(string_value(value)),
            unit_strindex: 0,
        });
        self.dict.attribute_table.len() as i32 - 1
    }

    pub(super) fn link(&mut self, trace: u8, span: u8) -> i32 {
        self.dict.link_table.push(Link {
            trace_id: vec![trace; 16],
            span_id: vec![span; 8],
        });
        self.dict.link_table.len() as i32 - 1
    }

    pub(super) fn value_type(&mut self, kind: &str, unit: &str) -> ValueType {
        ValueType {
            type_strindex: self.string(kind),
            unit_strindex: self.string(unit),
        }
    }

    /// A CPU profile as the eBPF profiler sends one: samples/count, a
    /// period of 10 ms in nanoseconds, ten seconds from [`T0`].
    pub(super) fn cpu_profile(&mut self, samples: Vec<Sample>) -> Profile {
        Profile {
            sample_type: Some(self.value_type("samples", "count")),
            period_type: Some(self.value_type("cpu", "nanoseconds")),
            period: 10_000_000,
            time_unix_nano: T0,
            duration_nano: 10 * SECOND,
            samples,
            ..Profile::default()
        }
    }

    pub(super) fn request(self, resources: Vec<ResourceProfiles>) -> ExportProfilesServiceRequest {
        ExportProfilesServiceRequest {
            resource_profiles: resources,
            dictionary: Some(self.dict),
        }
    }
}

fn string_value(value: &str) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::StringValue(value.to_owned())),
    }
}

pub(super) fn resource(attributes: &[(&str, &str)], profiles: Vec<Profile>) -> ResourceProfiles {
    ResourceProfiles {
        resource: Some(Resource {
            attributes: attributes
                .iter()
                .map(|(k, v)| KeyValue {
                    key: k.to_string(),
                    value: Some(string_value(v)),
                    key_strindex: 0,
                })
                .collect(),
            ..Resource::default()
        }),
        scope_profiles: vec![ScopeProfiles {
            profiles,
            ..ScopeProfiles::default()
        }],
        schema_url: String::new(),
    }
}

pub(super) fn sample(stack_index: i32, value: i64) -> Sample {
    Sample {
        stack_index,
        values: vec![value],
        ..Sample::default()
    }
}

pub(super) const CHECKOUT: &[(&str, &str)] =
    &[("service.name", "checkout"), ("host.name", "node-1")];

fn mapped(request: &ExportProfilesServiceRequest) -> Mapped {
    map(request).expect("a well-formed request")
}

/// The one profile the request's one OTLP profile makes.
fn only(request: &ExportProfilesServiceRequest) -> Incoming {
    let mut profiles = mapped(request).profiles;
    assert_eq!(profiles.len(), 1);
    let mut parts = profiles.remove(0).expect("kept");
    assert_eq!(parts.len(), 1, "{parts:?}");
    parts.remove(0)
}

/// Stack `i`'s frames as flame graphs name them, root first.
fn names(incoming: &Incoming, i: usize) -> Vec<String> {
    let parsed = &incoming.parsed;
    parsed.stacks[i]
        .frames
        .iter()
        .map(|&f| parsed.frames[f as usize].display_name())
        .collect()
}

/// Samples by folded stack (threads merged).
fn counts(incoming: &Incoming) -> Vec<(String, u64)> {
    let mut sums: std::collections::BTreeMap<String, u64> = Default::default();
    for (i, stack) in incoming.parsed.stacks.iter().enumerate() {
        *sums.entry(names(incoming, i).join(";")).or_default() += stack.count;
    }
    sums.into_iter().collect()
}

#[test]
fn a_cpu_profile_becomes_one_odp_profile_of_its_service() {
    let mut b = Builder::new();
    let hot = b.stack(&["main", "work", "hot"]);
    let warm = b.stack(&["main", "work", "warm"]);
    let profile = b.cpu_profile(vec![sample(hot, 3), sample(warm, 1), sample(hot, 2)]);
    let pid = [("process.pid", "4242"), ("k8s.pod.name", "checkout-7d9")];
    let attributes = [CHECKOUT, &pid].concat();
    let incoming = only(&b.request(vec![resource(&attributes, vec![profile])]));
    assert_eq!(incoming.service, "checkout");
    assert_eq!(incoming.host.as_deref(), Some("node-1"));
    assert_eq!(incoming.source, "otlp");
    assert_eq!(incoming.labels["process.pid"], "4242");
    assert_eq!(incoming.labels["k8s.pod.name"], "checkout-7d9");
    assert_eq!(
        counts(&incoming),
        [("main;work;hot".into(), 5), ("main;work;warm".into(), 1)]
    );
    let parsed = &incoming.parsed;
    assert_eq!(parsed.event, Some(EventKind::CpuClock));
    assert_eq!(parsed.period_nanos, Some(10_000_000));
    assert_eq!(parsed.time_nanos, Some(T0 as i64));
    assert_eq!(parsed.duration_nanos, Some(10 * SECOND as i64));
    assert!(incoming.identity.starts_with("otlp-digest/"));
}

#[test]
fn nanoseconds_count_periods_and_timestamps_count_one_each() {
    let mut b = Builder::new();
    let hot = b.stack(&["main", "hot"]);
    let mut nanos = b.cpu_profile(vec![sample(hot, 30_000_000), sample(hot, 20_000_000)]);
    nanos.sample_type = Some(b.value_type("cpu", "nanoseconds"));
    let stamped = b.cpu_profile(vec![Sample {
        stack_index: hot,
        timestamps_unix_nano: vec![T0 + 1, T0 + 2, T0 + SECOND],
        ..Sample::default()
    }]);
    let mut wall = b.cpu_profile(vec![sample(hot, 40_000_000)]);
    wall.sample_type = Some(b.value_type("wall", "nanoseconds"));
    let request = b.request(vec![resource(CHECKOUT, vec![nanos, stamped, wall])]);
    let profiles: Vec<Incoming> = mapped(&request)
        .profiles
        .into_iter()
        .flat_map(|p| p.expect("kept"))
        .collect();
    assert_eq!(counts(&profiles[0]), [("main;hot".into(), 5)]);
    assert_eq!(counts(&profiles[1]), [("main;hot".into(), 3)]);
    assert_eq!(counts(&profiles[2]), [("main;hot".into(), 4)]);
    assert_eq!(profiles[2].parsed.event, Some(EventKind::Wall));
}

#[test]
fn frames_are_named_like_pprofs_with_inlined_lines_outermost_first() {
    let mut b = Builder::new();
    let inlined = b.location(&["memcpy", "printf"]);
    let libc = b.string("/usr/lib/x86_64-linux-gnu/libc.so.6");
    b.dict.mapping_table.push(Mapping {
        filename_strindex: libc,
        ..Mapping::default()
    });
    let in_libc = b.push_location(Location {
        mapping_index: 1,
        address: 0x1234,
        ..Location::default()
    });
    let bare = b.push_location(Location {
        address: 0xbeef,
        ..Location::default()
    });
    let main = b.location(&["main"]);
    let stack = b.push_stack(vec![bare, in_libc, inlined, 0, main]);
    let profile = b.cpu_profile(vec![sample(stack, 1)]);
    let request = b.request(vec![resource(CHECKOUT, vec![profile])]);
    let incoming = only(&request);
    assert_eq!(
        names(&incoming, 0),
        [
            "main",
            "[unknown]",
            "printf",
            "memcpy",
            "[libc.so.6]",
            "0xbeef"
        ]
    );
    let libc = incoming
        .parsed
        .frames
        .iter()
        .find(|f| f.display_name() == "[libc.so.6]");
    assert_eq!(libc.unwrap().module, "/usr/lib/x86_64-linux-gnu/libc.so.6");
}

#[test]
fn a_malformed_dictionary_refuses_the_request() {
    let mut b = Builder::new();
    let stack = b.stack(&["main"]);
    let profile = b.cpu_profile(vec![sample(stack, 1)]);
    b.dict.function_table[0].start_line = 7;
    let e = map(&b.request(vec![resource(CHECKOUT, vec![profile])])).unwrap_err();
    assert!(
        e.to_string()
            .contains("function_table[0] is not the zero value"),
        "{e}"
    );
}

#[test]
fn a_bad_profile_is_refused_alone_with_a_message_naming_it() {
    type Spoil = fn(&mut Builder, &mut Profile);
    let cases: Vec<(&str, Spoil)> = vec![
        ("stack index 99 is out of range", |_, p| {
            p.samples[0].stack_index = 99
        }),
        ("function index 77 is out of range", |b, _| {
            let last = b.dict.location_table.len() - 1;
            b.dict.location_table[last].lines[0].function_index = 77
        }),
        ("name string index 500 is out of range", |b, _| {
            let last = b.dict.function_table.len() - 1;
            b.dict.function_table[last].name_strindex = 500
        }),
        ("link index 5 is out of range", |_, p| {
            p.samples[0].link_index = 5
        }),
        ("attribute index -1 is out of range", |_, p| {
            p.samples[0].attribute_indices = vec![-1]
        }),
        ("frames deep", |b, p| {
            let deep = vec![1; MAX_STACK_DEPTH + 1];
            p.samples[0].stack_index = b.push_stack(deep);
        }),
        ("several sample types", |_, p| {
            p.samples[0].values = vec![1, 2]
        }),
        ("2 values for 3 timestamps", |_, p| {
            p.samples[0].values = vec![1, 2];
            p.samples[0].timestamps_unix_nano = vec![T0, T0, T0];
        }),
        ("outside the profile's time range", |_, p| {
            p.samples[0].timestamps_unix_nano = vec![T0 + 11 * SECOND]
        }),
        ("neither values nor timestamps", |_, p| {
            p.samples[0].values.clear()
        }),
        ("value -3 is negative", |_, p| {
            p.samples[0].values = vec![-3]
        }),
        ("measures no ODP event", |b, p| {
            p.sample_type = Some(b.value_type("goroutine", "count"))
        }),
        ("no period in nanoseconds", |b, p| {
            p.sample_type = Some(b.value_type("cpu", "nanoseconds"));
            p.period_type = None;
        }),
        ("trace_id must be 16 bytes", |b, p| {
            p.samples[0].link_index = b.link(1, 2);
            b.dict.link_table[1].trace_id.truncate(4);
        }),
        ("profile_id must be 16 bytes", |_, p| {
            p.profile_id = vec![1; 4]
        }),
    ];
    for (needle, spoil) in cases {
        let mut b = Builder::new();
        let stack = b.stack(&["main", "hot"]);
        // The bad profile's stack is its own, so spoiling its entries
        // spoils no other profile's.
        let own = b.stack(&["main2", "hot2"]);
        let good = b.cpu_profile(vec![sample(stack, 2)]);
        let mut bad = b.cpu_profile(vec![sample(own, 2)]);
        spoil(&mut b, &mut bad);
        let request = b.request(vec![resource(CHECKOUT, vec![good, bad])]);
        let result = mapped(&request);
        let kept = result.profiles[0]
            .as_ref()
            .unwrap_or_else(|e| panic!("{needle}: {e}"));
        assert_eq!(counts(&kept[0]), [("main;hot".into(), 2)], "{needle}");
        let e = result.profiles[1].as_ref().expect_err(needle);
        assert!(e.contains(needle), "{needle}: {e}");
        assert!(
            e.starts_with("resource_profiles[0].scope_profiles[0].profiles[1]: "),
            "{e}"
        );
    }
}

#[test]
fn a_resource_without_a_service_refuses_its_profiles() {
    let mut b = Builder::new();
    let stack = b.stack(&["main"]);
    let profiles = vec![b.cpu_profile(vec![sample(stack, 1)]); 2];
    let kept = b.cpu_profile(vec![sample(stack, 1)]);
    let request = b.request(vec![
        resource(&[("host.name", "node-1")], profiles),
        resource(CHECKOUT, vec![kept]),
    ]);
    let result = mapped(&request).profiles;
    assert!(result[0].as_ref().unwrap_err().contains("no service.name"));
    assert!(result[1].is_err());
    assert!(result[2].is_ok());
}

#[test]
fn linked_samples_make_a_profile_per_trace() {
    let mut b = Builder::new();
    let stack = b.stack(&["main", "handle"]);
    let (a, a2, c) = (b.link(0xaa, 1), b.link(0xaa, 2), b.link(0xcc, 3));
    let linked = |link_index, value| Sample {
        link_index,
        ..sample(stack, value)
    };
    let profile = b.cpu_profile(vec![
        sample(stack, 1),
        linked(a, 2),
        linked(a2, 3),
        linked(c, 4),
        linked(c, 5),
    ]);
    let request = b.request(vec![resource(CHECKOUT, vec![profile])]);
    let parts = mapped(&request).profiles.remove(0).unwrap();
    let summary: Vec<(Option<&str>, Option<&str>, u64, &str)> = parts
        .iter()
        .map(|p| {
            (
                p.labels.get("trace_id").map(String::as_str),
                p.labels.get("span_id").map(String::as_str),
                p.parsed.stacks[0].count,
                p.identity.rsplit('/').next().unwrap(),
            )
        })
        .collect();
    let aa = "aa".repeat(16);
    let cc = "cc".repeat(16);
    let span_c = "03".repeat(8);
    assert_eq!(
        summary,
        [
            (None, None, 1, parts[0].identity.rsplit('/').next().unwrap()),
            (Some(aa.as_str()), None, 5, aa.as_str()),
            (Some(cc.as_str()), Some(span_c.as_str()), 9, cc.as_str()),
        ],
        "two spans of trace aa: no span label"
    );
}

#[test]
fn traces_past_the_bound_stay_in_the_unlinked_profile() {
    let mut b = Builder::new();
    let stack = b.stack(&["main"]);
    let samples = (0..=MAX_TRACE_PROFILES)
        .map(|i| Sample {
            link_index: b.link(i as u8 + 1, 1),
            ..sample(stack, 1)
        })
        .collect();
    let profile = b.cpu_profile(samples);
    let result = mapped(&b.request(vec![resource(CHECKOUT, vec![profile])]));
    let parts = result.profiles[0].as_ref().unwrap();
    assert_eq!(parts.len(), 1 + MAX_TRACE_PROFILES);
    assert_eq!(
        parts[0].parsed.stacks[0].count, 1,
        "the last trace's sample"
    );
    let total: u64 = parts.iter().map(|p| p.parsed.stacks[0].count).sum();
    assert_eq!(total, 1 + MAX_TRACE_PROFILES as u64);
    let warning = result.warnings.iter().find(|w| w.contains("1 more traces"));
    assert!(warning.is_some(), "{:?}", result.warnings);
}

#[test]
fn samples_keep_their_threads_and_attributes_they_share_are_labels() {
    let mut b = Builder::new();
    let stack = b.stack(&["main"]);
    let (a, a_id) = (
        b.attribute("thread.name", "worker-a"),
        b.attribute("thread.id", "11"),
    );
    let (b_name, b_id) = (
        b.attribute("thread.name", "worker-b"),
        b.attribute("thread.id", "12"),
    );
    let pid = b.attribute("process.pid", "4242");
    let (get, put) = (
        b.attribute("http.method", "GET"),
        b.attribute("http.method", "PUT"),
    );
    let with = |attribute_indices: Vec<i32>, value| Sample {
        attribute_indices,
        ..sample(stack, value)
    };
    let threaded = b.cpu_profile(vec![
        with(vec![a, a_id, pid, get], 1),
        with(vec![b_name, b_id, pid, put], 2),
        with(vec![a, a_id, pid, get], 3),
    ]);
    // A thread's name without its id is no thread: a label, when shared.
    let named = b.cpu_profile(vec![with(vec![a], 1), with(vec![a], 1)]);
    let result = mapped(&b.request(vec![resource(CHECKOUT, vec![threaded, named])]));
    let incoming = &result.profiles[0].as_ref().unwrap()[0];
    let parsed = &incoming.parsed;
    let threads: Vec<(u32, &str)> = parsed
        .threads
        .iter()
        .map(|t| (t.tid, t.name.as_str()))
        .collect();
    assert_eq!(threads, [(11, "worker-a"), (12, "worker-b")]);
    let mut by_thread: Vec<(u32, u64)> = parsed.stacks.iter().map(|s| (s.tid, s.count)).collect();
    by_thread.sort();
    assert_eq!(by_thread, [(11, 4), (12, 2)]);
    assert_eq!(
        incoming.labels.get("process.pid").map(String::as_str),
        Some("4242")
    );
    for key in ["thread.name", "thread.id", "http.method"] {
        assert!(
            !incoming.labels.contains_key(key),
            "{key}: {:?}",
            incoming.labels
        );
    }
    let warnings = format!("{:?}", result.warnings);
    assert!(
        warnings.contains("http.method") && warnings.contains("differ"),
        "{warnings}"
    );
    assert!(!warnings.contains("thread"), "{warnings}");
    let named = &result.profiles[1].as_ref().unwrap()[0];
    assert_eq!(named.labels["thread.name"], "worker-a");
    assert_eq!(named.parsed.stacks[0].tid, 0);
}

#[test]
fn retries_name_the_same_profiles_and_a_profile_id_names_its_own() {
    let build = |value| {
        let mut b = Builder::new();
        let stack = b.stack(&["main"]);
        let profile = b.cpu_profile(vec![sample(stack, value)]);
        b.request(vec![resource(CHECKOUT, vec![profile])])
    };
    assert_eq!(only(&build(1)).identity, only(&build(1)).identity);
    assert_ne!(only(&build(1)).identity, only(&build(2)).identity);
    let mut with_id = build(1);
    with_id.resource_profiles[0].scope_profiles[0].profiles[0].profile_id = (1..=16).collect();
    assert_eq!(
        only(&with_id).identity,
        "otlp/0102030405060708090a0b0c0d0e0f10"
    );
}

#[test]
fn partial_success_counts_refusals_and_lists_a_bounded_message() {
    assert_eq!(Exported::default().response().partial_success, None);
    let exported = Exported {
        rejected: 2,
        messages: (0..25).map(|i| format!("m{i}")).collect(),
    };
    let partial = exported.response().partial_success.unwrap();
    assert_eq!(partial.rejected_profiles, 2);
    assert!(partial.error_message.starts_with("m0; m1"));
    assert!(partial.error_message.ends_with("m19; and 5 more"));
}
