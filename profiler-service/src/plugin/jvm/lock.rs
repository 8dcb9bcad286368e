//! The `lock` mode: where Java threads wait for one another, from JFR's
//! wait events, each weighted by how long it waited.
//!
//! - `jdk.JavaMonitorEnter`: a thread blocked entering a `synchronized`
//!   block or method another thread holds (contention, always);
//! - `jdk.ThreadPark`: a thread parked by `LockSupport.park`, which is how
//!   every `java.util.concurrent` lock, condition, queue and pool waits;
//!   the park blocker (`parkedClass`) tells which: a lock's
//!   `ReentrantLock$NonfairSync`, a queue's `ConditionObject`.
//!
//! `jdk.JavaMonitorWait` (`Object.wait`) is left out: it is a wait for a
//! notification, never for a lock, and every JVM has threads that spend
//! their lives in it whatever the program does. Its Finalizer thread alone
//! added 2.5 s of `Object.wait` to a 4 s lock profile of LockWorkloads
//! `uuid`, as much as the threads lost to the lock under study.
//!
//! JFR writes an event when the wait ends, if it lasted at least the
//! event's threshold: the profile's `min_wait`, else [`DEFAULT_MIN_WAIT`].
//! Each wait becomes one stack: the waiting thread's Java frames, root
//! first, then a leaf naming what it waited for (`[monitor] CLASS`,
//! `[park] CLASS`), as `odp_profile::jfr::waits` reads them (imports of
//! `.jfr` files read them the same way). A wait whose stack trace the
//! dump does not hold is the leaf alone: a few in a thousand on
//! LockWorkloads, whose stacks are all alike.
//!
//! A wait that began before the recording counts only from the
//! recording's start (the session clips it), so a profile never holds more
//! wait time than its threads spent in it; a wait still going on when the
//! profile ends is never reported (JFR has not written it yet).

use std::time::Duration;

pub use odp_profile::jfr::waits::{blocker_frame, parse, JfrWait, WaitKind};

/// The threshold when the profile sets none. JFR's own default (20 ms)
/// misses most contention: on LockWorkloads `uuid` (four threads calling
/// UUID.randomUUID on two cores) waits of 20 ms or more are under a third
/// of the monitor wait time, waits of 10 ms or more 31%, of 1 ms or more
/// 95%, at a few thousand events a second. 1 ms keeps nearly all the time
/// threads lose to locks while sparing the JVM the cost of an event (and
/// a stack trace) per sub-millisecond park.
pub const DEFAULT_MIN_WAIT: Duration = Duration::from_millis(1);

/// The `JFR.start` options that enable the wait events, each with its
/// stack trace and `min_wait` as its threshold.
pub fn event_settings(min_wait: Duration) -> String {
    let threshold = threshold(min_wait);
    WaitKind::ALL
        .into_iter()
        .map(|kind| {
            let event = kind.jfr_name();
            format!("+{event}#enabled=true +{event}#stackTrace=true +{event}#threshold={threshold}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A JFR timespan for `d`, in the coarsest unit that keeps it exact.
fn threshold(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos.is_multiple_of(1_000_000) {
        format!("{}ms", nanos / 1_000_000)
    } else if nanos.is_multiple_of(1_000) {
        format!("{}us", nanos / 1_000)
    } else {
        format!("{nanos}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_exact_jfr_timespans() {
        assert_eq!(threshold(Duration::from_millis(1)), "1ms");
        assert_eq!(threshold(Duration::from_micros(250)), "250us");
        assert_eq!(threshold(Duration::from_nanos(1500)), "1500ns");
        assert_eq!(threshold(Duration::ZERO), "0ms");
        let settings = event_settings(Duration::from_millis(10));
        assert!(!settings.contains("JavaMonitorWait"), "{settings}");
        for event in ["jdk.JavaMonitorEnter", "jdk.ThreadPark"] {
            assert!(
                settings.contains(&format!("+{event}#threshold=10ms")),
                "{settings}"
            );
            assert!(settings.contains(&format!("+{event}#stackTrace=true")));
        }
    }
}
