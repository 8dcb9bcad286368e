//! Loss-free ingest, against the real broker and Postgres with the real
//! `odp-pipeline` binary: two workers split the partitions; a worker
//! killed mid-stream and restarted neither loses nor doubles a sample;
//! SIGTERM drains and commits exactly what was stored; Postgres going away
//! and coming back loses nothing. Counts are exact, never approximate.
//!
//! Needs the binaries built (`cargo build --workspace --bins`).

mod support;

use std::time::Duration;

use support::fleet::{metric, wait_for_log, Fleet, SAMPLES_PER_SNAPSHOT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_split_the_partitions_and_store_each_sample_once() {
    let fleet = Fleet::start("split").await;
    let (first, first_port) = fleet.worker("pipeline-1", 20);
    wait_for_log(&first, "partitions assigned").await;
    let (second, second_port) = fleet.worker("pipeline-2", 20);
    // The second worker is only assigned once the group rebalanced.
    wait_for_log(&second, "partitions assigned").await;

    fleet.produce(0..25).await;
    let (snapshots, samples) = fleet.wait_stored(200, &[&first, &second]).await;
    assert_eq!((snapshots, samples), (200, 200 * SAMPLES_PER_SNAPSHOT));

    let stored = "odp_pipeline_snapshots_stored_total";
    let by_first = metric(first_port, stored, "").await;
    let by_second = metric(second_port, stored, "").await;
    assert!(
        by_first > 0.0 && by_second > 0.0,
        "both workers store: {by_first} + {by_second}"
    );
    assert_eq!(by_first + by_second, 200.0, "no snapshot stored twice");
    // The windows' blocks hold every sample the headers count.
    let mut from_blocks = 0;
    for &profile in &fleet.profiles {
        from_blocks += odp_store::profile_stacks(&fleet.pool, profile)
            .await
            .unwrap()
            .samples;
    }
    assert_eq!(from_blocks as i64, 200 * SAMPLES_PER_SNAPSHOT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_stream_loses_and_doubles_nothing() {
    let fleet = Fleet::start("kill").await;
    fleet.produce(0..40).await;
    let (mut worker, _) = fleet.worker("pipeline-doomed", 5);
    fleet.wait_stored(40, &[&worker]).await;
    worker.kill().unwrap();
    let (partial, _) = fleet.stored().await;
    assert!(partial < 320, "killed before the end: {partial}");

    let (restarted, _) = fleet.worker("pipeline-restarted", 5);
    let stored = fleet.wait_stored(320, &[&restarted]).await;
    assert_eq!(stored, (320, 320 * SAMPLES_PER_SNAPSHOT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_and_commits_exactly_what_was_stored() {
    let fleet = Fleet::start("drain").await;
    let (mut worker, port) = fleet.worker("pipeline-draining", 10);
    wait_for_log(&worker, "partitions assigned").await;
    fleet.produce(0..20).await;
    // Stop while the worker is busy with the 160 snapshots.
    fleet.wait_stored(20, &[&worker]).await;
    let status = worker.stop().unwrap();
    assert!(
        status.success(),
        "clean exit: {status}\n{}",
        worker.log_tail(30)
    );
    assert!(worker.log().contains("pipeline stopped"));
    let _ = port;
    let (by_first, _) = fleet.stored().await;

    // Whatever the first worker stored, it committed: the next worker
    // consumes exactly the rest, plus one new marker snapshot.
    let (next, next_port) = fleet.worker("pipeline-next", 10);
    wait_for_log(&next, "partitions assigned").await;
    fleet.produce(20..21).await;
    let stored = fleet.wait_stored(168, &[&next]).await;
    assert_eq!(stored, (168, 168 * SAMPLES_PER_SNAPSHOT));
    let consumed = metric(next_port, "odp_pipeline_messages_total", "stacks").await;
    assert_eq!(
        consumed as i64,
        168 - by_first,
        "stored {by_first} before SIGTERM"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_going_away_and_back_loses_nothing() {
    let fleet = Fleet::start("pg-restart").await;
    let (worker, _) = fleet.worker("pipeline-patient", 10);
    fleet.produce(0..10).await;
    fleet.wait_stored(80, &[&worker]).await;

    fleet.stack.database().stop().unwrap();
    fleet.produce(10..20).await;
    // The worker retries with backoff meanwhile.
    tokio::time::sleep(Duration::from_secs(3)).await;
    fleet.stack.database().start(false, false).await.unwrap();

    let stored = fleet.wait_stored(160, &[&worker]).await;
    assert_eq!(stored, (160, 160 * SAMPLES_PER_SNAPSHOT));
}
