//! What integration tests of the store, the pipeline and the whole
//! platform share: crafted windows and heartbeats, counts of stored rows,
//! and the reads of a service's fleet that rollup tests compare.

use chrono::{DateTime, Duration, Utc};
use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::filter::{StackFilter, ThreadFilter};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot, WeightedStack};
use odp_store::{Database, Read, ReadResult, ReadScope};
use sqlx::PgPool;
use uuid::Uuid;

/// Window `sequence` of a profile on host `h-1`: stacks of function
/// frames, root first, on thread 1, one cpu-clock sample each.
pub fn snapshot(profile_id: Uuid, sequence: u64, stacks: &[(&[&str], u64)]) -> Snapshot {
    let mut b = SnapshotBuilder::new();
    for (names, count) in stacks {
        b.add(&frames(names), 1, *count);
    }
    b.build(SnapshotHeader {
        profile_id,
        host: "h-1".into(),
        agent_id: "agent".into(),
        sequence,
        window_start_ms: 1_700_000_000_000 + sequence as i64 * 10_000,
        window_end_ms: 1_700_000_010_000 + sequence as i64 * 10_000,
        event: EventKind::CpuClock,
        period: 1,
        frequency_hz: 99,
    })
}

/// `s` encoded as another LZ4 compressor could write it: its body as one
/// run of literals, a valid LZ4 block unlike `Snapshot::encode`'s (for a
/// snapshot that compresses), so a test can tell the bytes an agent sent
/// from the snapshot encoded again.
pub fn literal_lz4(s: &Snapshot) -> Vec<u8> {
    let plain = s.encode_uncompressed();
    let (header, body) = plain.split_at(10);
    let mut out = header.to_vec();
    out[5] = 1; // the LZ4 codec
    let mut length = body.len();
    out.push((length.min(15) as u8) << 4);
    if length >= 15 {
        length -= 15;
        while length >= 255 {
            out.push(255);
            length -= 255;
        }
        out.push(length as u8);
    }
    out.extend_from_slice(body);
    assert_ne!(out, s.encode(), "a snapshot that LZ4 compresses");
    out
}

/// The single integer `sql` selects (`select count(*) from …`).
pub async fn count(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A stack of function frames named `names`, root first.
pub fn frames(names: &[&str]) -> Vec<Frame> {
    names.iter().map(|n| Frame::function(*n)).collect()
}

/// Window `sequence` of host `h-{host}`'s profile: 10 s from `start`,
/// stacks of a service's shared code (so the hosts' profiles share their
/// dictionary, as a fleet's do) on two threads (`worker-1`, `gc`), counts
/// varying by host and window.
pub fn fleet_window(profile: Uuid, host: usize, start: DateTime<Utc>, sequence: u64) -> Snapshot {
    let mut b = SnapshotBuilder::new();
    b.add(
        &frames(&["main", "serve", "parse"]),
        1,
        host as u64 + sequence + 1,
    );
    b.add(&frames(&["main", "serve", "render"]), 1, 3);
    b.add(&frames(&["main", "gc"]), 2, (sequence % 4) + 1);
    for handler in 0..40u64 {
        let path: Vec<String> = (0..8)
            .map(|depth| format!("com.example.checkout.Handler{handler:02}.step{depth}"))
            .collect();
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        b.add(&frames(&path), 1, 1 + (handler + host as u64) % 3);
    }
    b.name_thread(1, "worker-1");
    b.name_thread(2, "gc");
    let start_ms = start.timestamp_millis() + sequence as i64 * 10_000;
    b.build(SnapshotHeader {
        profile_id: profile,
        host: format!("h-{host}"),
        agent_id: format!("agent-{host}"),
        sequence,
        window_start_ms: start_ms,
        window_end_ms: start_ms + 10_000,
        event: EventKind::CpuClock,
        period: 10_101_010,
        frequency_hz: 99,
    })
}

/// An aggregate of service `fleet` from `since` to `until`.
pub fn service_read(since: DateTime<Utc>, until: DateTime<Utc>) -> Read {
    Read {
        scope: ReadScope::Service {
            service: "fleet".into(),
            hosts: Vec::new(),
        },
        from: Some(since),
        to: Some(until),
        ..Read::profile(Uuid::nil())
    }
}

/// Everything a read answers, order-independent.
#[derive(Debug, PartialEq)]
pub struct Answer {
    pub samples: u64,
    pub stacks: Vec<WeightedStack>,
    /// Host, samples, profiles, windows.
    pub hosts: Vec<(String, u64, u64, i64)>,
    pub profiles: u64,
    pub snapshots: i64,
}

pub fn answer(result: ReadResult) -> Answer {
    let mut stacks = result.stacks();
    stacks.sort_by(|a, b| a.frames.cmp(&b.frames));
    Answer {
        samples: result.samples(),
        hosts: result
            .hosts
            .iter()
            .map(|h| (h.host.clone(), h.samples(), h.profiles, h.snapshots))
            .collect(),
        stacks,
        profiles: result.profiles,
        snapshots: result.snapshots,
    }
}

/// The reads of the fleet whose windows start at `start` (see
/// [`fleet_window`]) that rollup tests compare: whole, hosts `h-1` and
/// `h-3`, thread `worker-*`, part of the time, all but frame `gc`.
pub fn fleet_reads(start: DateTime<Utc>) -> Vec<Read> {
    let whole = service_read(start - Duration::minutes(5), start + Duration::hours(3));
    vec![
        whole.clone(),
        Read {
            scope: ReadScope::Service {
                service: "fleet".into(),
                hosts: vec!["h-1".into(), "h-3".into()],
            },
            ..whole.clone()
        },
        Read {
            thread: Some(ThreadFilter::new("^worker-").unwrap()),
            ..whole.clone()
        },
        // Windows 2 and later end after +25 s, windows up to 6 start before
        // +65 s: with `start` a minute before an hour, part of each
        // hour's rollup.
        service_read(start + Duration::seconds(25), start + Duration::seconds(65)),
        Read {
            stacks: StackFilter::new(None, Some("^gc$")).unwrap(),
            ..whole
        },
    ]
}

/// What each of [`fleet_reads`] answers.
pub async fn fleet_answers(db: &Database, start: DateTime<Utc>) -> Vec<Answer> {
    let mut out = Vec::new();
    for read in fleet_reads(start) {
        out.push(answer(odp_store::read(db, &read).await.unwrap()));
    }
    out
}

/// A heartbeat of `agent` on `host` at `at_s` (unix s) saying its host
/// runs `release` (the `version` label).
pub fn release_heartbeat(host: &str, agent: &str, release: &str, at_s: i64) -> AgentEvent {
    AgentEvent {
        host: host.into(),
        agent_id: agent.into(),
        at_ms: at_s * 1000,
        kind: AgentEventKind::Heartbeat {
            version: "odp-agent".into(),
            running_profiles: Vec::new(),
            plugins: Vec::new(),
            machine_id: None,
            started_at_ms: None,
            labels: [("version".to_owned(), release.to_owned())].into(),
            services: Vec::new(),
            services_digest: None,
        },
    }
}
