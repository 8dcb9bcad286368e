//! OTLP profiles ingest, timed from the client's side: ~10 MB of
//! `ExportProfilesServiceRequest`s shaped like the OpenTelemetry eBPF
//! profiler's (per request four containers' CPU profiles of 10,000
//! samples each, one timestamp or a few per sample, the thread as
//! attributes, stacks of 10 to 30 frames drawn from a pool of 2,000 over
//! 5,000 functions, some samples linked to traces) posted in protobuf
//! over HTTPS to the release `odp-api-server`, two requests in flight,
//! until every profile is stored in Postgres. Printed beside decoding the
//! same bytes with `prost` alone in the same run, and the ratio of the
//! two rates (goal: at least 0.5).
//!
//! Run by hand after `cargo build --release --bins`: `cargo bench -p
//! odp-tests --bench otlp_ingest`; `ODP_BENCH_IN_FLIGHT` sets the requests
//! in flight and `ODP_BENCH_LINKED` the percent of samples linked to
//! traces (each trace of a profile is stored as a profile of its own).
//! Also prints, from the server's log, where its time goes per request
//! (decoding and mapping, storing). Prints, asserts nothing about time.

use odp_tests::Rng;
use std::sync::Arc;
use std::time::{Duration, Instant};

use odp_devstack::{
    mint_scoped_token, Platform, PlatformOptions, Stack, StackEndpoints, StackOptions,
};
use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Line, Link, Location, Mapping, Profile, ProfilesDictionary,
    ResourceProfiles, Sample, ScopeProfiles, Stack as OtlpStack, ValueType,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

const REQUESTS: usize = 8;
const PROFILES_PER_REQUEST: usize = 4;
const SAMPLES_PER_PROFILE: usize = 10_000;
const FUNCTIONS: usize = 5_000;
const STACKS: usize = 2_000;
const THREADS: usize = 8;
const TRACES: usize = 4;
/// Percent of samples linked to a trace, `ODP_BENCH_LINKED` (default 5).
fn linked_percent() -> usize {
    std::env::var("ODP_BENCH_LINKED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}
const RUNS: usize = 3;
const IN_FLIGHT: usize = 2;
/// Requests in flight, `ODP_BENCH_IN_FLIGHT` (default 2).
fn in_flight() -> usize {
    std::env::var("ODP_BENCH_IN_FLIGHT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(IN_FLIGHT)
}
const SECOND: u64 = 1_000_000_000;

fn text(value: &str) -> Option<AnyValue> {
    Some(AnyValue {
        value: Some(any_value::Value::StringValue(value.to_owned())),
    })
}

/// The dictionary the requests share in shape: functions in a binary,
/// one location each, stacks over them, thread attributes and links.
fn dictionary(rng: &mut Rng) -> ProfilesDictionary {
    let mut d = ProfilesDictionary {
        string_table: vec![String::new()],
        mapping_table: vec![Mapping::default()],
        location_table: vec![Location::default()],
        function_table: vec![Function::default()],
        link_table: vec![Link::default()],
        attribute_table: vec![KeyValueAndUnit::default()],
        stack_table: vec![OtlpStack::default()],
    };
    let string = |d: &mut ProfilesDictionary, s: String| {
        d.string_table.push(s);
        d.string_table.len() as i32 - 1
    };
    for s in [
        "samples",
        "count",
        "cpu",
        "nanoseconds",
        "/usr/bin/shop-server",
    ] {
        string(&mut d, s.to_owned());
    }
    d.mapping_table.push(Mapping {
        memory_start: 0x40_0000,
        memory_limit: 0x80_0000,
        filename_strindex: 5,
        ..Mapping::default()
    });
    for f in 0..FUNCTIONS {
        let name_strindex = string(&mut d, format!("shop::handler{:03}::step_{f:05}", f % 997));
        d.function_table.push(Function {
            name_strindex,
            ..Function::default()
        });
        d.location_table.push(Location {
            mapping_index: 1,
            address: 0x40_0000 + 16 * f as u64,
            lines: vec![Line {
                function_index: f as i32 + 1,
                line: f as i64 % 400,
                column: 0,
            }],
            attribute_indices: Vec::new(),
        });
    }
    for _ in 0..STACKS {
        let depth = 10 + rng.below(21);
        let location_indices = (0..depth)
            .map(|level| 1 + rng.below((16usize << level).min(FUNCTIONS)) as i32)
            .collect();
        d.stack_table.push(OtlpStack { location_indices });
    }
    let (name, id) = (
        string(&mut d, "thread.name".into()),
        string(&mut d, "thread.id".into()),
    );
    for t in 0..THREADS {
        for (key_strindex, value) in [(name, format!("worker-{t}")), (id, (1000 + t).to_string())] {
            d.attribute_table.push(KeyValueAndUnit {
                key_strindex,
                value: text(&value),
                unit_strindex: 0,
            });
        }
    }
    for t in 0..TRACES {
        d.link_table.push(Link {
            trace_id: (0..16).map(|i| (i * 7 + t * 13 + 1) as u8).collect(),
            span_id: (0..8).map(|i| (i * 3 + t + 1) as u8).collect(),
        });
    }
    d
}

/// Request `r` of run `run`: its profiles' ids are the run's own, so
/// every run stores anew.
fn request(run: usize, r: usize, dictionary: &ProfilesDictionary, rng: &mut Rng) -> Vec<u8> {
    let start = 1_700_000_000 * SECOND + (r as u64) * 5 * SECOND;
    let resource_profiles = (0..PROFILES_PER_REQUEST)
        .map(|p| {
            let samples = (0..SAMPLES_PER_PROFILE)
                .map(|_| {
                    let thread = rng.below(THREADS) as i32;
                    let linked = rng.below(100) < linked_percent();
                    Sample {
                        stack_index: 1 + rng.below(STACKS) as i32,
                        attribute_indices: vec![1 + 2 * thread, 2 + 2 * thread],
                        link_index: if linked {
                            1 + rng.below(TRACES) as i32
                        } else {
                            0
                        },
                        values: Vec::new(),
                        timestamps_unix_nano: (0..1 + rng.below(3))
                            .map(|_| start + rng.below(5_000_000_000) as u64)
                            .collect(),
                    }
                })
                .collect();
            let mut profile_id = vec![0u8; 16];
            profile_id[..8].copy_from_slice(&(run as u64 + 1).to_le_bytes());
            profile_id[8..].copy_from_slice(&((r * PROFILES_PER_REQUEST + p) as u64).to_le_bytes());
            let profile = Profile {
                sample_type: Some(ValueType {
                    type_strindex: 1,
                    unit_strindex: 2,
                }),
                period_type: Some(ValueType {
                    type_strindex: 3,
                    unit_strindex: 4,
                }),
                period: 50_000_000,
                time_unix_nano: start,
                duration_nano: 5 * SECOND,
                profile_id,
                samples,
                ..Profile::default()
            };
            let attributes = [
                ("service.name", format!("bench-shop-{p}")),
                ("host.name", "bench-node".to_owned()),
                ("k8s.pod.name", format!("shop-{p}-7d9")),
                ("container.id", format!("{p:064x}")),
            ];
            ResourceProfiles {
                resource: Some(Resource {
                    attributes: attributes
                        .into_iter()
                        .map(|(key, value)| KeyValue {
                            key: key.to_owned(),
                            value: text(&value),
                            key_strindex: 0,
                        })
                        .collect(),
                    ..Resource::default()
                }),
                scope_profiles: vec![ScopeProfiles {
                    profiles: vec![profile],
                    ..ScopeProfiles::default()
                }],
                schema_url: String::new(),
            }
        })
        .collect();
    ExportProfilesServiceRequest {
        resource_profiles,
        dictionary: Some(dictionary.clone()),
    }
    .encode_to_vec()
}

/// A log line without its ANSI colour codes.
fn without_colours(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

fn megabytes(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

/// The fastest of `RUNS` decodes of every request with prost alone.
fn decode_time(requests: &[Vec<u8>]) -> Duration {
    (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            for bytes in requests {
                let request = ExportProfilesServiceRequest::decode(bytes.as_slice()).unwrap();
                std::hint::black_box(&request);
            }
            started.elapsed()
        })
        .min()
        .unwrap()
}

/// Posts every request, `IN_FLIGHT` at a time; returns the time until
/// the last answer.
async fn ingest_time(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    requests: Vec<Vec<u8>>,
) -> Duration {
    let queue = Arc::new(tokio::sync::Mutex::new(requests));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..in_flight() {
        let (http, url, token, queue) = (
            http.clone(),
            url.to_owned(),
            token.to_owned(),
            queue.clone(),
        );
        workers.spawn(async move {
            loop {
                let Some(body) = queue.lock().await.pop() else {
                    return;
                };
                let reply = http
                    .post(&url)
                    .bearer_auth(&token)
                    .header("content-type", "application/x-protobuf")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(reply.status(), 200);
                let answer =
                    ExportProfilesServiceResponse::decode(reply.bytes().await.unwrap()).unwrap();
                let rejected = answer.partial_success.map_or(0, |p| p.rejected_profiles);
                assert_eq!(rejected, 0, "every profile stored");
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done.unwrap();
    }
    started.elapsed()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let stack = Stack::start(StackOptions::ephemeral())
        .await
        .expect("start the stack");
    let endpoints = StackEndpoints {
        kafka_bootstrap: stack.kafka_bootstrap().to_owned(),
        database_url: stack.database_url().to_owned(),
        topics: stack.topics().clone(),
    };
    let mut options = PlatformOptions::new(stack.state_dir(), "bench-host");
    options.with_agent = false;
    // Where the server's time goes (decoding and mapping, storing), from
    // its log.
    options.api_env.push((
        "RUST_LOG".into(),
        "info,odp_api_server::ingest::otlp=debug".into(),
    ));
    let platform = Platform::start(&endpoints, options)
        .await
        .expect("start the services");
    let token = mint_scoped_token(&platform.jwt_secret, "bench", "ingest", &["bench-*"])
        .expect("mint an ingest token");
    let http = platform.http();
    let url = format!("{}/v1development/profiles", platform.api_url);

    let mut rng = Rng(0x07e1_0000_5eed_0001);
    let dictionary = dictionary(&mut rng);
    let runs: Vec<Vec<Vec<u8>>> = (0..RUNS)
        .map(|run| {
            let mut rng = Rng(0x5eed_0000_0000_0001);
            (0..REQUESTS)
                .map(|r| request(run, r, &dictionary, &mut rng))
                .collect()
        })
        .collect();
    let bytes: usize = runs[0].iter().map(Vec::len).sum();
    let profiles = REQUESTS * PROFILES_PER_REQUEST;
    println!(
        "{REQUESTS} requests, {:.1} MB of protobuf: {profiles} OTLP profiles of \
         {SAMPLES_PER_PROFILE} samples ({:.0} KB of dictionary each request)",
        megabytes(bytes),
        dictionary.encoded_len() as f64 / 1e3
    );

    let decode = decode_time(&runs[0]);
    let decode_rate = megabytes(bytes) / decode.as_secs_f64();
    println!(
        "  prost decode alone:        {:>8.1} ms  {decode_rate:>8.1} MB/s  {:>8.0} profiles/s",
        decode.as_secs_f64() * 1e3,
        profiles as f64 / decode.as_secs_f64()
    );
    let mut times = Vec::new();
    for requests in runs {
        times.push(ingest_time(&http, &url, &token, requests).await);
    }
    times.sort();
    let best = times[0];
    let rate = megabytes(bytes) / best.as_secs_f64();
    println!(
        "  ingest over HTTPS into db: {:>8.1} ms  {rate:>8.1} MB/s  {:>8.0} profiles/s  \
         (best of {RUNS}; all: {})",
        best.as_secs_f64() * 1e3,
        profiles as f64 / best.as_secs_f64(),
        times
            .iter()
            .map(|t| format!("{:.0} ms", t.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  ratio ingest / prost decode: {:.2}x (goal >= 0.5x)",
        rate / decode_rate
    );
    let (mut decode_map, mut store) = (Vec::new(), Vec::new());
    for line in platform
        .api
        .log()
        .lines()
        .filter(|l| l.contains("otlp export"))
    {
        let line = without_colours(line);
        let field = |name: &str| -> Option<f64> {
            let rest = line.split(&format!("{name}=")).nth(1)?;
            rest.split(|c: char| c != '.' && !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        };
        decode_map.extend(field("decode_map_ms"));
        store.extend(field("store_ms"));
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    println!(
        "  server, per request (median of {}): decode and map {:.1} ms, store {:.1} ms",
        decode_map.len(),
        median(decode_map),
        median(store)
    );
    drop(platform);
    stack.stop().unwrap();
}
