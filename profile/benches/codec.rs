//! Decoding the blocks a 30-day history read decodes (`cargo bench -p
//! odp-profile --bench codec`): a service day (10 hosts, each a window of
//! ~20,000 stacks from a shared pool of ~12 frames over 4,000 functions)
//! and an hour rollup (10 hosts, ~12,500 stacks each), as
//! `tests/benches/reads/history.rs` stores them. Per block and codec: its
//! size, the time to encode it, to decompress its body alone and to
//! decode it whole (decompress, then the body's columns → profile).

use std::io::Read as _;
use std::time::{Duration, Instant};

use odp_core::{EventKind, Frame};
use odp_profile::{Level, Profile, ProfileBuilder, Window};

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

const POOL: usize = 20_000;
const FUNCTIONS: usize = 4_000;
const HOSTS: usize = 10;

/// `HOSTS` windows of `samples` samples each drawn from the pool, three
/// in four from its hottest twentieth.
fn history_block(samples: usize, seed: u64) -> Profile {
    let mut rng = Rng(seed);
    let mut b = ProfileBuilder::default();
    let functions: Vec<u32> = (0..FUNCTIONS)
        .map(|i| {
            b.frame(&Frame::function(format!(
                "svc::handler{:03}::step_{i:05}",
                i % 997
            )))
        })
        .collect();
    let pool: Vec<Vec<u32>> = (0..POOL)
        .map(|_| {
            (0..8 + rng.below(9))
                .map(|depth| functions[rng.below((8usize << depth).min(FUNCTIONS))])
                .collect()
        })
        .collect();
    for host in 0..HOSTS {
        let w = b.window(Window {
            profile_id: uuid::Uuid::from_u128(host as u128 + 1),
            host: format!("h-{host:03}"),
            agent_id: format!("agent-{host:03}"),
            sequence: 0,
            start_ms: 1_764_000_000_000,
            end_ms: 1_764_000_000_000 + 3_600_000,
            event: EventKind::CpuClock,
            period: 1_000_000_000 / 19,
            frequency_hz: 19,
        });
        b.thread(w, 1, "worker");
        let mut counts = vec![0u64; POOL];
        for _ in 0..samples {
            let index = if rng.below(4) > 0 {
                rng.below(POOL / 20)
            } else {
                rng.below(POOL)
            };
            counts[index] += 1;
        }
        for (stack, &count) in pool.iter().zip(&counts) {
            if count > 0 {
                b.samples(w, 1, stack, count);
            }
        }
    }
    b.build()
}

fn best(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .min()
        .expect("ran")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn measure(what: &str, profile: &Profile) {
    println!(
        "{what}: {} windows, {} samples, {} tree nodes",
        profile.windows.len(),
        profile.samples.len(),
        profile.tree.len()
    );
    let body_length =
        u32::from_le_bytes(profile.encode(Level::Quick)[5..9].try_into().unwrap()) as usize;
    println!("  body {:.2} MB", body_length as f64 / 1e6);
    for (name, level) in [("deflate 6 (v1)", Level::Small), ("lz4 (v2)", Level::Quick)] {
        let block = profile.encode(level);
        let encode = best(3, || drop(profile.encode(level)));
        let decode = best(5, || drop(Profile::decode(&block).unwrap()));
        let decompress = best(5, || match level {
            Level::Quick => drop(lz4_flex::block::decompress(&block[9..], body_length).unwrap()),
            _ => {
                let mut body = Vec::new();
                flate2::read::DeflateDecoder::new(&block[5..])
                    .read_to_end(&mut body)
                    .unwrap();
            }
        });
        println!(
            "  {name:<15} {:>6.3} MB  encode {:>5.1} ms  decompress {:>4.1} ms  decode {:>5.1} ms (body → profile {:.1} ms)",
            block.len() as f64 / 1e6,
            ms(encode),
            ms(decompress),
            ms(decode),
            ms(decode.saturating_sub(decompress)),
        );
    }
}

fn main() {
    measure("a service day", &history_block(19 * 86_400, 1));
    measure("an hour rollup", &history_block(19 * 3_600, 2));
}
