//! Measured durations as samples.
//!
//! Plugins of wait events (`off-cpu`, `lock`, and the off-CPU half of
//! `wall`) measure how long each wait lasted, where a CPU profile counts
//! samples of 1/F s. To read the same way (and merge with CPU samples in a
//! wall profile), a wait of `d` ns becomes `d / period` samples of the
//! profile's period: the whole periods, plus one more with the probability
//! of the remainder. That keeps every total unbiased, and counts a wait
//! shorter than a period with the chance a sampler ticking at F Hz would
//! have caught it, so the binomial error bounds the views print keep their
//! meaning.

/// Nanoseconds in a second.
const NANOS: u64 = 1_000_000_000;

/// Turns durations into samples of one period (see the module docs).
#[derive(Debug, Clone)]
pub struct DurationSampler {
    period_ns: u64,
    /// xorshift64* state: the rounding needs cheap uniform numbers, not
    /// unpredictable ones.
    state: u64,
}

impl DurationSampler {
    /// Samples of 1/`frequency_hz` s, with rounding seeded by `seed`.
    pub fn new(frequency_hz: u32, seed: u64) -> Self {
        DurationSampler {
            period_ns: period_ns(frequency_hz),
            // Zero is xorshift's one fixed point.
            state: seed | 1,
        }
    }

    /// Seeded from the clock and the process id, for live sessions.
    pub fn seeded(frequency_hz: u32) -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self::new(frequency_hz, now ^ u64::from(std::process::id()) << 32)
    }

    /// Nanoseconds one sample stands for: the window's period.
    pub fn period(&self) -> u64 {
        self.period_ns
    }

    pub fn set_frequency(&mut self, frequency_hz: u32) {
        self.period_ns = period_ns(frequency_hz);
    }

    /// The samples `nanos` of the event stand for.
    pub fn samples(&mut self, nanos: u64) -> u64 {
        let whole = nanos / self.period_ns;
        let rest = nanos % self.period_ns;
        whole + u64::from(rest > 0 && self.below(rest))
    }

    /// Whether a uniform draw in [0, period) falls below `rest`.
    fn below(&mut self, rest: u64) -> bool {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        let draw = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        // The high bits of the product are the good ones.
        ((u128::from(draw) * u128::from(self.period_ns)) >> 64) < u128::from(rest)
    }
}

fn period_ns(frequency_hz: u32) -> u64 {
    NANOS / u64::from(frequency_hz.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_periods_are_exact() {
        let mut sampler = DurationSampler::new(100, 7);
        assert_eq!(sampler.period(), 10_000_000);
        assert_eq!(sampler.samples(0), 0);
        assert_eq!(sampler.samples(30_000_000), 3);
    }

    #[test]
    fn short_waits_add_up_to_their_total_time() {
        // 100,000 waits of 0.37 periods: 37,000 samples expected, with a
        // binomial standard deviation of about 153.
        let mut sampler = DurationSampler::new(1000, 42);
        let total: u64 = (0..100_000).map(|_| sampler.samples(370_000)).sum();
        assert!((36_400..=37_600).contains(&total), "{total}");
        // Every wait counts 0 or 1 sample, never more.
        assert!((0..1000).all(|_| sampler.samples(999_999) <= 1));
    }

    #[test]
    fn a_frequency_change_changes_the_period() {
        let mut sampler = DurationSampler::new(99, 1);
        sampler.set_frequency(1000);
        assert_eq!(sampler.samples(5_000_000), 5);
    }
}
