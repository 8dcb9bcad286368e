//! What the pipeline's benches share: workers as their own processes, as
//! they run in production (the release `odp-pipeline` binary), each with
//! its own runtime and memory; and agents they believe, as the tests make
//! them (a command key pair standing in for the api-server's, identities
//! certified with it, profiles recorded before data is sent for them).

use std::path::{Path, PathBuf};

use odp_devstack::{ServiceProcess, Stack, StackOptions, TANSU_KAFKA_OPTIONS};

#[allow(dead_code)] // each bench uses some of it
#[path = "../../tests/support/signing.rs"]
pub(crate) mod signing;

/// `options` with the broker's records in memory. Tansu 0.6's SQLite
/// engine serves records with headers (every agent message carries its
/// certificate and signature in two) the slower the more the topic holds:
/// 4,000 such records took 6 s to consume from a topic of 4,000 and 29 s
/// from one of 16,000, against 0.3 s without headers or in memory. The
/// benches restart no broker, so they need none of its durability.
pub(crate) fn in_memory_broker(mut options: StackOptions) -> StackOptions {
    options.durable_broker = false;
    options
}

/// The worker binary: this build's, or the one `ODP_BENCH_PIPELINE`
/// names (another build, to compare with on the same workload).
fn pipeline_binary() -> PathBuf {
    std::env::var_os("ODP_BENCH_PIPELINE")
        .map_or_else(|| env!("CARGO_BIN_EXE_odp-pipeline").into(), PathBuf::from)
}

/// A worker of consumer group `group` on the stack's topics, writing to the
/// Postgres at `database_url` and believing the agents certified with the
/// command key whose public half is at `command_public_key`; dropping it
/// stops it (SIGTERM, then SIGKILL).
pub(crate) fn spawn_worker(
    stack: &Stack,
    group: &str,
    database_url: &str,
    command_public_key: &Path,
) -> ServiceProcess {
    let topics = stack.topics();
    ServiceProcess::builder(group, pipeline_binary())
        .env("ODP_KAFKA_BOOTSTRAP", stack.kafka_bootstrap())
        .env("ODP_DATABASE_URL", database_url)
        .env("ODP_PIPELINE_GROUP", group)
        .env("ODP_TOPIC_STACKS", &topics.stacks)
        .env("ODP_TOPIC_EVENTS", &topics.events)
        .env("ODP_TOPIC_DEAD_LETTER", &topics.dead_letter)
        .env("ODP_COMMAND_PUBLIC_KEY", command_public_key)
        .env("ODP_KAFKA_OPTIONS", TANSU_KAFKA_OPTIONS)
        // Set `ODP_BENCH_WORKER_LOG=info` to see each batch's timing in
        // the worker's log (in the temp directory, named after the group).
        .env(
            "RUST_LOG",
            std::env::var("ODP_BENCH_WORKER_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .spawn()
        .expect("start odp-pipeline")
}
