//! How fast a request is decoded and mapped, against decoding it with
//! `prost` alone: the part of ingest this module owns, apart from storing
//! (`tests/benches/otlp_ingest.rs` times the whole of it). By hand, in
//! release: `cargo test --release -p odp-api-server otlp_map_speed --
//! --ignored --nocapture`.

use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::profiles::v1development::Sample;
use prost::Message;

use super::map::map;
use super::tests::{resource, Builder, T0};

/// A request shaped like the eBPF profiler's: 4 containers' profiles of
/// 10,000 samples on 2,000 stacks of 10 to 30 frames over 5,000
/// functions, 8 threads, a timestamp or a few per sample.
fn request() -> Vec<u8> {
    let mut rng = 0x5eed_u64;
    let mut next = move |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut b = Builder::new();
    let names: Vec<String> = (0..5_000)
        .map(|f| format!("shop::handler::step_{f:05}"))
        .collect();
    let stacks: Vec<i32> = (0..2_000)
        .map(|_| {
            let frames: Vec<&str> = (0..10 + next(21))
                .map(|_| names[next(5_000)].as_str())
                .collect();
            b.stack(&frames)
        })
        .collect();
    let threads: Vec<[i32; 2]> = (0..8)
        .map(|t| {
            [
                b.attribute("thread.name", &format!("worker-{t}")),
                b.attribute("thread.id", &(1000 + t).to_string()),
            ]
        })
        .collect();
    let mut resources = Vec::new();
    for p in 0..4 {
        let samples = (0..10_000)
            .map(|_| Sample {
                stack_index: stacks[next(stacks.len())],
                attribute_indices: threads[next(8)].to_vec(),
                timestamps_unix_nano: (0..1 + next(3))
                    .map(|_| T0 + next(1 << 30) as u64)
                    .collect(),
                ..Sample::default()
            })
            .collect();
        let service = format!("shop-{p}");
        let profile = b.cpu_profile(samples);
        resources.push(resource(
            &[("service.name", service.as_str())],
            vec![profile],
        ));
    }
    b.request(resources).encode_to_vec()
}

fn best(mut run: impl FnMut()) -> Duration {
    (0..5)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .min()
        .unwrap()
}

#[test]
#[ignore = "a measurement: run by hand in release"]
fn otlp_map_speed() {
    let bytes = request();
    let decode = best(|| {
        std::hint::black_box(ExportProfilesServiceRequest::decode(bytes.as_slice()).unwrap());
    });
    let mapped = best(|| {
        let request = ExportProfilesServiceRequest::decode(bytes.as_slice()).unwrap();
        let mapped = map(&request).unwrap();
        assert!(mapped.profiles.iter().all(Result::is_ok));
        std::hint::black_box(mapped);
    });
    let rate = |d: Duration| bytes.len() as f64 / 1e6 / d.as_secs_f64();
    println!(
        "{:.1} MB: prost decode {:.1} ms ({:.0} MB/s); decode and map {:.1} ms ({:.0} MB/s): {:.2}x",
        bytes.len() as f64 / 1e6,
        decode.as_secs_f64() * 1e3,
        rate(decode),
        mapped.as_secs_f64() * 1e3,
        rate(mapped),
        rate(mapped) / rate(decode)
    );
}
