//! OTLP/JSON as producers write it.

use super::*;

#[test]
fn otlp_json_reads_as_its_producers_write_it() {
    // As OTLP/JSON producers write it: 64-bit integers as strings,
    // defaults left out, hex ids, an unknown field and a snake_case
    // key (not OTLP/JSON, so unknown too).
    let body = br#"{
      "resourceProfiles": [{
        "resource": {"attributes": [
          {"key": "service.name", "value": {"stringValue": "checkout"}},
          {"key": "process.pid", "value": {"intValue": "4242"}}
        ]},
        "scopeProfiles": [{"profiles": [{
          "sampleType": {"typeStrindex": 1, "unitStrindex": 2},
          "timeUnixNano": "1700000000000000000",
          "durationNano": 10000000000,
          "period": "10000000",
          "profileId": "0102030405060708090a0b0c0d0e0f10",
          "samples": [{"stackIndex": 1, "values": ["3"], "linkIndex": "1"},
                      {"stackIndex": "1", "timestampsUnixNano": ["1700000000000000001"]}],
          "futureField": {"x": 1},
          "attribute_indices": [7]
        }]}]
      }],
      "dictionary": {
        "stringTable": ["", "samples", "count"],
        "linkTable": [{}, {"traceId": "5B8EFFF798038103D269B633813FC60C",
                           "spanId": "EEE19B7EC3C1B174"}],
        "attributeTable": [{}, {"keyStrindex": 1, "value": {"doubleValue": "NaN"}}]
      }
    }"#;
    let request = decode(body).unwrap();
    let resource = &request.resource_profiles[0];
    let attributes = &resource.resource.as_ref().unwrap().attributes;
    assert_eq!(
        attributes[1].value.as_ref().unwrap().value,
        Some(common::any_value::Value::IntValue(4242))
    );
    let profile = &resource.scope_profiles[0].profiles[0];
    assert_eq!(profile.time_unix_nano, 1_700_000_000_000_000_000);
    assert_eq!(profile.duration_nano, 10_000_000_000);
    assert_eq!(profile.period, 10_000_000);
    assert_eq!(profile.profile_id, (1..=16).collect::<Vec<u8>>());
    assert!(
        profile.attribute_indices.is_empty(),
        "snake_case is unknown"
    );
    assert_eq!(profile.samples[0].values, [3]);
    assert_eq!(profile.samples[0].link_index, 1);
    assert_eq!(
        profile.samples[1].timestamps_unix_nano,
        [1_700_000_000_000_000_001]
    );
    let dictionary = request.dictionary.unwrap();
    assert_eq!(dictionary.link_table[1].trace_id[0], 0x5b);
    assert_eq!(dictionary.link_table[1].span_id.len(), 8);
    assert_eq!(dictionary.link_table[0], profiles::Link::default());
}

#[test]
fn ids_in_base64_are_read_too_and_bad_input_is_an_error() {
    // What protobuf's own JSON mapping writes for 16 and 8 bytes.
    assert_eq!(
        id_bytes("AQIDBAUGBwgJCgsMDQ4PEA==").unwrap(),
        (1..=16).collect::<Vec<u8>>()
    );
    assert_eq!(
        id_bytes("AQIDBAUGBwg=").unwrap(),
        (1..=8).collect::<Vec<u8>>()
    );
    assert_eq!(
        id_bytes("0102030405060708").unwrap(),
        (1..=8).collect::<Vec<u8>>()
    );
    for bad in [
        &br#"{"resourceProfiles": 3}"#[..],
        br#"{"dictionary": {"stringTable": [1]}}"#,
        br#"{"resourceProfiles": [{"scopeProfiles": [{"profiles": [{"period": "ten"}]}]}]}"#,
        br#"{"resourceProfiles": [{"scopeProfiles": [{"profiles": [{"samples": [{"stackIndex": 4294967296}]}]}]}]}"#,
        br#"{"dictionary": {"linkTable": [{"traceId": "not an id!"}]}}"#,
        b"{",
    ] {
        assert!(decode(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
    assert_eq!(
        decode(b"{}").unwrap(),
        ExportProfilesServiceRequest::default()
    );
}

#[test]
fn only_a_json_object_is_a_request() {
    // serde reads a struct from an array of its fields too; OTLP/JSON is
    // an object, so `[]` is no (empty) request.
    for body in [&b"[]"[..], b" [[]]", b"null", b"\"x\"", b"0", b"true", b""] {
        assert!(decode(body).is_err(), "{}", String::from_utf8_lossy(body));
    }
    assert!(decode(b" {}").unwrap().resource_profiles.is_empty());
}
