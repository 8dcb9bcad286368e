//! Service rollups read as the profiles they hold, against a real
//! Postgres: an aggregate (whole, narrowed to hosts, threads, a time
//! window and frames) answers the same before and after the profiles are
//! rolled up; a window compacted into a rolled-up profile later is added
//! to its rollup; retention and downsampling keep rollups and profile
//! blocks equal; a worker builds a settled day, which reads then use.

mod support;

use chrono::{DateTime, Duration, DurationRound, Utc};
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
use odp_core::{EventKind, Frame, Snapshot};
use odp_devstack::fixtures::{answer, fleet_answers, fleet_reads, fleet_window, service_read};
use odp_devstack::{Stack, StackOptions};
use odp_pipeline::retention::{run_once, RetentionOptions};
use odp_store::Database;
use sqlx::PgPool;
use support::count;
use support::fleet::{metric, Fleet};
use uuid::Uuid;

async fn insert_profile(pool: &PgPool, id: Uuid, host: usize, finished_at: DateTime<Utc>) {
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by,
                               service, created_at, updated_at, finished_at)
         values ($1, $2, '{\"by\": \"pid\", \"value\": 7}', 60000, 99, 'finished', 'test',
                 'fleet', $3, $3, $3)",
    )
    .bind(id)
    .bind(format!("h-{host}"))
    .bind(finished_at)
    .execute(pool)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollups_answer_as_the_profiles_they_hold() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = Database::from(&pool);
    // Six hosts, each a profile of 8 windows crossing an hour boundary.
    let start = (Utc::now() - Duration::days(2))
        .duration_trunc(Duration::hours(1))
        .unwrap()
        + Duration::minutes(59);
    let mut profiles = Vec::new();
    for host in 0..6 {
        let id = Uuid::new_v4();
        insert_profile(&pool, id, host, start + Duration::minutes(2)).await;
        let windows: Vec<Snapshot> = (0..8).map(|s| fleet_window(id, host, start, s)).collect();
        let refs: Vec<&Snapshot> = windows.iter().collect();
        odp_store::store_snapshots(&pool, &refs).await.unwrap();
        odp_store::compact_profile(&pool, id).await.unwrap();
        profiles.push(id);
    }
    let before = fleet_answers(&db, start).await;
    assert_eq!(before[0].hosts.len(), 6);
    assert!(before[1].samples < before[0].samples && before[1].samples > 0);

    let ready = odp_store::profiles_to_roll_up(&pool, 100).await.unwrap();
    assert_eq!(ready.len(), 6);
    let done = odp_store::roll_up(&pool, &ready).await.unwrap();
    assert_eq!((done.rolled, done.alone), (6, 0), "they share their stacks");
    assert_eq!(
        count(&pool, "select count(*) from service_rollups").await,
        2,
        "two hours"
    );
    assert_eq!(
        fleet_answers(&db, start).await,
        before,
        "rolled up, the same answers"
    );
    let whole = odp_store::read(&pool, &fleet_reads(start)[0])
        .await
        .unwrap();
    assert!(
        !whole.rollups.is_empty(),
        "the read went through the rollups"
    );

    // A late window of a rolled-up profile: compacted into its rollup.
    let late = fleet_window(profiles[2], 2, start, 8);
    odp_store::store_snapshots(&pool, &[&late]).await.unwrap();
    let with_late = fleet_answers(&db, start).await;
    assert_eq!(
        with_late[0].samples,
        before[0].samples + late.total_samples()
    );
    odp_store::compact_profile(&pool, profiles[2])
        .await
        .unwrap();
    assert_eq!(fleet_answers(&db, start).await, with_late);

    // Downsampling merges the windows in the rollups as in the rows;
    // retention drops the same ones from both.
    let options = RetentionOptions {
        retention_days: 365,
        downsample_after_days: 1,
        downsample_bucket_secs: 600,
        interval_secs: 3600,
        batch: 3,
        ..RetentionOptions::default()
    };
    let pass = run_once(&db, &options, Utc::now()).await.unwrap().unwrap();
    assert!(pass.downsampled.buckets > 0);
    let downsampled = fleet_answers(&db, start).await;
    assert_eq!(downsampled[0].samples, with_late[0].samples);
    // The first hour's windows (merged into one per host) end before it.
    let cutoff = start + Duration::minutes(1) + Duration::seconds(5);
    odp_store::retention::delete_expired(&pool, cutoff, 2)
        .await
        .unwrap();
    let expired = fleet_answers(&db, start).await;
    assert!(expired[0].samples > 0 && expired[0].samples < downsampled[0].samples);
    // One copy of the samples: the profiles' blocks are gone, and each
    // profile read on its own (out of the rollups) adds up to the answer.
    assert_eq!(
        count(
            &pool,
            "select count(*) from profile_blocks where block is not null"
        )
        .await,
        0
    );
    let mut alone = 0;
    for &id in &profiles {
        let read = odp_store::Read::profile(id);
        alone += odp_store::read(&pool, &read).await.unwrap().samples();
    }
    assert_eq!(alone, expired[0].samples);
    pool.close().await;
    stack.stop().unwrap();
}

/// A window whose stacks only this host has (nothing to share).
fn unshared_window(profile: Uuid, host: usize, start: DateTime<Utc>) -> Snapshot {
    let mut b = SnapshotBuilder::new();
    for handler in 0..40u64 {
        let frames: Vec<Frame> = (0..8)
            .map(|depth| Frame::function(format!("host{host}.Handler{handler:02}.step{depth}")))
            .collect();
        b.add(&frames, 1, 1 + handler % 3);
    }
    b.build(SnapshotHeader {
        profile_id: profile,
        host: format!("h-{host}"),
        agent_id: format!("agent-{host}"),
        sequence: 0,
        window_start_ms: start.timestamp_millis(),
        window_end_ms: start.timestamp_millis() + 10_000,
        event: EventKind::CpuClock,
        period: 10_101_010,
        frequency_hz: 99,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_that_share_nothing_are_read_on_their_own() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let start = Utc::now() - Duration::hours(3);
    let store = |id: Uuid, host: usize| {
        let pool = pool.clone();
        async move {
            insert_profile(&pool, id, host, start + Duration::minutes(1)).await;
            let window = unshared_window(id, host, start);
            odp_store::store_snapshots(&pool, &[&window]).await.unwrap();
            odp_store::compact_profile(&pool, id).await.unwrap();
        }
    };
    // Alone in its service's hour, a profile waits for others.
    let first = Uuid::new_v4();
    store(first, 0).await;
    let done = odp_store::roll_up(&pool, &[first]).await.unwrap();
    assert_eq!((done.rolled, done.alone), (0, 0));
    let second = Uuid::new_v4();
    store(second, 1).await;
    let before = answer(
        odp_store::read(&pool, &service_read(start, Utc::now()))
            .await
            .unwrap(),
    );
    // Together, a rollup would be no smaller than their blocks.
    let done = odp_store::roll_up(&pool, &[first, second]).await.unwrap();
    assert_eq!((done.rolled, done.alone), (0, 2));
    assert_eq!(
        count(&pool, "select count(*) from service_rollups").await,
        0
    );
    let after = odp_store::read(&pool, &service_read(start, Utc::now()))
        .await
        .unwrap();
    assert!(after.rollups.is_empty());
    assert_eq!(answer(after), before);
    pool.close().await;
    stack.stop().unwrap();
}

/// A worker compacts and rolls up the profiles of a day three days ago,
/// then builds the day; a read of the whole day then takes its one block,
/// and answers as the windows did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_builds_a_settled_day_which_reads_then_use() {
    let fleet = Fleet::start("days").await;
    let pool = &fleet.pool;
    let day = (Utc::now() - Duration::days(3))
        .duration_trunc(Duration::days(1))
        .unwrap();
    // Three hosts, each a profile of 8 windows crossing noon.
    let start = day + Duration::hours(11) + Duration::minutes(59);
    for host in 0..3 {
        let id = Uuid::new_v4();
        insert_profile(pool, id, host, start + Duration::minutes(2)).await;
        let windows: Vec<Snapshot> = (0..8).map(|s| fleet_window(id, host, start, s)).collect();
        let refs: Vec<&Snapshot> = windows.iter().collect();
        odp_store::store_snapshots(pool, &refs).await.unwrap();
    }
    let whole = service_read(day, day + Duration::days(1));
    let before = answer(odp_store::read(pool, &whole).await.unwrap());
    assert_eq!(before.snapshots, 24);

    let (worker, port) = fleet.worker("days", 100);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while count(pool, "select count(*) from service_days").await == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no day built in 120 s: {}",
            worker.log_tail(40)
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    assert_eq!(
        count(pool, "select hours::bigint from service_days").await,
        2,
        "the hours before and after noon"
    );
    assert!(metric(port, "odp_pipeline_service_days_built", "").await >= 1.0);
    let after = odp_store::read(pool, &whole).await.unwrap();
    assert_eq!(after.rollups.len(), 1, "the day's one block");
    assert_eq!(answer(after), before);
}
