//! Decoding the blocks a 30-day history read decodes (`cargo bench -p
//! odp-profile --bench codec`): a service day (10 hosts, each a window of
//! ~20,000 stacks from a shared pool of ~12 frames over 4,000 functions)
//! and an hour rollup (10 hosts, ~12,500 stacks each), as
//! `tests/benches/reads/history.rs` stores them. Per block and codec: its
//! size, the time to encode it, to decompress its body alone and to
//! decode it whole (decompress, then the body's columns → profile).

use std::io::Read as _;
use std::time::{Duration, Instant};

use odp_profile::{Level, Profile};

#[path = "common/history.rs"]
mod history;
use history::history_block;

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
