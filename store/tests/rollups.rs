//! Reads and service rollups on both backends: an aggregate over several
//! profiles is the sum of their windows; host, thread and time filters
//! give exact totals; rolled up, every read answers the same; a late
//! window of a rolled-up profile is read, then compacted into its rollup.

mod block_fixtures;
mod support;

use block_fixtures::{
    count, exec, insert_profile, leaves, snapshot_leaves, store_window, window, Arg,
};
use chrono::{DateTime, Duration, DurationRound, Utc};
use odp_core::Snapshot;
use odp_core::WeightedStack;
use odp_devstack::fixtures::{fleet_answers, fleet_reads};
use odp_profile::{Level, Profile, Window};
use odp_store::{Database, Read, Spans};
use support::on_both_backends;
use uuid::Uuid;

/// The samples of `windows` that `keep` selects, on thread `tid` if given.
fn samples(windows: &[Snapshot], keep: impl Fn(&Snapshot) -> bool, tid: Option<u32>) -> u64 {
    windows
        .iter()
        .filter(|w| keep(w))
        .flat_map(|w| &w.stacks)
        .filter(|s| tid.is_none_or(|t| s.tid == t))
        .map(|s| s.count)
        .sum()
}

/// Four hosts, a profile each of 8 windows crossing an hour boundary,
/// compacted; returns the start, the profiles and every window.
async fn fleet(db: &Database) -> (DateTime<Utc>, Vec<Uuid>, Vec<Snapshot>) {
    let start = (Utc::now() - Duration::days(2))
        .duration_trunc(Duration::hours(1))
        .unwrap()
        + Duration::minutes(59);
    let (mut profiles, mut all) = (Vec::new(), Vec::new());
    for host in 0..4 {
        let id = Uuid::new_v4();
        insert_profile(db, id, host, "finished", start + Duration::minutes(2)).await;
        for sequence in 0..8 {
            let w = window(id, host, start, sequence);
            store_window(db, &w).await;
            all.push(w);
        }
        odp_store::compact_profile(db, id).await.unwrap();
        profiles.push(id);
    }
    (start, profiles, all)
}

/// An aggregate is the sum of its windows; each filter gives the exact
/// total of what it keeps.
async fn aggregates_are_exact_sums(db: Database) {
    let (start, _, all) = fleet(&db).await;
    let got = fleet_answers(&db, start).await;
    let whole = &got[0];
    assert_eq!(whole.samples, samples(&all, |_| true, None));
    assert_eq!((whole.profiles, whole.snapshots), (4, 32));
    assert_eq!(leaves(&whole.stacks), snapshot_leaves(&all));
    let per_host: Vec<(String, u64)> = whole.hosts.iter().map(|h| (h.0.clone(), h.1)).collect();
    let expected: Vec<(String, u64)> = (0..4)
        .map(|h| {
            let host = format!("h-{h}");
            (host.clone(), samples(&all, |w| w.host == host, None))
        })
        .collect();
    assert_eq!(per_host, expected);
    assert_eq!(
        got[1].samples,
        samples(&all, |w| w.host == "h-1" || w.host == "h-3", None)
    );
    assert_eq!(got[1].hosts.len(), 2);
    assert_eq!(got[2].samples, samples(&all, |_| true, Some(1)), "worker-1");
    let (from, to) = (
        (start + Duration::seconds(25)).timestamp_millis(),
        (start + Duration::seconds(65)).timestamp_millis(),
    );
    let in_time = |w: &Snapshot| w.window_end_ms > from && w.window_start_ms < to;
    assert_eq!(got[3].samples, samples(&all, in_time, None));
    assert_eq!(got[3].snapshots, 4 * 5, "windows 2..=6 of each host");
    assert_eq!(
        got[4].samples,
        samples(&all, |_| true, None) - samples(&all, |_| true, Some(2)),
        "all but gc"
    );
}

/// Each of `profiles` read on its own: its windows (by sequence) and its
/// stacks (sorted).
async fn each_alone(db: &Database, profiles: &[Uuid]) -> Vec<(Vec<Window>, Vec<WeightedStack>)> {
    let mut each = Vec::new();
    for &id in profiles {
        let mut windows = odp_store::load_profile(db, id).await.unwrap().windows;
        windows.sort_by_key(|w| w.sequence);
        let mut stacks = odp_store::read(db, &Read::profile(id))
            .await
            .unwrap()
            .stacks();
        stacks.sort_by(|a, b| a.frames.cmp(&b.frames));
        each.push((windows, stacks));
    }
    each
}

/// Rolled up, every read answers the same, of the service and of each
/// profile alone, and the profiles' own blocks are gone (one copy of the
/// samples); a late window is read before and after it is compacted into
/// the rollup.
async fn rollups_answer_as_the_profiles_they_hold(db: Database) {
    let (start, profiles, _) = fleet(&db).await;
    let before = fleet_answers(&db, start).await;
    let alone_before = each_alone(&db, &profiles).await;

    let mut ready = odp_store::profiles_to_roll_up(&db, 100).await.unwrap();
    ready.sort();
    let mut expected = profiles.clone();
    expected.sort();
    assert_eq!(ready, expected);
    let done = odp_store::roll_up(&db, &ready).await.unwrap();
    assert_eq!((done.rolled, done.alone), (4, 0), "they share their stacks");
    assert_eq!(count(&db, "select count(*) from service_rollups").await, 2);
    assert!(odp_store::profiles_to_roll_up(&db, 100)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(fleet_answers(&db, start).await, before, "the same answers");
    let whole = odp_store::read(&db, &fleet_reads(start)[0]).await.unwrap();
    assert!(!whole.rollups.is_empty(), "read through the rollups");
    assert_eq!(
        count(
            &db,
            "select count(*) from profile_blocks where block is null"
        )
        .await,
        4,
        "their blocks are dropped"
    );
    assert_eq!(each_alone(&db, &profiles).await, alone_before);

    let late = window(profiles[2], 2, start, 8);
    store_window(&db, &late).await;
    let with_late = fleet_answers(&db, start).await;
    assert_eq!(
        with_late[0].samples,
        before[0].samples + late.total_samples()
    );
    assert_eq!(with_late[0].snapshots, 33);
    odp_store::compact_profile(&db, profiles[2]).await.unwrap();
    assert_eq!(fleet_answers(&db, start).await, with_late);
    assert_eq!(
        count(&db, "select sum(samples) from service_rollups").await as u64,
        with_late[0].samples,
        "the late window is in its rollup"
    );
    assert_eq!(
        count(
            &db,
            "select count(*) from profile_blocks where block is null"
        )
        .await,
        4,
        "and not in a block of its profile"
    );
    let alone = each_alone(&db, &profiles).await;
    assert_eq!(alone[2].0.len(), 9, "the late window joined its profile");
    assert_eq!(
        alone[2].1.iter().map(|s| s.count).sum::<u64>(),
        alone_before[2].1.iter().map(|s| s.count).sum::<u64>() + late.total_samples()
    );
}

/// Per window, its samples and those with `serve` on their stack, sorted
/// by (host, start).
fn expected_counts(windows: &[Snapshot]) -> Vec<(String, i64, u64, u64)> {
    let mut counts: Vec<(String, i64, u64, u64)> = windows
        .iter()
        .map(|w| {
            let serve = w
                .stacks
                .iter()
                .filter(|s| {
                    s.frames
                        .iter()
                        .any(|&f| w.frames[f as usize].function == "serve")
                })
                .map(|s| s.count)
                .sum();
            (w.host.clone(), w.window_start_ms, w.total_samples(), serve)
        })
        .collect();
    counts.sort();
    counts
}

async fn window_counts(db: &Database, start: DateTime<Utc>) -> Vec<(String, i64, u64, u64)> {
    let serve = odp_core::filter::StackFilter::new(Some("^serve$"), None).unwrap();
    let (event, windows) =
        odp_store::read_window_counts(db, &fleet_reads(start)[0], &serve, Spans::Stored)
            .await
            .unwrap()
            .expect("windows");
    assert_eq!(event, odp_core::EventKind::CpuClock);
    let mut counts: Vec<(String, i64, u64, u64)> = windows
        .into_iter()
        .map(|w| (w.host, w.start_ms, w.samples, w.matched))
        .collect();
    counts.sort();
    counts
}

/// A function's trend is made of each window's own counts, read from the
/// profiles' blocks and, once rolled up, from their rollups alike.
async fn window_counts_are_each_windows_own(db: Database) {
    let (start, profiles, all) = fleet(&db).await;
    let expected = expected_counts(&all);
    assert_eq!(expected.len(), 32);
    assert!(expected.iter().all(|(_, _, n, m)| m < n && *m > 0));
    assert_eq!(window_counts(&db, start).await, expected);
    let done = odp_store::roll_up(&db, &profiles).await.unwrap();
    assert_eq!(done.rolled, 4);
    assert_eq!(window_counts(&db, start).await, expected, "rolled up");
    let nothing = odp_store::read_window_counts(
        &db,
        &odp_devstack::fixtures::service_read(start - Duration::days(9), start - Duration::days(8)),
        &odp_core::filter::StackFilter::default(),
        Spans::Range,
    )
    .await
    .unwrap();
    assert!(nothing.is_none());
}

/// A profile alone in its service waits for others before it is rolled
/// up or read alone.
async fn a_lone_profile_waits_for_others(db: Database) {
    let start = Utc::now() - Duration::hours(3);
    let id = Uuid::new_v4();
    insert_profile(&db, id, 0, "finished", start).await;
    store_window(&db, &window(id, 0, start, 0)).await;
    odp_store::compact_profile(&db, id).await.unwrap();
    let done = odp_store::roll_up(&db, &[id]).await.unwrap();
    assert_eq!((done.rolled, done.alone), (0, 0));
    assert_eq!(odp_store::profiles_to_roll_up(&db, 10).await.unwrap(), [id]);
    assert_eq!(count(&db, "select count(*) from service_rollups").await, 0);
}

/// Every rollup's block.
async fn rollup_blocks(db: &Database) -> Vec<Vec<u8>> {
    let sql = "select block from service_rollups";
    match db {
        Database::Postgres(pool) => sqlx::query_scalar(sql).fetch_all(pool).await,
        Database::MySql(pool) => sqlx::query_scalar(sql).fetch_all(pool).await,
    }
    .unwrap()
}

/// Rollups are written as deflate blocks (version 1); rewritten as LZ4
/// (version 2, as days are), they read the same.
async fn rollups_of_either_block_version_read_the_same(db: Database) {
    let (start, profiles, _) = fleet(&db).await;
    let before = fleet_answers(&db, start).await;
    let done = odp_store::roll_up(&db, &profiles).await.unwrap();
    assert_eq!((done.rolled, done.alone), (4, 0));
    let blocks = rollup_blocks(&db).await;
    assert_eq!(blocks.len(), 2);
    for block in blocks {
        assert_eq!(&block[..5], b"ODPP\x01", "a deflate block");
        let lz4 = Profile::decode(&block).unwrap().encode(Level::Quick);
        assert_eq!(lz4[4], 2);
        exec(
            &db,
            "update service_rollups set block = ? where block = ?",
            vec![Arg::Bytes(lz4), Arg::Bytes(block)],
        )
        .await;
    }
    assert!(rollup_blocks(&db).await.iter().all(|b| b[4] == 2));
    assert_eq!(fleet_answers(&db, start).await, before, "the same answers");
}

on_both_backends!(
    aggregates_are_exact_sums,
    rollups_of_either_block_version_read_the_same,
    rollups_answer_as_the_profiles_they_hold,
    a_lone_profile_waits_for_others,
    window_counts_are_each_windows_own,
);
