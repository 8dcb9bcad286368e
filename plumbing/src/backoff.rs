//! Waiting between retries: one exponential backoff for every service.
//!
//! A [`Backoff`] waits `initial` after the first failure in a row, twice
//! as long after each further one, never more than `max`. No jitter: the
//! callers retry one resource each (a database, a broker, a webhook), not
//! a crowd of clients in lockstep.
//!
//! Three shapes use it: [`Backoff::delay`] for a schedule kept elsewhere
//! (an alert's attempt count lives in the store), [`Backoff::waits`] for a
//! loop of its own (reset after a success), and [`Backoff::retry`] for an
//! operation retried until it succeeds or its error is final.

use std::future::Future;
use std::time::Duration;

/// `initial`, doubled after each failure in a row, capped at `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
}

impl Backoff {
    pub const fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff { initial, max }
    }

    /// The wait after the `failures`-th failure in a row (from 1; 0 counts
    /// as 1): `initial × 2^(failures − 1)`, at most `max`.
    pub fn delay(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.initial.saturating_mul(1 << doublings).min(self.max)
    }

    /// A loop's successive waits, from `initial`.
    pub fn waits(&self) -> Waits {
        Waits {
            backoff: *self,
            failures: 0,
        }
    }

    /// Runs `attempt` until it succeeds, sleeping between attempts, and
    /// returns its value. After each failure `retry(&error, wait)` decides
    /// (and logs): `true` sleeps `wait` and tries again, `false` returns
    /// the error.
    pub async fn retry<T, E, F, Fut>(
        &self,
        mut attempt: F,
        mut retry: impl FnMut(&E, Duration) -> bool,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut waits = self.waits();
        loop {
            match attempt().await {
                Ok(value) => return Ok(value),
                Err(e) => {
                    let wait = waits.failed();
                    if !retry(&e, wait) {
                        return Err(e);
                    }
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}

/// The state of one retry loop: how many failures in a row.
#[derive(Debug, Clone)]
pub struct Waits {
    backoff: Backoff,
    failures: u32,
}

impl Waits {
    /// Counts one more failure and returns the wait before the next try.
    pub fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        self.backoff.delay(self.failures)
    }

    /// After a success: the next failure waits `initial` again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn delays_double_from_the_initial_wait_up_to_the_cap() {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(300));
        let waits: Vec<u64> = (1..=10).map(|n| backoff.delay(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]);
        assert_eq!(backoff.delay(0), Duration::from_secs(1));
        assert_eq!(backoff.delay(u32::MAX), Duration::from_secs(300));
        let huge = Backoff::new(Duration::MAX, Duration::MAX);
        assert_eq!(huge.delay(40), Duration::MAX);
    }

    #[test]
    fn a_loops_waits_follow_the_schedule_and_reset() {
        let mut waits = Backoff::new(MS(100), Duration::from_secs(5)).waits();
        let first: Vec<u128> = (0..8).map(|_| waits.failed().as_millis()).collect();
        assert_eq!(first, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        waits.reset();
        assert_eq!(waits.failed(), MS(100));
        assert_eq!(waits.failed(), MS(200));
    }

    #[tokio::test]
    async fn retry_sleeps_the_schedule_until_success() {
        let backoff = Backoff::new(MS(5), MS(50));
        let mut calls = 0;
        let mut seen = Vec::new();
        let value = backoff
            .retry(
                || {
                    calls += 1;
                    let n = calls;
                    async move {
                        if n < 6 {
                            Err(n)
                        } else {
                            Ok(n)
                        }
                    }
                },
                |e, wait| {
                    seen.push((*e, wait.as_millis()));
                    true
                },
            )
            .await;
        assert_eq!(value, Ok(6));
        assert_eq!(seen, [(1, 5), (2, 10), (3, 20), (4, 40), (5, 50)]);
    }

    #[tokio::test]
    async fn retry_returns_the_error_it_will_not_retry() {
        let backoff = Backoff::new(MS(10), MS(10));
        let mut calls = 0;
        let mut waited = Vec::new();
        let result: Result<(), u32> = backoff
            .retry(
                || {
                    calls += 1;
                    let n = calls;
                    async move { Err(n) }
                },
                |e, wait| {
                    waited.push(wait);
                    *e < 3
                },
            )
            .await;
        assert_eq!(result, Err(3));
        assert_eq!(calls, 3);
        assert_eq!(waited, [MS(10), MS(10), MS(10)], "asked after each failure");
    }
}
