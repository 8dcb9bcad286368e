use std::time::Duration;

/// Topic names; defaults are DESIGN.md's.
#[derive(Debug, Clone, clap::Args)]
pub struct Topics {
    #[arg(
        long = "topic-stacks",
        env = "ODP_TOPIC_STACKS",
        default_value = "odp.stacks"
    )]
    pub stacks: String,
    #[arg(
        long = "topic-events",
        env = "ODP_TOPIC_EVENTS",
        default_value = "odp.events"
    )]
    pub events: String,
    #[arg(
        long = "topic-dead-letter",
        env = "ODP_TOPIC_DEAD_LETTER",
        default_value = "odp.dead-letter"
    )]
    pub dead_letter: String,
}

#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "odp-pipeline",
    about = "Stores snapshots and agent events from Kafka into Postgres"
)]
pub struct Config {
    #[arg(long, env = "ODP_KAFKA_BOOTSTRAP", default_value = "127.0.0.1:9092")]
    pub kafka_bootstrap: String,
    #[arg(long, env = "ODP_DATABASE_URL")]
    pub database_url: String,
    #[arg(long, env = "ODP_PIPELINE_GROUP", default_value = "odp-pipeline")]
    pub group_id: String,
    #[command(flatten)]
    pub topics: Topics,
    /// Most messages stored in one transaction.
    #[arg(long, env = "ODP_PIPELINE_BATCH_MAX", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub batch_max: u32,
    /// How long a batch waits to fill once its first message arrived.
    #[arg(long, env = "ODP_PIPELINE_BATCH_WAIT_MS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub batch_wait_ms: u64,
}

impl Config {
    pub fn batch_wait(&self) -> Duration {
        Duration::from_millis(self.batch_wait_ms)
    }
}
