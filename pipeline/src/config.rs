use std::path::PathBuf;
use std::time::Duration;

use odp_core::identity::{parse_public_key, IdentityError, MessageVerifier};
use odp_plumbing::{KafkaArgs, Topics};

use crate::PipelineError;

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
    /// The api-server's command public key (SPKI PEM, as agents are
    /// given): agents' certificates are issued with its private half, so
    /// only messages signed by an identity it certified are stored.
    #[arg(long, env = "ODP_COMMAND_PUBLIC_KEY")]
    pub command_public_key: PathBuf,
    /// How often the revoked agent identities are reloaded: a revoked
    /// identity's messages are refused within this long.
    #[arg(long, env = "ODP_PIPELINE_REVOCATION_REFRESH_SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub revocation_refresh_secs: u64,
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

    pub fn revocation_refresh(&self) -> Duration {
        Duration::from_secs(self.revocation_refresh_secs)
    }

    /// The verifier of agents' messages, from `--command-public-key`.
    pub fn message_verifier(&self) -> Result<MessageVerifier, PipelineError> {
        let path = &self.command_public_key;
        let pem = std::fs::read_to_string(path).map_err(|e| {
            PipelineError::Config(format!(
                "reading the command public key (--command-public-key) {}: {e}",
                path.display()
            ))
        })?;
        let invalid = |e: IdentityError| {
            PipelineError::Config(format!(
                "the command public key (--command-public-key) {} is not an Ed25519 \
                 SPKI PEM: {e}",
                path.display()
            ))
        };
        // The verifier takes any PEM it can parse; this insists on the one
        // shape the api-server writes, so a private key or a key of
        // another kind given by mistake is named as such at start-up.
        if !pem.trim_start().starts_with("-----BEGIN PUBLIC KEY-----") {
            return Err(invalid(IdentityError::Key(
                "expected -----BEGIN PUBLIC KEY-----".into(),
            )));
        }
        parse_public_key(&pem).map_err(invalid)?;
        MessageVerifier::from_public_pem(&pem).map_err(invalid)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    fn config(extra: &[&str]) -> Result<Config, clap::Error> {
        let args = ["odp-pipeline", "--database-url", "postgres://x"];
        Config::try_parse_from(args.iter().chain(extra))
    }

    /// Whether a key file of `contents` (none: no file) makes a verifier,
    /// or the error.
    fn with_key(contents: Option<&str>) -> Result<(), String> {
        let path = std::env::temp_dir().join(format!("odp-pipeline-{}.pem", uuid::Uuid::new_v4()));
        if let Some(contents) = contents {
            std::fs::write(&path, contents).unwrap();
        }
        let config = config(&["--command-public-key", path.to_str().unwrap()]).unwrap();
        let verifier = config
            .message_verifier()
            .map(drop)
            .map_err(|e| e.to_string());
        let _ = std::fs::remove_file(&path);
        verifier
    }

    #[test]
    fn the_command_public_key_is_required() {
        if std::env::var_os("ODP_COMMAND_PUBLIC_KEY").is_some() {
            return;
        }
        let error = config(&[]).unwrap_err().to_string();
        assert!(error.contains("--command-public-key"), "{error}");
        let parsed = config(&["--command-public-key", "/k.pem"]).unwrap();
        assert_eq!(parsed.revocation_refresh(), Duration::from_secs(30));
    }

    #[test]
    fn a_missing_or_wrong_key_file_is_a_start_up_error_naming_it() {
        let (private, public) = odp_core::command::generate_keypair().unwrap();
        assert!(with_key(Some(&public)).is_ok());
        let missing = with_key(None).unwrap_err();
        assert!(
            missing.contains("reading the command public key (--command-public-key)"),
            "{missing}"
        );
        for wrong in [private.as_str(), "not a key", ""] {
            let error = with_key(Some(wrong)).unwrap_err();
            assert!(error.contains("is not an Ed25519 SPKI PEM"), "{error}");
            assert!(!error.contains("MC4CAQ"), "no key material in errors");
        }
    }
}
