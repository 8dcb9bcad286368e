//! Imported and pushed profiles on both backends, stored in one write:
//! every read of one equals that of the same snapshot stored as an
//! agent's window and compacted; the pipeline's rollups find it and its
//! compaction has nothing left to do; a replay stores nothing twice; and
//! windows an interrupted earlier store left behind are its samples,
//! counted once.

#[allow(unused_imports)] // not every fixture
mod block_fixtures;
mod support;

use std::time::Duration as StdDuration;

use block_fixtures::{count, insert_profile};
use chrono::{Duration, Utc};
use odp_core::filter::StackFilter;
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot};
use odp_store::{
    awaiting_detection, compact_profile, ingest_profile, load_profile, profile_stacks,
    profile_timeline, profiles_to_compact, profiles_to_roll_up, read, read_coverage,
    read_window_counts, store_snapshots, Database, ImportedMeta, IngestedProfile, Labels, Read,
    ReadScope, Spans,
};
use support::on_both_backends;
use uuid::Uuid;

/// A pushed profile's one window: several threads, frames with files and
/// lines, and a coverage, as an OTLP or pprof push makes them.
fn pushed(profile: Uuid) -> Snapshot {
    let frame = |name: &str, line: u32| Frame {
        function: name.to_owned(),
        module: "/usr/bin/shop".to_owned(),
        file: Some("shop.rs".to_owned()),
        line: Some(line),
    };
    let mut b = SnapshotBuilder::new();
    for (stack, tid, count) in [
        (&["main", "serve", "parse"][..], 1, 40),
        (&["main", "serve", "render"], 1, 25),
        (&["main", "serve", "render"], 2, 7),
        (&["main", "gc"], 3, 11),
        (&["main", "serve", "parse", "alloc"], 2, 3),
    ] {
        let frames: Vec<Frame> = stack
            .iter()
            .enumerate()
            .map(|(depth, name)| frame(name, 10 * depth as u32 + 1))
            .collect();
        b.add(&frames, tid, count);
    }
    b.name_thread(1, "worker-1");
    b.name_thread(2, "worker-2");
    let start = (Utc::now() - Duration::minutes(30)).timestamp_millis();
    let mut snapshot = b.build(SnapshotHeader {
        profile_id: profile,
        host: "h-0".into(),
        agent_id: "otlp".into(),
        sequence: 0,
        window_start_ms: start,
        window_end_ms: start + 5_000,
        event: EventKind::CpuClock,
        period: 50_000_000,
        frequency_hz: 0,
    });
    snapshot.coverage.expected = Some(100);
    snapshot.coverage.lost.throttled = 9;
    snapshot
}

fn meta(labels: &Labels) -> ImportedMeta<'_> {
    ImportedMeta {
        service: "shop",
        format: "otlp",
        requested_by: "ingest-bot",
        labels,
    }
}

/// `snapshot` stored as an agent's window of a `fleet` profile, then
/// compacted: what an ingested profile must read as.
async fn agent_twin(db: &Database, snapshot: &Snapshot) -> Uuid {
    let twin = Uuid::new_v4();
    let mut window = snapshot.clone();
    window.profile_id = twin;
    insert_profile(db, twin, 0, "finished", Utc::now() - Duration::minutes(20)).await;
    store_snapshots(db, &[&window]).await.unwrap();
    compact_profile(db, twin).await.unwrap();
    twin
}

/// Every read of `scope` and of `twin`'s, as text without profile ids.
async fn reads(db: &Database, scope: ReadScope) -> Vec<String> {
    let r = Read {
        scope,
        ..Read::profile(Uuid::nil())
    };
    let result = read(db, &r).await.unwrap();
    let matched = StackFilter::new(Some("render"), None).unwrap();
    let counts = read_window_counts(db, &r, &matched, Spans::Stored)
        .await
        .unwrap();
    let coverage = read_coverage(db, &r).await.unwrap();
    vec![
        format!("{:?}", (result.event, result.profiles, result.snapshots)),
        format!("{:?}", (result.samples(), result.period)),
        format!("{:?}", result.flame_graph(1_000, None)),
        format!("{:?}", result.top_functions(20)),
        format!("{:?}", result.stacks()),
        format!("{counts:?}"),
        format!("{coverage:?}"),
    ]
}

async fn a_pushed_profile_reads_as_its_window_compacted(db: Database) {
    let id = Uuid::new_v4();
    let snapshot = pushed(id);
    let labels = Labels::from([("source".to_owned(), "otlp".to_owned())]);
    let stored = ingest_profile(&db, &snapshot, meta(&labels)).await.unwrap();
    assert!(matches!(stored, IngestedProfile::Stored(_)), "{stored:?}");
    let twin = agent_twin(&db, &snapshot).await;

    let mut loaded = load_profile(&db, id).await.unwrap();
    for window in &mut loaded.windows {
        assert_eq!(window.profile_id, id);
        window.profile_id = twin;
    }
    assert_eq!(loaded, load_profile(&db, twin).await.unwrap());
    assert_eq!(loaded.total_samples(), snapshot.total_samples());

    assert_eq!(
        reads(&db, ReadScope::Profile(id)).await,
        reads(&db, ReadScope::Profile(twin)).await
    );
    let service = |name: &str| ReadScope::Service {
        service: name.to_owned(),
        hosts: Vec::new(),
    };
    assert_eq!(
        reads(&db, service("shop")).await,
        reads(&db, service("fleet")).await
    );
    assert_eq!(
        profile_timeline(&db, id).await.unwrap(),
        profile_timeline(&db, twin).await.unwrap()
    );
    let timeline = profile_timeline(&db, id).await.unwrap();
    assert_eq!(
        (timeline[0].expected, timeline[0].lost.throttled),
        (Some(100), 9)
    );
    let (ours, theirs) = (
        profile_stacks(&db, id).await.unwrap(),
        profile_stacks(&db, twin).await.unwrap(),
    );
    assert_eq!(
        (ours.event, ours.snapshots, ours.samples, ours.stacks),
        (
            theirs.event,
            theirs.snapshots,
            theirs.samples,
            theirs.stacks
        )
    );

    // Compacted already; pending its rollup like any compacted profile.
    let to_compact = profiles_to_compact(&db, StdDuration::ZERO, 100)
        .await
        .unwrap();
    assert!(!to_compact.contains(&id), "{to_compact:?}");
    let to_roll_up = profiles_to_roll_up(&db, 100).await.unwrap();
    assert!(to_roll_up.contains(&id) && to_roll_up.contains(&twin));
}

/// The profile's rows in `snapshots`, `profile_blocks` and
/// `detection_queue`.
async fn rows(db: &Database, id: Uuid) -> (i64, i64, i64) {
    let key = match db {
        Database::Postgres(_) => format!("'{id}'"),
        Database::MySql(_) => format!("unhex('{}')", id.simple()),
    };
    let of = |table: &str| format!("select count(*) from {table} where profile_id = {key}");
    (
        count(db, &of("snapshots")).await,
        count(db, &of("profile_blocks")).await,
        count(db, &of("detection_queue")).await,
    )
}

async fn a_replay_stores_nothing_twice(db: Database) {
    let id = Uuid::new_v4();
    let snapshot = pushed(id);
    let labels = Labels::from([("source".to_owned(), "otlp".to_owned())]);
    ingest_profile(&db, &snapshot, meta(&labels)).await.unwrap();
    let again = ingest_profile(&db, &snapshot, meta(&labels)).await.unwrap();
    let IngestedProfile::Replayed(row) = again else {
        panic!("a replay answers with the stored row: {again:?}")
    };
    assert_eq!(row.id, id);
    assert_eq!(rows(&db, id).await, (1, 1, 1));
    assert_eq!(
        load_profile(&db, id).await.unwrap().total_samples(),
        snapshot.total_samples()
    );
    assert_eq!(awaiting_detection(&db, 10).await.unwrap(), vec![id]);
}

/// A window an earlier store wrote without its profile (a server stopped
/// between two writes) holds the profile's samples: they are compacted,
/// not added to again.
async fn windows_stored_before_the_profile_count_once(db: Database) {
    let id = Uuid::new_v4();
    let snapshot = pushed(id);
    store_snapshots(&db, &[&snapshot]).await.unwrap();
    let labels = Labels::from([("source".to_owned(), "otlp".to_owned())]);
    let stored = ingest_profile(&db, &snapshot, meta(&labels)).await.unwrap();
    assert!(matches!(stored, IngestedProfile::Stored(_)), "{stored:?}");
    assert_eq!(rows(&db, id).await, (1, 1, 1));
    assert_eq!(
        load_profile(&db, id).await.unwrap().total_samples(),
        snapshot.total_samples()
    );
    let to_compact = profiles_to_compact(&db, StdDuration::ZERO, 100)
        .await
        .unwrap();
    assert!(!to_compact.contains(&id), "{to_compact:?}");
}

on_both_backends!(
    a_pushed_profile_reads_as_its_window_compacted,
    a_replay_stores_nothing_twice,
    windows_stored_before_the_profile_count_once,
);
