//! Where Java threads wait for one another, from JFR's wait events, each
//! weighted by how long it waited: what the `jvm` plugin's `lock` mode
//! records, and what a `lock` import of a recording reads.
//!
//! - `jdk.JavaMonitorEnter`: a thread blocked entering a `synchronized`
//!   block or method another thread holds (contention, always);
//! - `jdk.ThreadPark`: a thread parked by `LockSupport.park`, which is how
//!   every `java.util.concurrent` lock, condition, queue and pool waits;
//!   the park blocker (`parkedClass`) tells which: a lock's
//!   `ReentrantLock$NonfairSync`, a queue's `ConditionObject`.
//!
//! `jdk.JavaMonitorWait` (`Object.wait`) is left out: it is a wait for a
//! notification, never for a lock (see the plugin's `lock` module).
//!
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
//! trace the recording does not hold is the leaf alone.

use std::sync::Arc;

use jfrs::reader::event::Accessor;
use odp_core::Frame;

use super::{ChunkEvents, ChunkView, JfrError, Traces};

/// The JFR wait events recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

    pub fn from_jfr_name(name: &str) -> Option<Self> {
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
        Some(class) => (format!("{} {class}", kind.tag()), super::package_of(class)),
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
    super::read_events(bytes, |chunk, name, value, traces| {
        read_wait(chunk, name, value, traces)
    })
}

/// The wait an event records; `None` for other events.
pub(super) fn read_wait(
    chunk: &ChunkView<'_>,
    name: &str,
    value: &Accessor<'_>,
    traces: &mut Traces,
) -> Option<JfrWait> {
    let kind = WaitKind::from_jfr_name(name)?;
    let ticks = |field: &str| {
        value
            .get_field(field)
            .and_then(|v| i64::try_from(v.value).ok())
    };
    let nanos = chunk.clock.nanos(ticks("duration")?);
    let start_nanos = chunk.clock.unix_nanos(ticks("startTime")?);
    let class = value
        .get_field(kind.blocker_field())
        .and_then(|c| super::class_name(&c));
    let frames = super::stack_of(value, traces).unwrap_or_else(|| Arc::from([]));
    let (tid, thread_name) = super::thread_of(value, "eventThread");
    Some(JfrWait {
        tid,
        thread_name,
        frames,
        blocker: blocker_frame(kind, class.as_deref()),
        start_nanos,
        nanos,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
