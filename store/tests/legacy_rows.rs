//! Data stored before blocks (migration 0015) is read and compacted, not
//! dropped: windows whose samples are rows in `samples` and
//! `snapshot_threads`, over the global `frames` and `stacks` tables, read
//! back exactly like new windows, in one profile with windows stored as
//! blocks; compaction moves them into the profile block (rows deleted,
//! every total unchanged), and retention then collects the frames and
//! stacks nothing references any more. Against a real Postgres.

use odp_core::hash::{frame_hash, stack_hash};
use odp_core::{Frame, Snapshot, WeightedStack};
use odp_devstack::fixtures::{count, snapshot};
use odp_devstack::{Stack, StackOptions};
use sqlx::PgPool;
use uuid::Uuid;

/// Stores `window` the way ingest did before blocks: frames and stacks by
/// content hash, the header without a block, samples and thread names as
/// rows.
async fn store_as_rows(pool: &PgPool, window: &Snapshot) {
    let frame_ids: Vec<u128> = window.frames.iter().map(frame_hash).collect();
    for (frame, id) in window.frames.iter().zip(&frame_ids) {
        sqlx::query(
            "insert into frames (id, function, module, file, line) values ($1, $2, $3, $4, $5)
             on conflict (id) do nothing",
        )
        .bind(Uuid::from_u128(*id))
        .bind(&frame.function)
        .bind(&frame.module)
        .bind(&frame.file)
        .bind(frame.line.map(|l| l as i32))
        .execute(pool)
        .await
        .unwrap();
    }
    let (snapshot_id,): (i64,) = sqlx::query_as(
        "insert into snapshots (profile_id, agent_id, sequence, host, window_start, window_end,
                                event, period, frequency_hz, samples)
         values ($1, $2, $3, $4, to_timestamp($5 / 1000.0), to_timestamp($6 / 1000.0), $7, $8, $9, $10)
         returning id",
    )
    .bind(window.profile_id)
    .bind(&window.agent_id)
    .bind(window.sequence as i64)
    .bind(&window.host)
    .bind(window.window_start_ms as f64)
    .bind(window.window_end_ms as f64)
    .bind(window.event.as_str())
    .bind(window.period as i64)
    .bind(window.frequency_hz as i32)
    .bind(window.total_samples() as i64)
    .fetch_one(pool)
    .await
    .unwrap();
    for stack in &window.stacks {
        let ids: Vec<u128> = stack
            .frames
            .iter()
            .map(|&i| frame_ids[i as usize])
            .collect();
        let stack_id = Uuid::from_u128(stack_hash(&ids));
        let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_be_bytes()).collect();
        sqlx::query(
            "insert into stacks (id, frame_ids) values ($1, $2) on conflict (id) do nothing",
        )
        .bind(stack_id)
        .bind(bytes)
        .execute(pool)
        .await
        .unwrap();
        sqlx::query(
            "insert into samples (snapshot_id, stack_id, tid, count) values ($1, $2, $3, $4)",
        )
        .bind(snapshot_id)
        .bind(stack_id)
        .bind(stack.tid as i32)
        .bind(stack.count as i64)
        .execute(pool)
        .await
        .unwrap();
    }
    sqlx::query("insert into snapshot_threads (snapshot_id, tid, name) values ($1, 1, 'main')")
        .bind(snapshot_id)
        .execute(pool)
        .await
        .unwrap();
}

fn sorted(mut stacks: Vec<WeightedStack>) -> Vec<WeightedStack> {
    stacks.sort_by(|a, b| a.frames.cmp(&b.frames));
    stacks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_from_before_blocks_read_and_compact_exactly() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let profile = Uuid::new_v4();
    let old_windows = [
        snapshot(
            profile,
            0,
            &[(&["main", "hot"], 30), (&["main", "old_only"], 4)],
        ),
        snapshot(profile, 1, &[(&["main", "hot"], 20)]),
    ];
    for window in &old_windows {
        store_as_rows(&pool, window).await;
    }
    // The profile went on after the upgrade: a window stored as a block.
    let new_window = snapshot(
        profile,
        2,
        &[(&["main", "hot"], 10), (&["main", "cold"], 5)],
    );
    odp_store::store_snapshots(&pool, &[&new_window])
        .await
        .unwrap();

    let before = odp_store::profile_stacks(&pool, profile).await.unwrap();
    assert_eq!(before.samples, 69);
    assert_eq!(before.snapshots, 3);
    let hot = before
        .stacks
        .iter()
        .find(|s| s.frames == ["main", "hot"])
        .unwrap();
    assert_eq!(hot.count, 60);

    let done = odp_store::compact_profile(&pool, profile).await.unwrap();
    assert_eq!((done.windows, done.legacy_windows), (3, 2));
    let after = odp_store::profile_stacks(&pool, profile).await.unwrap();
    assert_eq!(sorted(after.stacks), sorted(before.stacks));
    assert_eq!((after.samples, after.snapshots), (69, 3));
    assert_eq!(count(&pool, "select count(*) from samples").await, 0);
    assert_eq!(
        count(&pool, "select count(*) from snapshot_threads").await,
        0
    );
    assert_eq!(
        count(
            &pool,
            "select count(*) from snapshots where block is not null or not compacted"
        )
        .await,
        0
    );
    let profile_data = odp_store::load_profile(&pool, profile).await.unwrap();
    assert_eq!(profile_data.windows.len(), 3);
    assert_eq!(
        profile_data.threads.len(),
        2,
        "the rows' thread names came along"
    );
    assert!(profile_data.frames.contains(&Frame::function("old_only")));

    // Nothing references the rows' stacks and frames any more.
    let collected = odp_store::retention::collect_garbage(&pool, 100)
        .await
        .unwrap();
    assert_eq!((collected.stacks, collected.frames), (2, 3));
    assert_eq!(
        odp_store::profile_stacks(&pool, profile)
            .await
            .unwrap()
            .samples,
        69
    );
    // A second compaction finds nothing to do.
    assert_eq!(
        odp_store::compact_profile(&pool, profile)
            .await
            .unwrap()
            .windows,
        0
    );
    pool.close().await;
    stack.stop().unwrap();
}
