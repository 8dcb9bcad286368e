//! Window bookkeeping of one profile: when a window closes, its bounds and
//! sequence number, and when the profile as a whole ends.
//!
//! Pure: the caller passes both clocks in. The monotonic clock decides when
//! to close (immune to wall clock jumps); the wall clock only labels the
//! bounds, which are made contiguous (a window starts where the previous
//! one ended) and never inverted.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The bounds and position of a closed window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowBounds {
    pub sequence: u64,
    pub start_ms: i64,
    pub end_ms: i64,
}

#[derive(Debug, Clone)]
pub struct WindowClock {
    length: Duration,
    deadline: Instant,
    opened_at: Instant,
    opened_ms: i64,
    sequence: u64,
}

impl WindowClock {
    /// A profile starting now, lasting `duration`, cut in windows of
    /// `length` (a zero length is taken as 1 ms).
    pub fn new(length: Duration, duration: Duration, now: Instant, now_ms: i64) -> Self {
        WindowClock {
            length: length.max(Duration::from_millis(1)),
            deadline: now + duration,
            opened_at: now,
            opened_ms: now_ms,
            sequence: 0,
        }
    }

    /// When the current window is due to close.
    pub fn window_due_at(&self) -> Instant {
        self.opened_at + self.length
    }

    pub fn window_due(&self, now: Instant) -> bool {
        now >= self.window_due_at()
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    pub fn expired(&self, now: Instant) -> bool {
        now >= self.deadline
    }

    /// How long the caller may sleep before something is due, at most
    /// `tick`.
    pub fn sleep_for(&self, now: Instant, tick: Duration) -> Duration {
        let next = self.window_due_at().min(self.deadline);
        next.saturating_duration_since(now).min(tick)
    }

    /// The sequence number the current window will get.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Gives up `count` sequence numbers: the extra messages of a window
    /// sent in parts took them.
    pub fn skip(&mut self, count: u64) {
        self.sequence += count;
    }

    /// Closes the current window and opens the next one.
    pub fn close(&mut self, now: Instant, now_ms: i64) -> WindowBounds {
        let end_ms = now_ms.max(self.opened_ms);
        let bounds = WindowBounds {
            sequence: self.sequence,
            start_ms: self.opened_ms,
            end_ms,
        };
        self.sequence += 1;
        self.opened_at = now;
        self.opened_ms = end_ms;
        bounds
    }
}

/// Whether the last, partial window of a profile is worth publishing: always
/// when it has samples, and when it would be the profile's only window (so
/// every profile yields at least one snapshot, even of an idle target).
pub fn publish_final(samples: u64, sequence: u64) -> bool {
    samples > 0 || sequence == 0
}

/// The wall clock in Unix milliseconds.
pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    #[test]
    fn windows_are_contiguous_and_numbered() {
        let t0 = Instant::now();
        let mut clock = WindowClock::new(10 * SEC, 25 * SEC, t0, 1_000_000);
        assert!(!clock.window_due(t0 + 9 * SEC));
        assert!(clock.window_due(t0 + 10 * SEC));

        let first = clock.close(t0 + 10 * SEC, 1_010_003);
        assert_eq!(
            first,
            WindowBounds {
                sequence: 0,
                start_ms: 1_000_000,
                end_ms: 1_010_003
            }
        );
        // The next window runs from the actual close, not the planned one.
        assert_eq!(clock.window_due_at(), t0 + 20 * SEC);
        let second = clock.close(t0 + 20 * SEC, 1_020_000);
        assert_eq!((second.sequence, second.start_ms), (1, first.end_ms));
        assert_eq!(clock.sequence(), 2);
    }

    #[test]
    fn wall_clock_going_back_never_inverts_a_window() {
        let t0 = Instant::now();
        let mut clock = WindowClock::new(SEC, 10 * SEC, t0, 5_000);
        let bounds = clock.close(t0 + SEC, 4_000);
        assert_eq!((bounds.start_ms, bounds.end_ms), (5_000, 5_000));
        let next = clock.close(t0 + 2 * SEC, 6_000);
        assert_eq!((next.start_ms, next.end_ms), (5_000, 6_000));
    }

    #[test]
    fn sleeps_until_the_next_window_or_the_deadline() {
        let t0 = Instant::now();
        let clock = WindowClock::new(10 * SEC, 3 * SEC, t0, 0);
        let tick = Duration::from_millis(50);
        assert_eq!(clock.sleep_for(t0, tick), tick);
        let near_end = t0 + 3 * SEC - Duration::from_millis(20);
        assert_eq!(clock.sleep_for(near_end, tick), Duration::from_millis(20));
        assert_eq!(clock.sleep_for(t0 + 4 * SEC, tick), Duration::ZERO);
        assert!(!clock.expired(near_end));
        assert!(clock.expired(t0 + 3 * SEC));
    }

    #[test]
    fn final_window_is_published_when_it_has_samples_or_is_the_only_one() {
        assert!(publish_final(3, 4));
        assert!(publish_final(0, 0));
        assert!(!publish_final(0, 4));
    }

    #[test]
    fn zero_length_windows_do_not_spin() {
        let t0 = Instant::now();
        let clock = WindowClock::new(Duration::ZERO, SEC, t0, 0);
        assert!(!clock.window_due(t0));
        assert!(clock.window_due(t0 + Duration::from_millis(1)));
    }
}
