//! The blocks of a service's history as `tests/benches/reads/history.rs`
//! stores them: per block 10 hosts' windows of samples drawn from a shared
//! pool of ~20,000 stacks of ~12 frames over 4,000 functions.

use odp_core::{EventKind, Frame};
use odp_profile::{Profile, ProfileBuilder, Window};

#[path = "rng.rs"]
mod rng;
use rng::Rng;

const POOL: usize = 20_000;
const FUNCTIONS: usize = 4_000;
const HOSTS: usize = 10;

/// `HOSTS` windows of `samples` samples each drawn from the pool, three
/// in four from its hottest twentieth.
pub(crate) fn history_block(samples: usize, seed: u64) -> Profile {
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
