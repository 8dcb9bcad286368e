//! What the pipeline's benches share: workers as their own processes, as
//! they run in production (the release `odp-pipeline` binary), each with
//! its own runtime and memory.

use odp_devstack::{ServiceProcess, Stack, TANSU_KAFKA_OPTIONS};

/// A worker of consumer group `group` on the stack's topics, writing to the
/// Postgres at `database_url`; dropping it stops it (SIGTERM, then SIGKILL).
pub(crate) fn spawn_worker(stack: &Stack, group: &str, database_url: &str) -> ServiceProcess {
    let topics = stack.topics();
    ServiceProcess::builder(group, env!("CARGO_BIN_EXE_odp-pipeline"))
        .env("ODP_KAFKA_BOOTSTRAP", stack.kafka_bootstrap())
        .env("ODP_DATABASE_URL", database_url)
        .env("ODP_PIPELINE_GROUP", group)
        .env("ODP_TOPIC_STACKS", &topics.stacks)
        .env("ODP_TOPIC_EVENTS", &topics.events)
        .env("ODP_TOPIC_DEAD_LETTER", &topics.dead_letter)
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
