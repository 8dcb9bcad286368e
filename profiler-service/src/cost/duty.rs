//! Duty cycling (the instant profiling idea): sample for `on` at the start
//! of every `period` and let the target run unobserved the rest of the
//! time, so the overhead is about on/period of continuous sampling.
//!
//! Pure: the caller passes the monotonic clock in.

use std::time::{Duration, Instant};

use odp_core::cost::DutyCycle;

#[derive(Debug, Clone, Copy)]
pub struct Duty {
    on: Duration,
    period: Duration,
    start: Instant,
}

impl Duty {
    /// Cycles starting at `start` (sampling on at once). A zero period is
    /// taken as 1 ms so the arithmetic never divides by zero.
    pub fn new(cycle: DutyCycle, start: Instant) -> Self {
        let period = Duration::from_millis(cycle.period_ms.max(1));
        Duty {
            on: Duration::from_millis(cycle.on_ms).min(period),
            period,
            start,
        }
    }

    fn phase(&self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.start).as_nanos();
        Duration::from_nanos((elapsed % self.period.as_nanos()) as u64)
    }

    /// Whether sampling is on at `now`.
    pub fn is_on(&self, now: Instant) -> bool {
        self.phase(now) < self.on
    }

    /// When sampling next switches on or off.
    pub fn next_change(&self, now: Instant) -> Instant {
        let phase = self.phase(now);
        if phase < self.on {
            now + (self.on - phase)
        } else {
            now + (self.period - phase)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn on_at_the_start_of_every_period() {
        let t0 = Instant::now();
        let duty = Duty::new(
            DutyCycle {
                on_ms: 200,
                period_ms: 1000,
            },
            t0,
        );
        assert!(duty.is_on(t0));
        assert!(duty.is_on(t0 + 199 * MS));
        assert!(!duty.is_on(t0 + 200 * MS));
        assert!(!duty.is_on(t0 + 999 * MS));
        assert!(duty.is_on(t0 + 1000 * MS));
        assert!(duty.is_on(t0 + 5150 * MS));
        assert!(!duty.is_on(t0 + 5250 * MS));

        assert_eq!(duty.next_change(t0), t0 + 200 * MS);
        assert_eq!(duty.next_change(t0 + 150 * MS), t0 + 200 * MS);
        assert_eq!(duty.next_change(t0 + 200 * MS), t0 + 1000 * MS);
        assert_eq!(duty.next_change(t0 + 3700 * MS), t0 + 4000 * MS);
        // Before the start (a clock read early) counts as the start.
        assert!(duty.is_on(t0.checked_sub(MS).unwrap_or(t0)));
    }

    #[test]
    fn on_time_adds_up_to_the_duty_ratio() {
        let t0 = Instant::now();
        let duty = Duty::new(
            DutyCycle {
                on_ms: 250,
                period_ms: 1000,
            },
            t0,
        );
        let on = (0..10_000).filter(|&ms| duty.is_on(t0 + ms * MS)).count();
        assert_eq!(on, 2_500);
    }
}
