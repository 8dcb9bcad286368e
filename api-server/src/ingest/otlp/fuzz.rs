//! The decoders and the mapping never panic: on arbitrary bytes, on
//! valid requests with bytes changed or cut, and on valid requests with
//! arbitrary indices, values and timestamps.

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::profiles::v1development::Sample;
use proptest::prelude::*;
use prost::Message;

use super::json;
use super::map::map;
use super::tests::{resource, sample, Builder, CHECKOUT, T0};

/// A valid request of a few profiles, its indices then open to mutation.
fn valid_request() -> ExportProfilesServiceRequest {
    let mut b = Builder::new();
    let hot = b.stack(&["main", "work", "hot"]);
    let inlined = b.location(&["inner", "outer"]);
    let deep = b.push_stack(vec![inlined, 1, 2]);
    let link = b.link(7, 8);
    let name = b.attribute("thread.name", "main");
    let profile = b.cpu_profile(vec![
        sample(hot, 3),
        Sample {
            link_index: link,
            attribute_indices: vec![name],
            timestamps_unix_nano: vec![T0 + 5],
            ..sample(deep, 0)
        },
    ]);
    b.request(vec![resource(CHECKOUT, vec![profile.clone(), profile])])
}

/// Every index field of the request, to set to arbitrary values.
fn indices(request: &mut ExportProfilesServiceRequest) -> Vec<&mut i32> {
    let mut out = Vec::new();
    let dict = request.dictionary.as_mut().unwrap();
    for location in &mut dict.location_table {
        out.push(&mut location.mapping_index);
        out.extend(location.lines.iter_mut().map(|l| &mut l.function_index));
    }
    for function in &mut dict.function_table {
        out.push(&mut function.name_strindex);
    }
    for stack in &mut dict.stack_table {
        out.extend(stack.location_indices.iter_mut());
    }
    for attribute in &mut dict.attribute_table {
        out.push(&mut attribute.key_strindex);
    }
    for resource in &mut request.resource_profiles {
        for profile in &mut resource.scope_profiles[0].profiles {
            if let Some(t) = &mut profile.sample_type {
                out.push(&mut t.type_strindex);
            }
            for s in &mut profile.samples {
                out.push(&mut s.stack_index);
                out.push(&mut s.link_index);
                out.extend(s.attribute_indices.iter_mut());
            }
        }
    }
    out
}

fn no_panic(bytes: &[u8]) {
    if let Ok(request) = ExportProfilesServiceRequest::decode(bytes) {
        let _ = map(&request);
    }
    if let Ok(request) = json::decode(bytes) {
        let _ = map(&request);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        no_panic(&bytes);
    }

    #[test]
    fn mutated_requests_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = valid_request().encode_to_vec();
        for (at, byte) in flips {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        no_panic(&bytes);
        no_panic(&bytes[..cut.index(bytes.len())]);
    }

    #[test]
    fn arbitrary_indices_are_refused_not_panicked_on(
        changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<i32>()), 1..6),
        values in proptest::collection::vec(any::<i64>(), 0..4),
        timestamps in proptest::collection::vec(any::<u64>(), 0..4),
    ) {
        let mut request = valid_request();
        {
            let mut fields = indices(&mut request);
            for (at, value) in changes {
                let i = at.index(fields.len());
                *fields[i] = value;
            }
        }
        let profile = &mut request.resource_profiles[0].scope_profiles[0].profiles[1];
        profile.samples[0].values = values;
        profile.samples[0].timestamps_unix_nano = timestamps;
        let _ = map(&request);
    }
}
