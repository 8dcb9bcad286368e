use proptest::prelude::*;

use super::*;
use crate::folded::to_folded;

fn ws(frames: &[&str], count: u64) -> WeightedStack {
    WeightedStack {
        frames: frames.iter().map(|s| s.to_string()).collect(),
        count,
    }
}

fn meta(event: &str, period_nanos: Option<i64>) -> PprofMeta {
    PprofMeta {
        event: Some(event.parse().unwrap()),
        period_nanos,
        duration_nanos: Some(3_000_000_000),
        time_nanos: Some(1_700_000_000_000_000_000),
    }
}

/// A Go-style CPU profile written by Google's protobuf runtime (see
/// `tests/fixtures/make_pprof_fixture.py`), not by this module.
const GO_CPU: &[u8] = include_bytes!("../tests/fixtures/go-cpu.pb.gz");

#[test]
fn decodes_a_profile_written_by_another_encoder() {
    let decoded = decode(GO_CPU, None).unwrap();
    assert_eq!(decoded.sample_types, vec!["samples", "cpu"]);
    assert_eq!(
        (decoded.sample_type.as_str(), decoded.unit.as_str()),
        ("samples", "count")
    );
    assert_eq!(decoded.period_nanos, Some(10_000_000));
    assert_eq!(decoded.duration_nanos, Some(5_000_000_000));
    assert_eq!(decoded.time_nanos, Some(1_700_000_000_000_000_000));
    // Inlined frames expand caller first; an unsymbolized location shows
    // its module; zero counts are dropped; equal stacks merge in folded.
    assert_eq!(
        to_folded(&decoded.stacks),
        "main.main;[checkout] 3\n\
         main.main;main.handle;main.encode 1\n\
         main.main;main.handle;main.encode;crypto/sha256.block 11\n\
         main.main;main.handle;main.encode;runtime.memmove 2\n"
    );

    let cpu = decode(GO_CPU, Some("cpu")).unwrap();
    assert_eq!(cpu.unit, "nanoseconds");
    let total: u64 = cpu.stacks.iter().map(|s| s.count).sum();
    assert_eq!(total, 17 * 10_000_000);
    assert_eq!(
        decode(GO_CPU, Some("alloc_space")),
        Err(PprofError::UnknownSampleType {
            wanted: "alloc_space".into(),
            available: vec!["samples".into(), "cpu".into()],
        })
    );
}

#[test]
fn round_trips_with_the_period_as_a_second_value() {
    let stacks = vec![
        ws(&["main", "work", "hot"], 6),
        ws(&["main", "work"], 3),
        ws(&["main", "cool"], 1),
        ws(&["ignored"], 0),
    ];
    let bytes = encode(&stacks, &meta("cpu-clock", Some(10_101_010)));
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip-compressed");
    let decoded = decode(&bytes, None).unwrap();
    assert_eq!(decoded.sample_types, vec!["cpu-clock", "cpu"]);
    assert_eq!(decoded.sample_type, "cpu-clock");
    assert_eq!(decoded.period_nanos, Some(10_101_010));
    assert_eq!(decoded.duration_nanos, Some(3_000_000_000));
    assert_eq!(decoded.stacks, stacks[..3].to_vec());
    let nanos = decode(&bytes, Some("cpu")).unwrap();
    assert_eq!(nanos.stacks[0].count, 6 * 10_101_010);
}

#[test]
fn encodes_the_layout_pprof_expects() {
    let profile = to_profile(
        &[ws(&["main", "leaf"], 2), ws(&["main"], 1)],
        &meta("cycles", None),
    );
    assert_eq!(profile.string_table[0], "", "string 0 must be empty");
    assert_eq!(profile.sample_type.len(), 1);
    assert!(profile.period_type.is_none());
    let name = |id: u64| {
        let f = &profile.function[id as usize - 1];
        assert_eq!(f.id, id);
        profile.string_table[f.name as usize].clone()
    };
    // Leaf first, and every location resolves to its function.
    let leaf_first: Vec<String> = profile.sample[0]
        .location_id
        .iter()
        .map(|&id| name(profile.location[id as usize - 1].line[0].function_id))
        .collect();
    assert_eq!(leaf_first, vec!["leaf", "main"]);
    assert_eq!(profile.sample[1].value, vec![1]);
    // A raw (not gzip-compressed) message decodes too.
    let raw = decode(&profile.encode_to_vec(), None).unwrap();
    assert_eq!(raw.stacks.len(), 2);
    assert_eq!(raw.period_nanos, None);
}

#[test]
fn the_default_sample_type_is_honoured() {
    let mut profile = to_profile(&[ws(&["a"], 2)], &meta("cpu-clock", Some(5)));
    profile.default_sample_type = profile.sample_type[1].r#type;
    assert_eq!(from_profile(&profile, None).unwrap().sample_type, "cpu");
}

fn good() -> Profile {
    to_profile(&[ws(&["main", "leaf"], 2)], &meta("cpu-clock", None))
}

#[test]
fn malformed_profiles_are_errors() {
    let check = |edit: &dyn Fn(&mut Profile), want: &dyn Fn(&PprofError) -> bool| {
        let mut profile = good();
        edit(&mut profile);
        let result = decode(&profile.encode_to_vec(), None);
        assert!(matches!(&result, Err(e) if want(e)), "{result:?}");
    };
    check(&|p| p.sample_type.clear(), &|e| {
        *e == PprofError::NoSampleTypes
    });
    check(&|p| p.sample_type[0].r#type = 99, &|e| {
        matches!(e, PprofError::StringOutOfRange { index: 99, .. })
    });
    check(&|p| p.function[0].name = -1, &|e| {
        matches!(e, PprofError::StringOutOfRange { index: -1, .. })
    });
    check(&|p| p.sample[0].location_id.push(77), &|e| {
        matches!(e, PprofError::UnknownLocation { id: 77, .. })
    });
    check(&|p| p.location[0].line[0].function_id = 55, &|e| {
        matches!(e, PprofError::UnknownFunction { id: 55, .. })
    });
    check(&|p| p.sample[0].value.push(1), &|e| {
        matches!(
            e,
            PprofError::ValueCount {
                got: 2,
                want: 1,
                ..
            }
        )
    });
    check(&|p| p.sample[0].value[0] = -3, &|e| {
        matches!(e, PprofError::NegativeValue { value: -3, .. })
    });
    check(&|p| p.default_sample_type = 1000, &|e| {
        matches!(e, PprofError::StringOutOfRange { .. })
    });
    check(
        &|p| p.sample[0].location_id = vec![1; MAX_STACK_DEPTH + 1],
        &|e| matches!(e, PprofError::StackTooDeep { .. }),
    );
    assert!(matches!(
        decode(b"certainly not a profile", None),
        Err(PprofError::Malformed(_))
    ));
    assert!(matches!(
        decode(&[0x1f, 0x8b, 8, 0, 1, 2, 3], None),
        Err(PprofError::Gzip(_))
    ));
    assert_eq!(decode(&[], None), Err(PprofError::NoSampleTypes));
}

#[test]
fn unsymbolized_locations_show_their_module_or_address() {
    let mut profile = good();
    profile
        .string_table
        .push("/lib/x86_64-linux-gnu/libc.so.6".into());
    profile.mapping.push(Mapping {
        id: 4,
        filename: profile.string_table.len() as i64 - 1,
        ..Mapping::default()
    });
    profile.location[0].line.clear();
    profile.location[0].mapping_id = 4;
    profile.location[1].line.clear();
    profile.location[1].address = 0xbeef;
    let decoded = from_profile(&profile, None).unwrap();
    let leaf = profile.sample[0].location_id[0];
    let expected = if leaf == 1 {
        ["0xbeef", "[libc.so.6]"]
    } else {
        ["[libc.so.6]", "0xbeef"]
    };
    assert_eq!(decoded.stacks[0].frames, expected);
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode(&bytes, None);
        let _ = decode(&bytes, Some("cpu"));
    }

    #[test]
    fn corrupted_profiles_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut bytes = good().encode_to_vec();
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        let _ = decode(&bytes, None);
    }

    #[test]
    fn encode_then_decode_keeps_every_sample(stacks in proptest::collection::vec(
        (proptest::collection::vec("[a-z]{1,4}", 1..6), 1u64..1000), 0..20)) {
        let stacks: Vec<WeightedStack> = stacks
            .into_iter()
            .map(|(frames, count)| WeightedStack { frames, count })
            .collect();
        let decoded = decode(&encode(&stacks, &meta("cpu-clock", Some(1000))), None).unwrap();
        prop_assert_eq!(to_folded(&decoded.stacks), to_folded(&stacks));
    }
}
