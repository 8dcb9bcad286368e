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
//! first, then a leaf naming what it waited for (see [`blocker_frame`]):
//!
//! | event | leaf function | leaf module |
//! | --- | --- | --- |
//! | `JavaMonitorEnter` | `[monitor] CLASS` (the monitor's class) | CLASS's package |
//! | `ThreadPark` | `[park] CLASS` (the park blocker's class) | CLASS's package |
//! | `ThreadPark` without a blocker | `[park]` | empty |
//!
//! CLASS is the JVM's name with dots (`java.lang.Object`,
//! `java.util.concurrent.locks.ReentrantLock$NonfairSync`), so the frame
//! under the leaf is the Java method that blocked, and rules can tell
//! contention (`[monitor]`, parks on a lock's `Sync`) from waiting for
//! work or a signal (parks on a `ConditionObject`). A wait whose stack
//! trace the dump does not hold is the leaf alone: a few in a thousand on
//! LockWorkloads, whose stacks are all alike.
//!
//! A wait that began before the recording counts only from the
//! recording's start (the session clips it), so a profile never holds more
//! wait time than its threads spent in it; a wait still going on when the
//! profile ends is never reported (JFR has not written it yet).

use std::sync::Arc;
use std::time::Duration;

use odp_core::Frame;

use super::jfr::{self, ChunkEvents, JfrError};

/// The threshold when the profile sets none. JFR's own default (20 ms)
/// misses most contention: on LockWorkloads `uuid` (four threads calling
/// UUID.randomUUID on two cores) waits of 20 ms or more are under a third
/// of the monitor wait time, waits of 10 ms or more 31%, of 1 ms or more
/// 95%, at a few thousand events a second. 1 ms keeps nearly all the time
/// threads lose to locks while sparing the JVM the cost of an event (and
/// a stack trace) per sub-millisecond park.
pub const DEFAULT_MIN_WAIT: Duration = Duration::from_millis(1);

/// The JFR wait events recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitKind {
    /// `jdk.JavaMonitorEnter`.
    Monitor,
    /// `jdk.ThreadPark`.
    Park,
}

impl WaitKind {
    pub const ALL: [WaitKind; 2] = [WaitKind::Monitor, WaitKind::Park];

    pub fn jfr_name(self) -> &'static str {
        match self {
            WaitKind::Monitor => "jdk.JavaMonitorEnter",
            WaitKind::Park => "jdk.ThreadPark",
        }
    }

    fn from_jfr_name(name: &str) -> Option<Self> {
        WaitKind::ALL.into_iter().find(|k| k.jfr_name() == name)
    }

    /// The field holding the class waited for.
    fn blocker_field(self) -> &'static str {
        match self {
            WaitKind::Monitor => "monitorClass",
            WaitKind::Park => "parkedClass",
        }
    }

    /// The leaf's prefix.
    pub fn tag(self) -> &'static str {
        match self {
            WaitKind::Monitor => "[monitor]",
            WaitKind::Park => "[park]",
        }
    }
}

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

/// One wait JFR recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JfrWait {
    /// The OS thread id; 0 when the recording does not say.
    pub tid: u32,
    pub thread_name: Option<String>,
    /// The waiting thread's Java frames, root first (empty when JFR took
    /// no stack trace); [`JfrWait::blocker`] goes under them.
    pub frames: Arc<[Frame]>,
    pub blocker: Frame,
    /// When the wait began, in Unix nanoseconds.
    pub start_nanos: i64,
    /// How long it lasted.
    pub nanos: u64,
}

impl JfrWait {
    /// How much of the wait falls at or after `since` (Unix nanoseconds).
    pub fn nanos_since(&self, since: i64) -> u64 {
        let end = self
            .start_nanos
            .saturating_add(i64::try_from(self.nanos).unwrap_or(i64::MAX));
        u64::try_from(end.saturating_sub(self.start_nanos.max(since))).unwrap_or(0)
    }
}

/// The leaf naming what a thread waited for (see the module docs).
pub fn blocker_frame(kind: WaitKind, class: Option<&str>) -> Frame {
    let (function, module) = match class {
        Some(class) => (format!("{} {class}", kind.tag()), jfr::package_of(class)),
        None => (kind.tag().to_owned(), String::new()),
    };
    Frame {
        function,
        module,
        file: None,
        line: None,
    }
}

/// The waits in every chunk of a recording.
pub fn parse(bytes: Vec<u8>) -> Result<Vec<ChunkEvents<JfrWait>>, JfrError> {
    jfr::read_events(bytes, |clock, name, value, traces| {
        let kind = WaitKind::from_jfr_name(name)?;
        let ticks = |field: &str| {
            value
                .get_field(field)
                .and_then(|v| i64::try_from(v.value).ok())
        };
        let nanos = clock.nanos(ticks("duration")?);
        let start_nanos = clock.unix_nanos(ticks("startTime")?);
        let class = value
            .get_field(kind.blocker_field())
            .and_then(|c| jfr::class_name(&c));
        let frames = jfr::stack_of(value, traces).unwrap_or_else(|| Arc::from([]));
        let (tid, thread_name) = jfr::thread_of(value, "eventThread");
        Some(JfrWait {
            tid,
            thread_name,
            frames,
            blocker: blocker_frame(kind, class.as_deref()),
            start_nanos,
            nanos,
        })
    })
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

    #[test]
    fn leaves_name_the_blocker_and_its_package() {
        let monitor = blocker_frame(
            WaitKind::Monitor,
            Some("sun.security.provider.SecureRandom"),
        );
        assert_eq!(
            monitor.function,
            "[monitor] sun.security.provider.SecureRandom"
        );
        assert_eq!(monitor.module, "sun.security.provider");
        let park = blocker_frame(
            WaitKind::Park,
            Some("java.util.concurrent.locks.ReentrantLock$NonfairSync"),
        );
        assert_eq!(
            park.function,
            "[park] java.util.concurrent.locks.ReentrantLock$NonfairSync"
        );
        assert_eq!(park.module, "java.util.concurrent.locks");
        let bare = blocker_frame(WaitKind::Park, None);
        assert_eq!(
            (bare.function.as_str(), bare.module.as_str()),
            ("[park]", "")
        );
        let default_package = blocker_frame(WaitKind::Monitor, Some("Ledger"));
        assert_eq!(default_package.module, "");
    }

    #[test]
    fn waits_count_from_the_recording_start() {
        let wait = JfrWait {
            tid: 1,
            thread_name: None,
            frames: Arc::from([]),
            blocker: blocker_frame(WaitKind::Park, None),
            start_nanos: 1_000,
            nanos: 500,
        };
        assert_eq!(wait.nanos_since(0), 500);
        assert_eq!(wait.nanos_since(1_200), 300);
        assert_eq!(wait.nanos_since(1_500), 0);
        assert_eq!(wait.nanos_since(9_000), 0);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(parse(b"FLR\0 not really".to_vec()).is_err());
    }
}
