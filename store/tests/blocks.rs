//! Profile blocks on both backends: a profile loads as what was stored,
//! compaction keeps every total and is idempotent, windows arriving after
//! compaction join the profile, and `profiles_to_compact` waits out its
//! grace.

mod block_fixtures;
mod support;

use std::time::Duration as StdDuration;

use block_fixtures::{
    count, exec, insert_profile, leaves, snapshot_leaves, store_window, window, Arg,
};
use chrono::{Duration, Utc};
use odp_core::flamegraph::FlameNode;
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame};
use odp_profile::{FrameSums, ProfileFrames, StackTable};
use odp_store::{
    compact_profile, load_profile, load_profiles, load_windows_after, profile_frames,
    profile_stacks, Database,
};
use support::on_both_backends;
use uuid::Uuid;

/// Loads equal what was stored: windows in order, samples, stacks and
/// thread names; several profiles at once; nothing for an unknown one.
async fn loads_what_was_stored(db: Database) {
    let start = Utc::now() - Duration::hours(2);
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    insert_profile(&db, a, 0, "running", start).await;
    let windows: Vec<_> = (0..3).map(|s| window(a, 0, start, s)).collect();
    for w in &windows {
        store_window(&db, w).await;
    }
    let other = window(b, 1, start, 0);
    store_window(&db, &other).await;

    let profile = load_profile(&db, a).await.unwrap();
    assert_eq!(profile.windows.len(), 3);
    let sequences: Vec<u64> = profile.windows.iter().map(|w| w.sequence).collect();
    assert_eq!(sequences, [0, 1, 2]);
    let expected: u64 = windows.iter().map(|w| w.total_samples()).sum();
    assert_eq!(profile.total_samples(), expected);
    assert_eq!(profile.windows[1].start_ms, windows[1].window_start_ms);
    assert_eq!(profile.windows[0].host, "h-0");

    let stacks = profile_stacks(&db, a).await.unwrap();
    assert_eq!(stacks.snapshots, 3);
    assert_eq!(stacks.samples, expected);
    assert_eq!(leaves(&stacks.stacks), snapshot_leaves(&windows));

    let mut both = load_profiles(&db, &[a, b, Uuid::new_v4()]).await.unwrap();
    both.sort_by_key(|(id, _)| *id == b);
    assert_eq!(both.len(), 2, "a profile without data is absent");
    assert_eq!(both[0].1.total_samples(), expected);
    assert_eq!(both[1].1.total_samples(), other.total_samples());
    assert!(load_profile(&db, Uuid::new_v4())
        .await
        .unwrap()
        .windows
        .is_empty());
}

/// Compaction moves every window into the profile block, keeps the
/// profile exactly, and a second run has nothing to do.
async fn compaction_keeps_totals_and_is_idempotent(db: Database) {
    let start = Utc::now() - Duration::hours(2);
    let id = Uuid::new_v4();
    insert_profile(&db, id, 0, "finished", start).await;
    let windows: Vec<_> = (0..4).map(|s| window(id, 0, start, s)).collect();
    for w in &windows {
        store_window(&db, w).await;
    }
    let before = profile_stacks(&db, id).await.unwrap();

    let done = compact_profile(&db, id).await.unwrap();
    assert_eq!((done.windows, done.legacy_windows), (4, 0));
    assert!(done.block_bytes > 0);
    assert_eq!(
        count(
            &db,
            "select count(*) from snapshots where compacted and block is null"
        )
        .await,
        4
    );
    assert_eq!(count(&db, "select count(*) from profile_blocks").await, 1);
    assert_eq!(
        count(&db, "select sum(samples) from profile_blocks").await as u64,
        before.samples
    );
    let after = profile_stacks(&db, id).await.unwrap();
    assert_eq!(after.samples, before.samples);
    assert_eq!(after.snapshots, 4);
    assert_eq!(leaves(&after.stacks), leaves(&before.stacks));
    assert_eq!(load_profile(&db, id).await.unwrap().windows.len(), 4);

    let again = compact_profile(&db, id).await.unwrap();
    assert_eq!(again, odp_store::Compacted::default());
    assert_eq!(
        profile_stacks(&db, id).await.unwrap().samples,
        before.samples
    );
}

/// A window stored after compaction (spooled through an outage) is read
/// with the block, and the next compaction adds it.
async fn windows_arriving_after_compaction_join_the_profile(db: Database) {
    let start = Utc::now() - Duration::hours(2);
    let id = Uuid::new_v4();
    insert_profile(&db, id, 0, "finished", start).await;
    let windows: Vec<_> = (0..3).map(|s| window(id, 0, start, s)).collect();
    for w in &windows[..2] {
        store_window(&db, w).await;
    }
    compact_profile(&db, id).await.unwrap();
    store_window(&db, &windows[2]).await;

    let profile = load_profile(&db, id).await.unwrap();
    let sequences: Vec<u64> = profile.windows.iter().map(|w| w.sequence).collect();
    assert_eq!(sequences, [0, 1, 2]);
    let expected: u64 = windows.iter().map(|w| w.total_samples()).sum();
    assert_eq!(profile.total_samples(), expected);

    let done = compact_profile(&db, id).await.unwrap();
    assert_eq!(done.windows, 1);
    let stacks = profile_stacks(&db, id).await.unwrap();
    assert_eq!(stacks.samples, expected);
    assert_eq!(leaves(&stacks.stacks), snapshot_leaves(&windows));
    assert_eq!(
        count(&db, "select windows from profile_blocks").await,
        3,
        "one block of all windows"
    );
}

/// Profiles are compacted once ended for `grace`: by status when a row
/// owns them, by their last window otherwise; running ones never.
async fn profiles_to_compact_waits_out_the_grace(db: Database) {
    let long_ago = Utc::now() - Duration::hours(3);
    let just_now = Utc::now();
    let ended_long_ago = Uuid::new_v4();
    let ended_just_now = Uuid::new_v4();
    let running = Uuid::new_v4();
    let orphan_old = Uuid::new_v4();
    let orphan_recent = Uuid::new_v4();
    insert_profile(&db, ended_long_ago, 0, "finished", long_ago).await;
    insert_profile(&db, ended_just_now, 1, "stopped", just_now).await;
    insert_profile(&db, running, 2, "running", long_ago).await;
    // Stored in this order, so the oldest window id comes first.
    store_window(&db, &window(ended_long_ago, 0, long_ago, 0)).await;
    store_window(&db, &window(orphan_old, 3, long_ago, 0)).await;
    store_window(&db, &window(ended_just_now, 1, long_ago, 0)).await;
    store_window(&db, &window(running, 2, long_ago, 0)).await;
    store_window(&db, &window(orphan_recent, 4, just_now, 0)).await;

    let hour = StdDuration::from_secs(3600);
    let due = odp_store::profiles_to_compact(&db, hour, 10).await.unwrap();
    assert_eq!(due, [ended_long_ago, orphan_old]);
    let limited = odp_store::profiles_to_compact(&db, hour, 1).await.unwrap();
    assert_eq!(limited, [ended_long_ago]);

    // Without grace, everything ended is due, the running profile never.
    let no_grace = StdDuration::from_secs(0);
    let mut due = odp_store::profiles_to_compact(&db, no_grace, 10)
        .await
        .unwrap();
    due.sort();
    let mut expected = vec![ended_long_ago, orphan_old, ended_just_now];
    expected.sort();
    assert_eq!(due, expected);

    compact_profile(&db, ended_long_ago).await.unwrap();
    let due = odp_store::profiles_to_compact(&db, hour, 10).await.unwrap();
    assert_eq!(due, [orphan_old], "a compacted profile is done");

    // A window arriving late for a compacted profile makes it due again,
    // after the orphan, whose window was stored before it.
    store_window(&db, &window(ended_long_ago, 0, long_ago, 1)).await;
    let due = odp_store::profiles_to_compact(&db, hour, 10).await.unwrap();
    assert_eq!(due, [orphan_old, ended_long_ago]);
}

/// Among many running profiles' windows (continuous segments hold theirs
/// uncompacted for an hour), the few ended profiles and orphans are found,
/// each once, and no running one; past the limit, the others wait.
async fn profiles_to_compact_finds_the_ended_among_the_running(db: Database) {
    let long_ago = Utc::now() - Duration::hours(3);
    let hour = StdDuration::from_secs(3600);
    let mut ended = Vec::new();
    for p in 0..40 {
        let id = Uuid::new_v4();
        let status = if p % 10 == 0 { "finished" } else { "running" };
        insert_profile(&db, id, p, status, long_ago).await;
        for s in 0..3 {
            store_window(&db, &window(id, p, long_ago, s)).await;
        }
        if status == "finished" {
            ended.push(id);
        }
    }
    let orphan = Uuid::new_v4();
    store_window(&db, &window(orphan, 99, long_ago, 0)).await;
    ended.push(orphan);

    let due = odp_store::profiles_to_compact(&db, hour, 100)
        .await
        .unwrap();
    assert_eq!(due, ended, "the ended and the orphan, oldest window first");
    let first = odp_store::profiles_to_compact(&db, hour, 2).await.unwrap();
    assert_eq!(first, ended[..2]);
    for id in &ended {
        compact_profile(&db, *id).await.unwrap();
    }
    let due = odp_store::profiles_to_compact(&db, hour, 100)
        .await
        .unwrap();
    assert!(due.is_empty(), "only running profiles left: {due:?}");
}

/// A window stored before blocks existed (samples, thread names, stacks
/// and frames as rows) loads like any other, and compaction moves it into
/// the block and drops its rows.
async fn legacy_rows_load_and_compact(db: Database) {
    let start = Utc::now() - Duration::hours(2);
    let id = Uuid::new_v4();
    insert_profile(&db, id, 0, "finished", start).await;
    let frames = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
    for (frame, name) in frames.iter().zip(["main", "serve", "parse"]) {
        exec(
            &db,
            "insert into frames (id, `function`, module, file, line) values (?, ?, 'app', NULL, NULL)",
            vec![Arg::Id(*frame), Arg::Text(name.into())],
        )
        .await;
    }
    let path = |ids: &[Uuid]| {
        ids.iter()
            .flat_map(|id| *id.as_bytes())
            .collect::<Vec<u8>>()
    };
    let (parse, serve) = (Uuid::new_v4(), Uuid::new_v4());
    for (stack, ids) in [(parse, &frames[..]), (serve, &frames[..2])] {
        exec(
            &db,
            "insert into stacks (id, frame_ids) values (?, ?)",
            vec![Arg::Id(stack), Arg::Bytes(path(ids))],
        )
        .await;
    }
    // The legacy window's header; its samples are rows.
    let mut header = window(id, 0, start, 0);
    header.stacks.clear();
    store_window(&db, &header).await;
    exec(
        &db,
        "update snapshots set block = null, samples = 12",
        vec![],
    )
    .await;
    let legacy = count(&db, "select max(id) from snapshots").await;
    for (stack, tid, n) in [(parse, 1, 7), (serve, 1, 2), (serve, 2, 3)] {
        exec(
            &db,
            "insert into samples (snapshot_id, stack_id, tid, `count`) values (?, ?, ?, ?)",
            vec![Arg::Int(legacy), Arg::Id(stack), Arg::Int(tid), Arg::Int(n)],
        )
        .await;
    }
    exec(
        &db,
        "insert into snapshot_threads (snapshot_id, tid, name) values (?, 1, 'worker-1'), (?, 2, 'gc')",
        vec![Arg::Int(legacy), Arg::Int(legacy)],
    )
    .await;
    // A window with a block after it.
    let later = window(id, 0, start, 1);
    store_window(&db, &later).await;

    let profile = load_profile(&db, id).await.unwrap();
    assert_eq!(profile.windows.len(), 2);
    assert_eq!(profile.total_samples(), 12 + later.total_samples());
    let stacks = profile_stacks(&db, id).await.unwrap();
    let expected = |leaf: &str| leaves(&stacks.stacks).into_iter().find(|(l, _)| l == leaf);
    let later_parse = snapshot_leaves(std::slice::from_ref(&later))
        .into_iter()
        .find(|(l, _)| l == "parse")
        .unwrap()
        .1;
    assert_eq!(expected("parse"), Some(("parse".into(), 7 + later_parse)));

    let done = compact_profile(&db, id).await.unwrap();
    assert_eq!((done.windows, done.legacy_windows), (2, 1));
    assert_eq!(count(&db, "select count(*) from samples").await, 0);
    assert_eq!(count(&db, "select count(*) from snapshot_threads").await, 0);
    let after = profile_stacks(&db, id).await.unwrap();
    assert_eq!(after.samples, stacks.samples);
    assert_eq!(leaves(&after.stacks), leaves(&stacks.stacks));
    let threads = odp_store::read(
        &db,
        &odp_store::Read {
            thread: Some(odp_core::filter::ThreadFilter::new("^gc$").unwrap()),
            ..odp_store::Read::profile(id)
        },
    )
    .await
    .unwrap();
    let later_gc: u64 = later
        .stacks
        .iter()
        .filter(|s| s.tid == 2)
        .map(|s| s.count)
        .sum();
    assert_eq!(threads.samples(), 3 + later_gc, "thread names kept");
}

/// A Python frame as py-spy reports it: the line executing.
fn python(function: &str, line: u32) -> Frame {
    Frame {
        function: function.to_owned(),
        module: "hot_python".to_owned(),
        file: Some("hot_python.py".to_owned()),
        line: Some(line),
    }
}

/// A Python profile's flame graph names each node's file and line, from
/// its windows and from its compacted block: the first line of each
/// function the samples show ("view source").
async fn a_python_profiles_flame_graph_names_files_and_lines(db: Database) {
    let start = Utc::now() - Duration::hours(1);
    let id = Uuid::new_v4();
    insert_profile(&db, id, 0, "finished", start).await;
    // The main thread's stacks of the captured py-spy fixture
    // (profiler-service/tests/fixtures/py-spy/hot_python.raw).
    let (module, crunch) = (python("<module>", 41), python("crunch_numbers", 16));
    let mut b = SnapshotBuilder::new();
    b.add(&[module.clone(), python("main", 35), crunch], 1, 145);
    b.add(&[module.clone(), python("main", 34)], 1, 1);
    let light = python("light_work", 21);
    b.add(&[module.clone(), python("main", 36), light], 1, 23);
    let crunch = python("crunch_numbers", 15);
    b.add(&[module, python("main", 35), crunch], 1, 28);
    let snapshot = b.build(SnapshotHeader {
        profile_id: id,
        host: "h-0".into(),
        agent_id: "agent-0".into(),
        sequence: 0,
        window_start_ms: start.timestamp_millis(),
        window_end_ms: start.timestamp_millis() + 2_000,
        event: EventKind::Wall,
        period: 10_000_000,
        frequency_hz: 100,
    });
    store_window(&db, &snapshot).await;
    fn source<'a>(root: &'a FlameNode, path: &[&str]) -> (Option<&'a str>, Option<u32>) {
        let node = path.iter().fold(root, |node, name| {
            let child = node.children.iter().find(|c| c.name == *name);
            child.unwrap_or_else(|| panic!("no {name} under {}", node.name))
        });
        (node.file.as_deref(), node.line)
    }
    for compacted in [false, true] {
        if compacted {
            compact_profile(&db, id).await.unwrap();
        }
        let read = odp_store::read(&db, &odp_store::Read::profile(id))
            .await
            .unwrap();
        let root = read.flame_graph(usize::MAX, None).unwrap();
        let file = Some("hot_python.py");
        assert_eq!(source(&root, &["<module>"]), (file, Some(41)));
        assert_eq!(source(&root, &["<module>", "main"]), (file, Some(34)));
        let crunch = source(&root, &["<module>", "main", "crunch_numbers"]);
        assert_eq!(crunch, (file, Some(15)), "compacted: {compacted}");
        assert_eq!(
            source(&root, &["<module>", "main", "light_work"]),
            (file, Some(21))
        );
        assert_eq!((root.file.as_deref(), root.line), (None, None));
    }
}

/// A running profile read in parts, each part the windows stored since the
/// last read, sums to what reading it whole gives, periods weighted alike;
/// another profile's windows in between are not read.
async fn a_running_profile_read_in_parts_sums_as_read_whole(db: Database) {
    let start = Utc::now() - Duration::hours(1);
    let (id, other) = (Uuid::new_v4(), Uuid::new_v4());
    insert_profile(&db, id, 0, "running", start).await;
    let (mut table, mut sums) = (StackTable::default(), FrameSums::default());
    let mut last = 0;
    let mut read = Vec::new();
    for (batch, sequences) in [0..2u64, 2..3, 3..6].into_iter().enumerate() {
        for sequence in sequences {
            let mut w = window(id, 0, start, sequence);
            // The agent lowered its rate for a while.
            w.period *= 1 + sequence % 3;
            store_window(&db, &w).await;
            store_window(&db, &window(other, 1, start, sequence + 10 * batch as u64)).await;
        }
        let new = load_windows_after(&db, id, last).await.unwrap();
        assert!(new.last_window > last);
        read.extend(new.profile.windows.iter().map(|w| w.sequence));
        sums.add(&new.profile, &mut table);
        last = new.last_window;
    }
    assert_eq!(read, [0, 1, 2, 3, 4, 5], "each window read once, in order");
    let nothing_new = load_windows_after(&db, id, last).await.unwrap();
    assert_eq!(nothing_new.last_window, last);
    assert!(nothing_new.profile.windows.is_empty());

    let whole = profile_frames(&db, id).await.unwrap();
    let parts = sums.frames(&table);
    assert_eq!(
        (parts.snapshots, parts.samples),
        (whole.snapshots, whole.samples)
    );
    let by_id = |data: &ProfileFrames| {
        let mut stacks: Vec<(Uuid, u64)> =
            data.stacks.iter().map(|s| (s.stack_id, s.count)).collect();
        stacks.sort();
        stacks
    };
    assert_eq!(by_id(&parts), by_id(&whole));
    let raw: u64 = load_profile(&db, id).await.unwrap().total_samples();
    assert_ne!(
        whole.samples, raw,
        "the periods differ, so counts are weighted"
    );
}

on_both_backends!(
    a_python_profiles_flame_graph_names_files_and_lines,
    legacy_rows_load_and_compact,
    loads_what_was_stored,
    compaction_keeps_totals_and_is_idempotent,
    windows_arriving_after_compaction_join_the_profile,
    profiles_to_compact_waits_out_the_grace,
    profiles_to_compact_finds_the_ended_among_the_running,
    a_running_profile_read_in_parts_sums_as_read_whole,
);
