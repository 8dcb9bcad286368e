//! Service days on both backends: a settled day of hour rollups is built
//! into one block with a window per host, and every read of the whole day
//! answers from it exactly as from its hours; a late window, then
//! retention, make the day stale, and it is read from its hours until it
//! is rebuilt or dropped.

mod block_fixtures;
mod support;

use block_fixtures::{count, insert_profile, store_window, window};
use chrono::{DateTime, Duration, DurationRound, Utc};
use odp_core::filter::{StackFilter, ThreadFilter};
use odp_core::Snapshot;
use odp_devstack::fixtures::{answer, service_read, Answer};
use odp_store::{Database, DayBuilt, Read, ReadScope, Spans};
use support::on_both_backends;
use uuid::Uuid;

const HOURS: [i64; 3] = [1, 9, 23];

/// Three hosts, each with a profile of three windows in hours 1, 9 and 23
/// of `day`, compacted and rolled up.
async fn a_day_of_a_fleet(db: &Database, day: DateTime<Utc>) -> (Vec<Uuid>, Vec<Snapshot>) {
    let (mut profiles, mut all) = (Vec::new(), Vec::new());
    for host in 0..3 {
        for hour in HOURS {
            let start = day + Duration::hours(hour) + Duration::minutes(10 * host as i64);
            let id = Uuid::new_v4();
            insert_profile(db, id, host, "finished", start + Duration::minutes(1)).await;
            for sequence in 0..3 {
                let w = window(id, host, start, sequence);
                store_window(db, &w).await;
                all.push(w);
            }
            odp_store::compact_profile(db, id).await.unwrap();
            profiles.push(id);
        }
    }
    let done = odp_store::roll_up(db, &profiles).await.unwrap();
    assert_eq!(done.rolled, 9);
    (profiles, all)
}

/// What the tests compare, all over the whole day: everything, one host,
/// one thread, all but frame `gc`; then part of the day (which a day
/// block cannot serve).
fn day_reads(day: DateTime<Utc>) -> Vec<Read> {
    let whole = service_read(day, day + Duration::days(1));
    vec![
        whole.clone(),
        Read {
            scope: ReadScope::Service {
                service: "fleet".into(),
                hosts: vec!["h-1".into()],
            },
            ..whole.clone()
        },
        Read {
            thread: Some(ThreadFilter::new("^worker-").unwrap()),
            ..whole.clone()
        },
        Read {
            stacks: StackFilter::new(None, Some("^gc$")).unwrap(),
            ..whole
        },
        service_read(day + Duration::hours(2), day + Duration::days(1)),
    ]
}

async fn answers(db: &Database, day: DateTime<Utc>) -> Vec<Answer> {
    let mut out = Vec::new();
    for read in day_reads(day) {
        out.push(answer(odp_store::read(db, &read).await.unwrap()));
    }
    out
}

/// How many rollup blocks (hours, or one day) a read of the whole day
/// selected from.
async fn blocks_read(db: &Database, day: DateTime<Utc>) -> usize {
    let whole = &day_reads(day)[0];
    odp_store::read(db, whole).await.unwrap().rollups.len()
}

/// The days waiting to be built (settled at once).
async fn stale(db: &Database) -> Vec<(String, DateTime<Utc>)> {
    odp_store::days_to_build(db, std::time::Duration::ZERO, 10)
        .await
        .unwrap()
}

/// Per window a trend counts: (host, samples).
async fn trend_windows(db: &Database, day: DateTime<Utc>, spans: Spans) -> Vec<(String, u64)> {
    let (_, windows) =
        odp_store::read_window_counts(db, &day_reads(day)[0], &StackFilter::default(), spans)
            .await
            .unwrap()
            .expect("windows");
    let mut counts: Vec<(String, u64)> = windows.into_iter().map(|w| (w.host, w.samples)).collect();
    counts.sort();
    counts
}

/// A settled day answers every read of the whole day as its hours did,
/// from one block; a trend asking for whole days gets a window per host.
async fn a_day_reads_as_its_hours(db: Database) {
    let day = (Utc::now() - Duration::days(3))
        .duration_trunc(Duration::days(1))
        .unwrap();
    let (_, all) = a_day_of_a_fleet(&db, day).await;
    let total: u64 = all.iter().map(Snapshot::total_samples).sum();
    let before = answers(&db, day).await;
    assert_eq!(before[0].samples, total);
    assert_eq!(blocks_read(&db, day).await, HOURS.len());
    let stored = trend_windows(&db, day, Spans::Range).await;
    assert_eq!(stored.len(), 27, "no day yet: every window");

    assert_eq!(stale(&db).await, [("fleet".to_owned(), day)]);
    let built = odp_store::build_day(&db, "fleet", day).await.unwrap();
    assert_eq!(
        built,
        DayBuilt::Built {
            hours: 3,
            windows: 3,
            samples: total
        },
        "a window per host"
    );
    assert!(stale(&db).await.is_empty());
    assert_eq!(count(&db, "select count(*) from service_days").await, 1);
    let sql = "select block from service_days";
    let block: Vec<u8> = match &db {
        Database::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
        Database::MySql(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
    }
    .unwrap();
    assert_eq!(&block[..5], b"ODPP\x02", "an LZ4 block");
    assert_eq!(answers(&db, day).await, before, "the same answers");
    assert_eq!(blocks_read(&db, day).await, 1, "read from the day");

    let per_host = trend_windows(&db, day, Spans::Range).await;
    let expected: Vec<(String, u64)> = (0..3)
        .map(|h| {
            let host = format!("h-{h}");
            let samples = all
                .iter()
                .filter(|w| w.host == host)
                .map(Snapshot::total_samples)
                .sum();
            (host, samples)
        })
        .collect();
    assert_eq!(per_host, expected);
    assert_eq!(trend_windows(&db, day, Spans::Stored).await, stored);
}

/// A late window makes the day stale: reads take the hours (with the
/// window) until the day is rebuilt; once retention took every hour, the
/// day goes too. Cached blocks of the hours and day never answer for
/// their rewritten rows.
async fn a_changed_hour_makes_its_day_stale(db: Database) {
    // With the block cache on: hours and days written again are read anew.
    odp_store::block_cache().set_capacity(64 << 20);
    let day = (Utc::now() - Duration::days(3))
        .duration_trunc(Duration::days(1))
        .unwrap();
    let (profiles, all) = a_day_of_a_fleet(&db, day).await;
    let total: u64 = all.iter().map(Snapshot::total_samples).sum();
    odp_store::build_day(&db, "fleet", day).await.unwrap();

    let late = window(profiles[1], 0, day + Duration::hours(9), 3);
    store_window(&db, &late).await;
    odp_store::compact_profile(&db, profiles[1]).await.unwrap();
    let with_late = answers(&db, day).await;
    assert_eq!(with_late[0].samples, total + late.total_samples());
    assert_eq!(blocks_read(&db, day).await, HOURS.len(), "the hours");
    assert_eq!(stale(&db).await, [("fleet".to_owned(), day)]);
    odp_store::build_day(&db, "fleet", day).await.unwrap();
    assert_eq!(blocks_read(&db, day).await, 1);
    assert_eq!(answers(&db, day).await, with_late);

    odp_store::retention::delete_expired(&db, day + Duration::days(2), 100)
        .await
        .unwrap();
    assert_eq!(count(&db, "select count(*) from service_rollups").await, 0);
    assert_eq!(answers(&db, day).await[0].samples, 0);
    assert_eq!(stale(&db).await, [("fleet".to_owned(), day)]);
    let dropped = odp_store::build_day(&db, "fleet", day).await.unwrap();
    assert_eq!(dropped, DayBuilt::Dropped);
    assert_eq!(count(&db, "select count(*) from service_days").await, 0);
    assert!(stale(&db).await.is_empty());
}

/// Runs `sql` on either backend.
async fn execute(db: &Database, sql: &str) {
    match db {
        Database::Postgres(pool) => sqlx::query(sql).execute(pool).await.map(drop),
        Database::MySql(pool) => sqlx::query(sql).execute(pool).await.map(drop),
    }
    .unwrap();
}

/// With the block cache on, a read again takes its hours and days from
/// memory: blocks overwritten in the database behind the same `built_at`
/// are not read. A block written again (a later `built_at`) is fetched.
async fn a_read_again_takes_its_blocks_from_memory(db: Database) {
    odp_store::block_cache().set_capacity(64 << 20);
    let day = (Utc::now() - Duration::days(3))
        .duration_trunc(Duration::days(1))
        .unwrap();
    a_day_of_a_fleet(&db, day).await;
    odp_store::build_day(&db, "fleet", day).await.unwrap();
    let before = answers(&db, day).await;
    let trends = (
        trend_windows(&db, day, Spans::Range).await,
        trend_windows(&db, day, Spans::Stored).await,
    );
    let hits = odp_store::block_cache().stats().hits;

    let garbage = match &db {
        Database::Postgres(_) => r"'\x00'::bytea",
        Database::MySql(_) => "X'00'",
    };
    for table in ["service_days", "service_rollups"] {
        execute(&db, &format!("update {table} set block = {garbage}")).await;
    }
    assert_eq!(answers(&db, day).await, before, "from memory");
    let trends_again = (
        trend_windows(&db, day, Spans::Range).await,
        trend_windows(&db, day, Spans::Stored).await,
    );
    assert_eq!(trends_again, trends, "trends from memory");
    let hits = odp_store::block_cache().stats().hits - hits;
    assert!(
        hits >= 4 + 3,
        "each read of the whole day and the hours: {hits} hits"
    );

    let rebuilt = match &db {
        Database::Postgres(_) => {
            "update service_days set built_at = built_at + interval '1 second'"
        }
        Database::MySql(_) => "update service_days set built_at = built_at + interval 1 second",
    };
    execute(&db, rebuilt).await;
    let whole = &day_reads(day)[0];
    let err = odp_store::read(&db, whole).await.unwrap_err();
    assert!(
        err.to_string().contains("rollup"),
        "the day's new write is read: {err}"
    );
}

/// Every settled day is listed, oldest first.
async fn every_settled_day_is_listed(db: Database) {
    let today = Utc::now().duration_trunc(Duration::days(1)).unwrap();
    let days: Vec<DateTime<Utc>> = (2..5).rev().map(|d| today - Duration::days(d)).collect();
    for &day in &days {
        a_day_of_a_fleet(&db, day).await;
    }
    let listed: Vec<DateTime<Utc>> = stale(&db).await.into_iter().map(|(_, d)| d).collect();
    assert_eq!(listed, days);
}

/// A day that has not settled is left to its hours.
async fn a_day_is_built_once_settled(db: Database) {
    let today = Utc::now().duration_trunc(Duration::days(1)).unwrap();
    a_day_of_a_fleet(&db, today - Duration::days(1)).await;
    let settled = odp_store::days_to_build(&db, std::time::Duration::from_secs(86_400 * 2), 10)
        .await
        .unwrap();
    assert!(settled.is_empty(), "{settled:?}");
    assert_eq!(stale(&db).await.len(), 1);
}

on_both_backends!(
    a_day_reads_as_its_hours,
    a_read_again_takes_its_blocks_from_memory,
    a_changed_hour_makes_its_day_stale,
    a_day_is_built_once_settled,
    every_settled_day_is_listed,
);
