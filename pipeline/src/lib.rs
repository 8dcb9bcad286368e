//! ODP's stream worker.
//!
//! One consumer in group `odp-pipeline` reads `odp.stacks` (snapshots) and
//! `odp.events` (agent lifecycle and heartbeats). Messages are taken in
//! batches; a batch's snapshots are stored in one Postgres transaction and
//! its events recorded, and only then are the batch's offsets committed, so
//! a crash at any point redelivers work that storage then recognises as
//! already done. A message that can never be stored (undecodable, or
//! rejected by the database as invalid) goes to `odp.dead-letter` with the
//! reason before its offset is committed: nothing is lost, nothing blocks
//! the partition.
//!
//! Only agents are believed, and only about their own host: every message
//! must be signed by an identity the api-server certified
//! (`--command-public-key`) that is not revoked and name its certificate's
//! host, and a snapshot or profile event must be for a profile started on
//! that host; anything else is dead-lettered with the reason
//! (`batch/authenticity.rs`).
//!
//! Polling and processing are apart (`poll.rs`): batches wait in a bounded
//! queue, and when it is full polling pauses the assigned partitions
//! (`odp_pipeline_polling_paused` reads 1) while it keeps polling, so the
//! worker keeps its place in the group. librdkafka keeps a partition's
//! pause flag across its revocation, so every rebalance sets the assigned
//! partitions to the poller's current state (`consumer.rs`).
//!
//! A batch's samples and thread names, by far most of its rows, go to
//! Postgres as binary `COPY`; their references to snapshots and stacks are
//! checked once per statement rather than per row (migration 0012), which
//! was most of the time a batch spent in Postgres.
//!
//! After a batch is stored, and before its offsets are committed, the
//! profiles it touched (and those it reports finished) are run through the
//! detection rules ([`odp_rules`], [`detect`]); their findings are
//! upserted, so a redelivered batch re-evaluates to the same result.
//!
//! A rule flagging a profile for the first time queues an alert per
//! matching channel in the same transaction; a sender task ([`alerts`])
//! delivers them as signed webhooks or emails ([`notify`]), retrying with
//! backoff.

pub mod alerts;
mod batch;
mod clocks;
mod compaction;
mod config;
mod consumer;
mod dead_letter;
pub mod detect;
mod metrics;
pub mod notify;
mod pacing;
mod poll;
pub mod reanalysis;
mod rejoin;
pub mod retention;
pub mod run_detect;
mod worker;

pub use config::{AlertOptions, Config};
pub use worker::run;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("kafka: {0}")]
    Kafka(#[from] rdkafka::error::KafkaError),
    #[error("store: {0}")]
    Store(#[from] odp_store::StoreError),
    #[error("alerts: {0}")]
    Alerts(#[from] alerts::AlertError),
    #[error("dead-letter publish failed: {0}")]
    DeadLetter(String),
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("metrics endpoint: {0}")]
    Metrics(#[from] std::io::Error),
}
