//! A worker SIGKILLed while it holds the partitions and restarted at once,
//! left by a broker frozen past its session, or under a restarted broker,
//! resumes ingestion within the consumer session timeout plus 10 s and
//! stores every snapshot exactly once, against the real broker and
//! Postgres. (Tansu 0.6 left such a worker without partitions for good:
//! docs/tansu-group-recovery.md.)

mod support;

use std::time::{Duration, Instant};

use odp_devstack::ServiceProcess;
use support::fleet::{wait_for_log, Fleet, SAMPLES_PER_SNAPSHOT};

/// The workers' session timeout (`--session-timeout-ms`, 10 s) plus 10 s.
const RECOVERY_BOUND: Duration = Duration::from_secs(10 + 10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_worker_restarted_at_once_resumes_within_the_session_timeout() {
    let fleet = Fleet::start("crash").await;
    let mut worker = settled_worker(&fleet, "pipeline-crashing").await;
    // Heartbeats and commits of a settled member, as in production.
    tokio::time::sleep(Duration::from_secs(8)).await;

    worker.kill().unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    worker.respawn().unwrap();
    let took = resumed_after(&fleet, &worker, Instant::now()).await;
    let rejoins = worker.log().matches("rejoining the group").count();
    println!("ingestion resumed {took:.1?} after the restart ({rejoins} rejoin)");
}

/// A broker frozen for longer than the session timeout serves, when it is
/// continued, the heartbeat the worker sent before the freeze; unpatched
/// Tansu 0.6 then expired the worker by its own heartbeat and left the
/// group led by nobody for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_resumes_within_the_session_timeout_after_the_broker_is_frozen() {
    let fleet = Fleet::start("freeze").await;
    let worker = settled_worker(&fleet, "pipeline-frozen").await;

    assert!(fleet.stack.freeze_broker());
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(fleet.stack.thaw_broker());
    let took = resumed_after(&fleet, &worker, Instant::now()).await;
    println!("ingestion resumed {took:.1?} after the broker was thawed");
}

/// A broker restarted under a worker keeps what it acknowledged (its
/// records and the group's offsets are in SQLite); the worker reconnects
/// and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_resumes_within_the_session_timeout_after_the_broker_restarts() {
    let mut fleet = Fleet::start("restart").await;
    let worker = settled_worker(&fleet, "pipeline-restart").await;

    fleet.stack.restart_broker().await.unwrap();
    let took = resumed_after(&fleet, &worker, Instant::now()).await;
    println!("ingestion resumed {took:.1?} after the broker restarted");
}

/// A worker holding the partitions, with the first five windows of each
/// profile stored.
async fn settled_worker(fleet: &Fleet, name: &str) -> ServiceProcess {
    let (worker, _) = fleet.worker(name, 10);
    wait_for_log(&worker, "partitions assigned").await;
    fleet.produce(0..5).await;
    fleet.wait_stored(40, &[&worker]).await;
    worker
}

/// Publishes the next five windows of each profile once the fault is over
/// (at `since`) and waits until all ten are stored, exactly once, within
/// [`RECOVERY_BOUND`]: how long that took.
async fn resumed_after(fleet: &Fleet, worker: &ServiceProcess, since: Instant) -> Duration {
    fleet.produce(5..10).await;
    loop {
        let (snapshots, samples) = fleet.stored().await;
        if snapshots >= 80 {
            assert_eq!((snapshots, samples), (80, 80 * SAMPLES_PER_SNAPSHOT));
            return since.elapsed();
        }
        assert!(
            since.elapsed() < RECOVERY_BOUND,
            "ingestion did not resume within {RECOVERY_BOUND:?} ({snapshots} of 80 stored)\n{}",
            worker.log_tail(30)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
