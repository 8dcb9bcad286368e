use std::path::PathBuf;
use std::time::Duration;

use odp_plumbing::{KafkaArgs, Topics};

/// The alert sender: how often it polls and how it retries.
#[derive(Debug, Clone, clap::Args)]
pub struct AlertOptions {
    /// How often due alert deliveries are looked for.
    #[arg(long = "alert-poll-ms", env = "ODP_ALERT_POLL_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub poll_ms: u64,
    /// Wait after a delivery's first failed attempt, doubled after each
    /// further one (capped at 5 minutes).
    #[arg(long = "alert-backoff-base-ms", env = "ODP_ALERT_BACKOFF_BASE_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=300_000))]
    pub backoff_base_ms: u64,
    /// Attempts before a delivery is given up as failed.
    #[arg(long = "alert-max-attempts", env = "ODP_ALERT_MAX_ATTEMPTS", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub max_attempts: u32,
    /// PEM bundle of the CAs trusted for https webhooks (e.g.
    /// /etc/ssl/certs/ca-certificates.crt); without it only plain http
    /// webhooks can be delivered.
    #[arg(long = "alert-ca-file", env = "ODP_ALERT_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// The web UI's address (e.g. https://odp.example.com); alert emails
    /// then link the profile at `<url>/#/profiles/<id>`.
    #[arg(long = "alert-profile-base-url", env = "ODP_ALERT_PROFILE_BASE_URL")]
    pub profile_base_url: Option<String>,
    /// Destinations allowed although not public
    /// (`ODP_ALERT_ALLOWED_DESTINATIONS`); every other loopback, private,
    /// link-local, … address is refused when a delivery connects.
    #[command(flatten)]
    pub destinations: odp_plumbing::egress::AlertDestinations,
}

impl Default for AlertOptions {
    fn default() -> Self {
        AlertOptions {
            poll_ms: 1000,
            backoff_base_ms: 1000,
            max_attempts: 8,
            ca_file: None,
            profile_base_url: None,
            destinations: Default::default(),
        }
    }
}

impl AlertOptions {
    pub fn poll(&self) -> Duration {
        Duration::from_millis(self.poll_ms)
    }

    pub fn backoff_base(&self) -> Duration {
        Duration::from_millis(self.backoff_base_ms)
    }
}

#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "odp-pipeline",
    about = "Stores snapshots and agent events from Kafka into Postgres or MySQL"
)]
pub struct Config {
    #[command(flatten)]
    pub kafka: KafkaArgs,
    /// `postgres://…` or `mysql://…` (MySQL 8, MariaDB 10.11+): the
    /// scheme chooses the backend.
    #[arg(long, env = "ODP_DATABASE_URL")]
    pub database_url: String,
    #[arg(long, env = "ODP_PIPELINE_GROUP", default_value = "odp-pipeline")]
    pub group_id: String,
    /// The consumer group session timeout: a worker that stopped
    /// heartbeating (killed, frozen) loses its partitions after this long.
    #[arg(long, env = "ODP_PIPELINE_SESSION_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(3_000..=300_000))]
    pub session_timeout_ms: u64,
    #[command(flatten)]
    pub topics: Topics,
    /// Largest message taken off Kafka; a larger one is dead-lettered,
    /// never retried. Matches the agent's `--max-message-bytes` (the
    /// broker's `message.max.bytes` must be above both).
    #[arg(long, env = "ODP_PIPELINE_MAX_MESSAGE_BYTES", default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(65_536..=67_108_864))]
    pub max_message_bytes: u64,
    /// Most messages stored in one transaction.
    #[arg(long, env = "ODP_PIPELINE_BATCH_MAX", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub batch_max: u32,
    /// How long a batch waits to fill once its first message arrived.
    #[arg(long, env = "ODP_PIPELINE_BATCH_WAIT_MS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub batch_wait_ms: u64,
    /// Batches polled ahead of processing; when they are all waiting,
    /// polling pauses (backpressure). One more is taken off the queue to be
    /// decoded while the batch before it is stored.
    #[arg(long, env = "ODP_PIPELINE_QUEUED_BATCHES", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub queued_batches: u32,
    /// On SIGTERM, how long queued batches may take to be stored and
    /// committed before the rest is left for redelivery.
    #[arg(long, env = "ODP_PIPELINE_DRAIN_TIMEOUT_SECS", default_value_t = 20, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub drain_timeout_secs: u64,
    /// In a rebalance, how long revoked partitions wait for their in-flight
    /// batches to be committed before they are released.
    #[arg(long, env = "ODP_PIPELINE_REBALANCE_FLUSH_SECS", default_value_t = 20, value_parser = clap::value_parser!(u64).range(0..=600))]
    pub rebalance_flush_secs: u64,
    /// An ended profile's windows are compacted into its profile block
    /// this long after it ended (windows spooled through a broker outage
    /// may still arrive; later ones are compacted at the next pass).
    #[arg(long, env = "ODP_PIPELINE_COMPACT_AFTER_SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub compact_after_secs: u64,
    /// A running profile is evaluated by the detection rules in the
    /// background, this long after its first window and then at most this
    /// often; a finished one at once. 0 evaluates every batch at once.
    #[arg(long, env = "ODP_PIPELINE_DETECT_INTERVAL_SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub detect_interval_secs: u64,
    #[command(flatten)]
    pub alerts: AlertOptions,
    #[command(flatten)]
    pub retention: crate::retention::RetentionOptions,
    /// Serve Prometheus `/metrics` over HTTP on this address (off when
    /// absent).
    #[arg(long, env = "ODP_METRICS_LISTEN")]
    pub metrics_listen: Option<std::net::SocketAddr>,
}

impl Config {
    pub fn batch_wait(&self) -> Duration {
        Duration::from_millis(self.batch_wait_ms)
    }
}
