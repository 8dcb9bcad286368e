//! A worker paused for backpressure that loses partitions in a rebalance
//! and later gets them back fetches them again. librdkafka keeps a
//! partition's pause flag across its revocation, so without the worker
//! setting every assigned partition to its own pause state, partitions
//! paused, given away and given back were never fetched again.
//!
//! Against the real broker, Postgres and `odp-pipeline` binary; the
//! backpressure is made deterministic by holding a lock on `snapshots`,
//! the first table a batch writes to. Needs the binaries built
//! (`cargo build --workspace --bins`).

mod support;

use std::time::Duration;

use odp_devstack::ServiceProcess;

use support::fleet::{metric, wait_for_log, wait_for_logged, Fleet, SAMPLES_PER_SNAPSHOT};

/// One message per batch and one batch queued: the worker pauses as soon
/// as a store blocks. Revocations give up waiting for the blocked store
/// after a second, so the rebalance goes on while the worker is paused.
const FLAGS: [&str; 4] = ["--queued-batches", "1", "--rebalance-flush-secs", "1"];

const PAUSED: &str = "odp_pipeline_polling_paused";

/// Waits until `worker`'s metric `name` reads `value`.
async fn wait_for_metric(worker: &ServiceProcess, port: u16, name: &str, value: f64) {
    for _ in 0..600 {
        if metric(port, name, "").await == value {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} never read {value}:\n{}", worker.log_tail(40));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_given_back_to_a_worker_paused_for_backpressure_are_fetched_again() {
    let fleet = Fleet::start("pause-rebalance").await;
    let (first, first_port) = fleet.worker_with("pipeline-paused", 1, &FLAGS);
    wait_for_log(&first, "partitions assigned").await;

    // Inserts into `snapshots` wait for this transaction; reads do not.
    let mut lock = fleet.pool.begin().await.unwrap();
    sqlx::query("lock table snapshots in exclusive mode")
        .execute(&mut *lock)
        .await
        .unwrap();
    fleet.produce(0..4).await;
    wait_for_metric(&first, first_port, PAUSED, 1.0).await;

    // A second worker joins: the paused one gives up all four stacks
    // partitions and gets two of them back.
    let (mut second, _) = fleet.worker_with("pipeline-passing", 1, &FLAGS);
    wait_for_log(&second, "partitions assigned").await;
    wait_for_logged(&first, "partitions assigned", 2).await;

    // Once everything published so far is stored and the first worker's
    // queue has room again, it has resumed the partitions it kept, while
    // the ones it gave away still carry the pause it set on them.
    lock.rollback().await.unwrap();
    fleet.wait_stored(32, &[&first, &second]).await;
    wait_for_metric(&first, first_port, PAUSED, 0.0).await;

    // The second worker leaves and its partitions go back to the first,
    // which must fetch them as well as its own. One snapshot at a time, so
    // the first worker never pauses again: a pause and resume would cover
    // every partition assigned by then and hide a partition left paused.
    let status = second.stop().unwrap();
    assert!(status.success(), "clean exit: {status}");
    wait_for_logged(&first, "partitions assigned", 3).await;
    for profile in 0..fleet.profiles.len() {
        fleet.produce_one(profile, 4).await;
        fleet.wait_stored(33 + profile as i64, &[&first]).await;
    }
    let stored = fleet.stored().await;
    assert_eq!(stored, (40, 40 * SAMPLES_PER_SNAPSHOT), "each stored once");
}
