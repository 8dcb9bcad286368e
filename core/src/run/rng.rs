//! The seeded generator behind host selection: SplitMix64.
//!
//! A run records its seed so that the same seed picks the same hosts
//! again, tomorrow and on another build. That only holds if the generator
//! never changes, so it is written here (a dozen lines, public domain
//! constants from Steele, Lea and Flood, "Fast splittable pseudorandom
//! number generators", 2014) rather than taken from a crate whose streams
//! may change between versions. Its statistical quality (it passes
//! BigCrush) is far more than choosing hosts needs, and the agent, which
//! links this crate, gains no dependency. The known-answer test below pins
//! the stream: changing the algorithm breaks every recorded seed.

/// SplitMix64: a 64-bit state advanced by a Weyl sequence and mixed.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose stream is fixed by `seed`; every seed, 0 included,
    /// gives a full-quality stream.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` without modulo bias (Lemire's multiply and
    /// reject). `bound` must be at least 1.
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "below(0) has no value to return");
        // Values of the low half under this threshold would make some
        // results one draw more likely than others.
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let wide = u128::from(self.next_u64()) * u128::from(bound);
            if (wide as u64) >= threshold {
                return (wide >> 64) as u64;
            }
        }
    }

    /// Uniform in `[0, 1)`, with the 53 bits a double holds.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_stream() {
        // The reference implementation's first outputs from state 0.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(rng.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn below_is_in_range_and_uniform_enough() {
        let mut rng = SplitMix64::new(7);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[rng.below(6) as usize] += 1;
        }
        // Each face expects 10,000 with a standard deviation near 91.
        for (face, &count) in counts.iter().enumerate() {
            assert!((9_600..=10_400).contains(&count), "face {face}: {count}");
        }
        assert_eq!(SplitMix64::new(1).below(1), 0);
    }

    #[test]
    fn next_f64_is_in_the_unit_interval() {
        let mut rng = SplitMix64::new(3);
        let mean = (0..10_000).map(|_| rng.next_f64()).inspect(|x| {
            assert!((0.0..1.0).contains(x));
        });
        let mean = mean.sum::<f64>() / 10_000.0;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
    }
}
