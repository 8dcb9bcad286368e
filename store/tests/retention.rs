//! Retention on both backends: expiry deletes exactly the windows that
//! ended before the cutoff (from rows, profile blocks and rollups alike)
//! and then the ended profiles left empty; garbage collection deletes the
//! legacy stacks and frames nothing references; downsampling keeps every
//! total, tier after tier; the retention lock is held by one connection at a time;
//! rewriting an hour's rollups holds up no writer of another hour.

mod block_fixtures;
mod support;

use std::time::Duration as StdDuration;

use block_fixtures::{count, exec, insert_profile, leaves, store_window, window, Arg};
use chrono::{DateTime, Duration, DurationRound, Utc};
use odp_core::Snapshot;
use odp_store::downsample::{downsample, downsample_tiers, Downsampled, Tier};
use odp_store::retention::{collect_garbage, delete_expired, Collected, Expired, RetentionLock};
use odp_store::{Database, Read, ReadScope, StoreError};
use support::on_both_backends;
use uuid::Uuid;

fn service_read() -> Read {
    Read {
        scope: ReadScope::Service {
            service: "fleet".into(),
            hosts: Vec::new(),
        },
        ..Read::profile(Uuid::nil())
    }
}

/// Profiles of `hosts`, 8 windows each from `start`, compacted and (when
/// several share the hour) rolled up.
async fn fleet(
    db: &Database,
    hosts: std::ops::Range<usize>,
    start: DateTime<Utc>,
) -> Vec<Snapshot> {
    let mut all = Vec::new();
    let mut ids = Vec::new();
    for host in hosts {
        let id = Uuid::new_v4();
        insert_profile(db, id, host, "finished", start + Duration::minutes(2)).await;
        for sequence in 0..8 {
            let w = window(id, host, start, sequence);
            store_window(db, &w).await;
            all.push(w);
        }
        odp_store::compact_profile(db, id).await.unwrap();
        ids.push(id);
    }
    odp_store::roll_up(db, &ids).await.unwrap();
    all
}

fn total(windows: &[&Snapshot]) -> u64 {
    windows.iter().map(|w| w.total_samples()).sum()
}

/// The windows and samples of the profiles of `windows`, each read on its
/// own: from its block, or out of its service's rollups once rolled up.
async fn profiles_read(db: &Database, windows: &[Snapshot]) -> (usize, u64) {
    let mut ids: Vec<Uuid> = windows.iter().map(|w| w.profile_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut read = (0, 0);
    for id in ids {
        let profile = odp_store::load_profile(db, id).await.unwrap();
        read.0 += profile.windows.len();
        read.1 += profile.total_samples();
    }
    read
}

/// Expiry deletes exactly the old windows, everywhere they are held, and
/// the ended profiles once empty; a second run finds nothing.
async fn expiry_deletes_exactly_what_is_old(db: Database) {
    let old_start = (Utc::now() - Duration::days(10))
        .duration_trunc(Duration::hours(1))
        .unwrap();
    let old = fleet(&db, 0..2, old_start).await;
    assert_eq!(count(&db, "select count(*) from service_rollups").await, 1);
    assert_eq!(
        count(
            &db,
            "select count(*) from profile_blocks where block is not null"
        )
        .await,
        0,
        "rolled-up profiles keep no block of their own"
    );
    let recent = fleet(&db, 2..3, Utc::now() - Duration::hours(1)).await;

    // The first three windows of each old profile end before the cutoff.
    let cutoff = old_start + Duration::seconds(35);
    let expired = delete_expired(&db, cutoff, 2).await.unwrap();
    let gone: Vec<&Snapshot> = old.iter().filter(|w| w.sequence < 3).collect();
    assert_eq!(
        expired,
        Expired {
            snapshots: 6,
            samples: total(&gone),
            profiles: 0,
        }
    );
    let kept: Vec<&Snapshot> = old
        .iter()
        .filter(|w| w.sequence >= 3)
        .chain(&recent)
        .collect();
    let read = odp_store::read(&db, &service_read()).await.unwrap();
    assert_eq!(read.samples(), total(&kept));
    assert_eq!(read.snapshots, kept.len() as i64);
    let all: Vec<Snapshot> = old.iter().chain(&recent).cloned().collect();
    assert_eq!(profiles_read(&db, &all).await, (kept.len(), total(&kept)));
    assert_eq!(
        count(&db, "select sum(samples) from service_rollups").await as u64,
        total(&kept[..10]),
        "the old hour's rollup lost the same windows"
    );

    // All of the old profiles: their windows, blocks, rollup and rows.
    let cutoff = Utc::now() - Duration::days(5);
    let expired = delete_expired(&db, cutoff, 3).await.unwrap();
    assert_eq!(
        expired,
        Expired {
            snapshots: 10,
            samples: total(&kept[..10]),
            profiles: 2,
        }
    );
    assert_eq!(count(&db, "select count(*) from profiles").await, 1);
    assert_eq!(count(&db, "select count(*) from profile_blocks").await, 1);
    assert_eq!(count(&db, "select count(*) from service_rollups").await, 0);
    let read = odp_store::read(&db, &service_read()).await.unwrap();
    assert_eq!(read.samples(), total(&recent.iter().collect::<Vec<_>>()));
    assert_eq!(
        delete_expired(&db, cutoff, 3).await.unwrap(),
        Expired::default()
    );
}

/// Collection deletes the stacks no sample references and the frames no
/// stack references, and nothing else.
async fn garbage_collection_deletes_only_unreferenced_rows(db: Database) {
    let frames: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    for (n, frame) in frames.iter().enumerate() {
        exec(
            &db,
            "insert into frames (id, `function`, module) values (?, 'f', 'm')",
            vec![Arg::Id(*frame)],
        )
        .await;
        assert!(n < 3);
    }
    let used = Uuid::new_v4();
    let unused = Uuid::new_v4();
    let path = |ids: &[Uuid]| {
        ids.iter()
            .flat_map(|id| *id.as_bytes())
            .collect::<Vec<u8>>()
    };
    exec(
        &db,
        "insert into stacks (id, frame_ids) values (?, ?)",
        vec![Arg::Id(used), Arg::Bytes(path(&frames[..2]))],
    )
    .await;
    exec(
        &db,
        "insert into stacks (id, frame_ids) values (?, ?)",
        vec![Arg::Id(unused), Arg::Bytes(path(&frames[1..2]))],
    )
    .await;
    // A legacy window (samples as rows) ended long ago uses `used`.
    let old = Utc::now() - Duration::days(10);
    let mut legacy = window(Uuid::new_v4(), 0, old, 0);
    legacy.stacks.truncate(1);
    store_window(&db, &legacy).await;
    exec(&db, "update snapshots set block = null", vec![]).await;
    let id = count(&db, "select max(id) from snapshots").await;
    exec(
        &db,
        "insert into samples (snapshot_id, stack_id, tid, `count`) values (?, ?, 1, 5)",
        vec![Arg::Int(id), Arg::Id(used)],
    )
    .await;

    let collected = collect_garbage(&db, 1).await.unwrap();
    assert_eq!(
        collected,
        Collected {
            stacks: 1,
            frames: 1,
            stack_batches_skipped: 0,
        }
    );
    assert_eq!(count(&db, "select count(*) from stacks").await, 1);
    assert_eq!(count(&db, "select count(*) from frames").await, 2);
    assert_eq!(
        collect_garbage(&db, 100).await.unwrap(),
        Collected::default()
    );

    // Expired, the window takes its samples; its stack and frames follow.
    delete_expired(&db, Utc::now() - Duration::days(5), 10)
        .await
        .unwrap();
    assert_eq!(count(&db, "select count(*) from samples").await, 0);
    let collected = collect_garbage(&db, 100).await.unwrap();
    assert_eq!((collected.stacks, collected.frames), (1, 2));
    assert_eq!(count(&db, "select count(*) from frames").await, 0);
}

/// Downsampling merges each profile's windows per bucket in rows, blocks
/// and rollups, keeping every total; a second run has nothing to merge.
async fn downsampling_keeps_totals(db: Database) {
    // Windows 0..=5 start in one 10-minute bucket, 6 and 7 in the next.
    let start = (Utc::now() - Duration::days(2))
        .duration_trunc(Duration::hours(1))
        .unwrap()
        + Duration::minutes(59);
    let all = fleet(&db, 0..4, start).await;
    assert_eq!(count(&db, "select count(*) from service_rollups").await, 2);
    let before = odp_store::read(&db, &service_read()).await.unwrap();
    assert_eq!(before.samples(), total(&all.iter().collect::<Vec<_>>()));

    let cutoff = Utc::now() - Duration::days(1);
    let bucket = StdDuration::from_secs(600);
    let done = downsample(&db, cutoff, bucket, 3).await.unwrap();
    assert_eq!(
        done,
        Downsampled {
            buckets: 8,
            snapshots_merged: 24,
        }
    );
    assert_eq!(count(&db, "select count(*) from snapshots").await, 8);
    assert_eq!(
        count(&db, "select sum(merged_windows) from snapshots").await,
        32
    );
    assert_eq!(
        count(&db, "select sum(samples) from snapshots").await as u64,
        before.samples()
    );
    let after = odp_store::read(&db, &service_read()).await.unwrap();
    assert_eq!(after.samples(), before.samples());
    assert_eq!(after.snapshots, 8);
    assert_eq!(leaves(&after.stacks()), leaves(&before.stacks()));
    let hosts = |r: &odp_store::ReadResult| -> Vec<(String, u64)> {
        r.hosts
            .iter()
            .map(|h| (h.host.clone(), h.samples()))
            .collect()
    };
    assert_eq!(hosts(&after), hosts(&before));
    assert_eq!(
        count(&db, "select sum(samples) from service_rollups").await as u64,
        before.samples()
    );
    assert_eq!(
        profiles_read(&db, &all).await,
        (8, before.samples()),
        "each profile read alone merged the same windows"
    );
    assert_eq!(
        downsample(&db, cutoff, bucket, 3).await.unwrap(),
        Downsampled::default()
    );
}

/// Tiers: a coarser bucket merges the rows a finer one left, in rows,
/// blocks and rollups, every total unchanged; a bucket that does not
/// divide an hour is refused.
async fn tiers_merge_what_finer_tiers_left(db: Database) {
    // Windows 0..=5 start in the hour's first minute, 6 and 7 in its second.
    let start = (Utc::now() - Duration::days(2))
        .duration_trunc(Duration::hours(1))
        .unwrap();
    let all = fleet(&db, 0..4, start).await;
    let before = odp_store::read(&db, &service_read()).await.unwrap();
    let cutoff = Utc::now() - Duration::days(1);
    let (minute, hour) = (StdDuration::from_secs(60), StdDuration::from_secs(3600));
    assert_eq!(
        downsample(&db, cutoff, minute, 100).await.unwrap(),
        Downsampled {
            buckets: 8,
            snapshots_merged: 24,
        }
    );
    let tiers = [
        Tier {
            cutoff,
            bucket: minute,
        },
        Tier {
            cutoff,
            bucket: hour,
        },
    ];
    assert_eq!(
        downsample_tiers(&db, &tiers, 100).await.unwrap(),
        Downsampled {
            buckets: 4,
            snapshots_merged: 4,
        },
        "each profile's two minutes became its hour"
    );
    assert_eq!(count(&db, "select count(*) from snapshots").await, 4);
    assert_eq!(
        count(&db, "select sum(merged_windows) from snapshots").await,
        32
    );
    let after = odp_store::read(&db, &service_read()).await.unwrap();
    assert_eq!(after.samples(), before.samples());
    assert_eq!(leaves(&after.stacks()), leaves(&before.stacks()));
    assert_eq!(after.snapshots, 4);
    let host_samples =
        |r: &odp_store::ReadResult| -> Vec<u64> { r.hosts.iter().map(|h| h.samples()).collect() };
    assert_eq!(host_samples(&after), host_samples(&before));
    assert_eq!(
        count(&db, "select sum(samples) from service_rollups").await as u64,
        before.samples()
    );
    assert_eq!(profiles_read(&db, &all).await, (4, before.samples()));
    assert_eq!(
        downsample_tiers(&db, &tiers, 100).await.unwrap(),
        Downsampled::default()
    );
    for bad in [7200.0, 45.5, 0.0] {
        let refused = downsample(&db, cutoff, StdDuration::from_secs_f64(bad), 100).await;
        assert!(
            matches!(refused, Err(StoreError::Invalid(_))),
            "{bad} s: {refused:?}"
        );
    }
}

/// One holder at a time; released, or dropped (its connection closed),
/// the lock is free again.
async fn the_lock_is_exclusive(db: Database) {
    let first = RetentionLock::try_acquire(&db).await.unwrap();
    assert!(first.is_some());
    assert!(RetentionLock::try_acquire(&db).await.unwrap().is_none());
    first.unwrap().release().await.unwrap();
    let second = RetentionLock::try_acquire(&db).await.unwrap();
    assert!(second.is_some());
    assert!(RetentionLock::try_acquire(&db).await.unwrap().is_none());
    drop(second);
    // The dropped holder's session ends in the background.
    let mut free = false;
    for _ in 0..50 {
        if let Some(lock) = RetentionLock::try_acquire(&db).await.unwrap() {
            lock.release().await.unwrap();
            free = true;
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    }
    assert!(free, "a dropped lock is freed with its connection");
}

/// A transaction holding the rollup of (`service`, `hour`) `for update`,
/// as a compaction adding to it does.
enum Held {
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
    MySql(sqlx::Transaction<'static, sqlx::MySql>),
}

async fn hold(db: &Database, service: &str, hour: DateTime<Utc>) -> Held {
    // The same steps on either backend's pool type.
    macro_rules! locked {
        ($pool:expr, $sql:expr) => {{
            let mut tx = $pool.begin().await.unwrap();
            sqlx::query($sql)
                .bind(service)
                .bind(hour)
                .fetch_one(&mut *tx)
                .await
                .unwrap();
            tx
        }};
    }
    match db {
        Database::Postgres(pool) => Held::Postgres(locked!(
            pool,
            "select 1 from service_rollups where service = $1 and hour = $2 for update"
        )),
        Database::MySql(pool) => Held::MySql(locked!(
            pool,
            "select 1 from service_rollups where service = ? and `hour` = ? for update"
        )),
    }
}

impl Held {
    async fn release(self) {
        match self {
            Held::Postgres(tx) => tx.rollback().await.unwrap(),
            Held::MySql(tx) => tx.rollback().await.unwrap(),
        }
    }
}

/// The same database through sessions that wait at most 1 s for a row
/// lock, then fail (Postgres 55P03, MySQL 1205).
async fn impatient(db: &Database) -> Database {
    match db {
        Database::Postgres(pool) => sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    sqlx::query("set lock_timeout = '1s'").execute(conn).await?;
                    Ok(())
                })
            })
            .connect_with((*pool.connect_options()).clone())
            .await
            .unwrap()
            .into(),
        Database::MySql(pool) => sqlx::mysql::MySqlPoolOptions::new()
            .max_connections(2)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    sqlx::query("set session innodb_lock_wait_timeout = 1")
                        .execute(conn)
                        .await?;
                    Ok(())
                })
            })
            .connect_with((*pool.connect_options()).clone())
            .await
            .unwrap()
            .into(),
    }
}

/// Waits until some session waits for a row lock (`task` still running).
async fn until_a_lock_wait(db: &Database, task: &tokio::task::JoinHandle<impl Sized>) {
    let waiting = match db {
        Database::Postgres(_) => {
            "select count(*) from pg_stat_activity where wait_event_type = 'Lock'"
        }
        Database::MySql(_) => {
            "select count(*) from information_schema.innodb_trx where trx_state = 'LOCK WAIT'"
        }
    };
    for _ in 0..100 {
        assert!(!task.is_finished(), "it never waited for the held row");
        if count(db, waiting).await > 0 {
            return;
        }
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    }
    panic!("no session waits for the held row");
}

/// Rewriting an hour's rollups (retention, downsampling) locks that
/// hour's rows and no others until it commits: a compaction adding to
/// another hour's rollup meanwhile does not wait, nor does a rewrite wait
/// for another hour's rollup that a compaction holds. (On MySQL a locking
/// read of `hour in (…)` without an index on `hour` scanned the table
/// and, under repeatable read, locked every row and gap of it.)
async fn rewriting_an_hour_leaves_other_hours_free(db: Database) {
    let old_start = (Utc::now() - Duration::days(10))
        .duration_trunc(Duration::hours(1))
        .unwrap();
    let old = fleet(&db, 0..2, old_start).await;
    let recent_start = (Utc::now() - Duration::hours(2))
        .duration_trunc(Duration::hours(1))
        .unwrap();
    let recent = fleet(&db, 2..4, recent_start).await;
    // Another service's rollup of the old hour (a copy), after `fleet`'s.
    exec(
        &db,
        "insert into service_rollups (service, `hour`, windows, samples, block)
         select 'warehouse', `hour`, windows, samples, block from service_rollups
         where `hour` = ?",
        vec![Arg::Time(old_start)],
    )
    .await;
    assert_eq!(count(&db, "select count(*) from service_rollups").await, 3);
    let impatient = impatient(&db).await;

    // Retention has locked (fleet, old hour) and waits for (warehouse, old
    // hour), which another transaction holds.
    let held = hold(&db, "warehouse", old_start).await;
    let cutoff = old_start + Duration::seconds(35);
    let retention = tokio::spawn({
        let db = db.clone();
        async move { delete_expired(&db, cutoff, 100).await }
    });
    until_a_lock_wait(&db, &retention).await;
    let late = window(recent[0].profile_id, 2, recent_start, 8);
    store_window(&db, &late).await;
    let compacted = odp_store::compact_profile(&impatient, late.profile_id)
        .await
        .expect("a compaction into the recent hour does not wait for retention");
    assert_eq!(compacted.windows, 1);
    held.release().await;
    assert_eq!(retention.await.unwrap().unwrap().snapshots, 6);
    let kept: Vec<&Snapshot> = old.iter().filter(|w| w.sequence >= 3).collect();
    let mut recent: Vec<&Snapshot> = recent.iter().collect();
    recent.push(&late);
    let rolled_up = 2 * total(&kept) + total(&recent);
    assert_eq!(
        count(&db, "select sum(samples) from service_rollups").await as u64,
        rolled_up
    );

    // Downsampling the old hour while a compaction holds the recent
    // hour's rollup: 5 windows of each old profile in one bucket.
    let held = hold(&db, "fleet", recent_start).await;
    let done = downsample(
        &impatient,
        Utc::now() - Duration::days(1),
        StdDuration::from_secs(600),
        100,
    )
    .await
    .expect("downsampling the old hour does not wait for the recent one");
    held.release().await;
    assert_eq!(
        done,
        Downsampled {
            buckets: 2,
            snapshots_merged: 8,
        }
    );
    assert_eq!(
        count(&db, "select sum(samples) from service_rollups").await as u64,
        rolled_up
    );
}

on_both_backends!(
    expiry_deletes_exactly_what_is_old,
    garbage_collection_deletes_only_unreferenced_rows,
    downsampling_keeps_totals,
    tiers_merge_what_finer_tiers_left,
    the_lock_is_exclusive,
    rewriting_an_hour_leaves_other_hours_free,
);
