//! Stacks as real call trees give them, drawn deterministically: a pool of
//! deep stacks sharing prefixes, and a generator that draws from it with a
//! skew, as a few stacks hold most samples.

use odp_core::Frame;

/// A small deterministic generator (xorshift64*), so every run measures
/// the same profile.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Skewed towards small values, as a few stacks hold most samples.
    pub(crate) fn skewed(&mut self, n: usize) -> usize {
        let a = self.below(n);
        let b = self.below(a + 1);
        self.below(b + 1)
    }
}

/// `distinct` stacks of 12 to 40 frames named from `vocabulary` functions,
/// sharing prefixes, as real call trees do.
pub(crate) fn stacks(rng: &mut Rng, distinct: usize, vocabulary: usize) -> Vec<Vec<Frame>> {
    let names: Vec<String> = (0..vocabulary)
        .map(|i| {
            format!(
                "com.example.service.module{}.Class{}.method{i}",
                i % 40,
                i % 300
            )
        })
        .collect();
    (0..distinct)
        .map(|_| {
            let depth = 12 + rng.below(29);
            (0..depth)
                .map(|level| {
                    // Upper levels come from a few frames, leaves from all.
                    let spread = (vocabulary * (level + 1) / 40).clamp(4, vocabulary);
                    Frame::function(names[rng.skewed(spread)].clone())
                })
                .collect()
        })
        .collect()
}
