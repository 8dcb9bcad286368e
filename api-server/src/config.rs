//! Command-line and environment configuration, validated once at start-up.

use std::net::SocketAddr;
use std::path::PathBuf;

use odp_plumbing::{KafkaArgs, Topics};

#[derive(Debug, clap::Parser)]
#[command(
    name = "odp-api-server",
    about = "ODP's REST API: start and stop profiles, query flame graphs"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: CliCommand,
}

// Parsed once at start-up: the size of `Serve` costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, clap::Subcommand)]
pub enum CliCommand {
    /// Serve the API.
    Serve(ServeConfig),
    /// Write a new Ed25519 key pair for signing commands.
    Keygen {
        /// PKCS#8 PEM private key, for the api-server.
        #[arg(long)]
        private_key: PathBuf,
        /// SPKI PEM public key, for the agents.
        #[arg(long)]
        public_key: PathBuf,
    },
    /// Write a self-signed TLS certificate and key for development.
    DevCert {
        #[arg(long)]
        cert: PathBuf,
        #[arg(long)]
        key: PathBuf,
        /// DNS names and IP addresses the certificate is valid for.
        #[arg(long, value_delimiter = ',', default_value = "localhost,127.0.0.1")]
        names: Vec<String>,
    },
    /// Print a bearer token signed with the API secret (admin use).
    Token {
        #[arg(long, env = "ODP_JWT_SECRET", hide_env_values = true)]
        jwt_secret: String,
        /// Who the token is for (recorded as who asked for each request).
        #[arg(long)]
        sub: String,
        /// viewer (read), profiler (start/stop the services it may), admin.
        #[arg(long)]
        role: crate::auth::Role,
        /// Comma-separated glob patterns of the services a profiler token
        /// may profile, e.g. `checkout-*,search`.
        #[arg(long, value_delimiter = ',')]
        services: Vec<String>,
        #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(i64).range(1..=31_536_000))]
        ttl_secs: i64,
    },
}

#[derive(Debug, Clone, clap::Args)]
pub struct ServeConfig {
    #[arg(long, env = "ODP_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// `postgres://…` or `mysql://…` (MySQL 8, MariaDB 10.11+): the
    /// scheme chooses the backend.
    #[arg(long, env = "ODP_DATABASE_URL")]
    pub database_url: String,
    #[command(flatten)]
    pub kafka: KafkaArgs,
    /// Commands go to the commands topic; agents' heartbeats are followed
    /// on the events topic, to tell whether a host's agent is live before
    /// the pipeline has stored them.
    #[command(flatten)]
    pub topics: Topics,
    /// HS256 secret that bearer tokens are signed with (at least 16 bytes).
    #[arg(long, env = "ODP_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// JSON Web Key Set whose public keys (RSA, EC, Ed25519) verify tokens
    /// issued elsewhere, e.g. by an identity provider. With
    /// `--jwt-secret`, both kinds of token are accepted.
    #[arg(long, env = "ODP_JWKS_FILE")]
    pub jwks_file: Option<PathBuf>,
    /// PKCS#8 PEM Ed25519 private key that commands are signed with.
    #[arg(long, env = "ODP_COMMAND_SIGNING_KEY")]
    pub command_signing_key: PathBuf,
    /// How long a command stays valid for the agent.
    #[arg(long, env = "ODP_COMMAND_TTL_SECS", default_value_t = 60, value_parser = clap::value_parser!(i64).range(5..=3600))]
    pub command_ttl_secs: i64,
    /// PEM certificate (chain) the API serves HTTPS with.
    #[arg(long, env = "ODP_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `--tls-cert`.
    #[arg(long, env = "ODP_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// Serve plain HTTP instead (only behind a TLS-terminating proxy).
    #[arg(long, env = "ODP_INSECURE_HTTP")]
    pub insecure_http: bool,
    /// A start no agent acknowledged within this long is marked expired.
    #[arg(long, env = "ODP_START_ACK_TIMEOUT_SECS", default_value_t = 90, value_parser = clap::value_parser!(u64).range(5..=86_400))]
    pub start_ack_timeout_secs: u64,
    /// The built web UI (`web/dist`): served for every non-`/api` path,
    /// with `index.html` for unknown paths (the UI routes by URL hash).
    #[arg(long, env = "ODP_WEB_DIR")]
    pub web_dir: Option<PathBuf>,
    /// Fire due profiling schedules from this replica (`--scheduler=false`
    /// turns it off). Replicas take turns under a database lock.
    #[arg(long, env = "ODP_SCHEDULER", default_value_t = true, action = clap::ArgAction::Set)]
    pub scheduler: bool,
    /// How often the scheduler looks for due schedules.
    #[arg(long, env = "ODP_SCHEDULER_TICK_SECS", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=300))]
    pub scheduler_tick_secs: u64,
    /// How late a due occurrence may still fire; older ones are recorded
    /// as missed.
    #[arg(long, env = "ODP_SCHEDULER_GRACE_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub scheduler_grace_secs: u64,
    /// How long a request may take before the API answers 504 (imports
    /// twice as long). The database cancels any statement running longer
    /// (Postgres' `statement_timeout`, MariaDB's `max_statement_time`,
    /// MySQL's `max_execution_time` for reads), so work a client gave up
    /// on stops there too.
    #[arg(long, env = "ODP_REQUEST_TIMEOUT_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub request_timeout_secs: u64,
    /// How long a request waits for a database connection; past it, as
    /// while the database is unreachable, the API answers 503 with
    /// `Retry-After`.
    #[arg(long, env = "ODP_DB_ACQUIRE_TIMEOUT_SECS", default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=60))]
    pub db_acquire_timeout_secs: u64,
    #[command(flatten)]
    pub deploy: crate::control::deploy::DeployOptions,
    /// Destinations of alert channels allowed although not public
    /// (`ODP_ALERT_ALLOWED_DESTINATIONS`).
    #[command(flatten)]
    pub alert_destinations: odp_plumbing::egress::AlertDestinations,
    /// Heavy reads' concurrency, read and import budgets (issue 27).
    #[command(flatten)]
    pub limits: crate::read_budget::LimitOptions,
    /// Hosts the running runs of one user (a token's subject, or a
    /// schedule) may profile at once: a run that would take them past it
    /// is refused (422) before anything is created.
    #[arg(long, env = "ODP_MAX_RUN_HOSTS_PER_USER", default_value_t = 2000)]
    pub max_run_hosts_per_user: u64,
    /// Bounds on continuous profiles' rates and budgets (issue 29).
    #[command(flatten)]
    pub continuous: crate::ContinuousLimits,
}

impl ServeConfig {
    /// How long a request may take; see `--request-timeout-secs`.
    pub fn request_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.request_timeout_secs)
    }

    /// The database pool: statements bounded by the request timeout, and
    /// a short wait for a connection.
    pub fn pool_config(&self) -> odp_store::PoolConfig {
        odp_store::PoolConfig {
            acquire_timeout: std::time::Duration::from_secs(self.db_acquire_timeout_secs),
            statement_timeout: Some(self.request_timeout()),
            sleep: Some(|d| Box::pin(tokio::time::sleep(d))),
            ..odp_store::PoolConfig::default()
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        match (&self.jwt_secret, &self.jwks_file) {
            (None, None) => return Err(ConfigError::NoTokenKey),
            (Some(secret), _) if secret.len() < 16 => return Err(ConfigError::ShortSecret),
            _ => {}
        }
        self.topics.validate()?;
        match (&self.tls_cert, &self.tls_key, self.insecure_http) {
            (Some(_), Some(_), false) | (None, None, true) => {}
            (Some(_), Some(_), true) => return Err(ConfigError::TlsAndPlain),
            (Some(_), None, _) | (None, Some(_), _) => return Err(ConfigError::HalfTls),
            (None, None, false) => return Err(ConfigError::NoTransport),
        }
        if (self.start_ack_timeout_secs as i64) < self.command_ttl_secs {
            return Err(ConfigError::AckBeforeExpiry);
        }
        Ok(())
    }
}

/// Flags that do not make a server.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("tokens need --jwt-secret (HS256) or --jwks-file (public keys)")]
    NoTokenKey,
    #[error("--jwt-secret must be at least 16 bytes")]
    ShortSecret,
    #[error(transparent)]
    Topic(#[from] odp_plumbing::EmptyTopic),
    #[error("give either --tls-cert/--tls-key or --insecure-http, not both")]
    TlsAndPlain,
    #[error("--tls-cert and --tls-key go together")]
    HalfTls,
    #[error(
        "HTTPS needs --tls-cert and --tls-key (`odp-api-server dev-cert` makes a \
         development pair); plain HTTP needs --insecure-http"
    )]
    NoTransport,
    #[error(
        "--start-ack-timeout-secs must be at least --command-ttl-secs: \
         an agent may act until the command expires"
    )]
    AckBeforeExpiry,
    #[error(transparent)]
    Kafka(#[from] odp_plumbing::KafkaConfigError),
    #[error(transparent)]
    Deployer(#[from] crate::control::deploy::DeployConfigError),
    #[error("reading {}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("command signing key: {0}")]
    SigningKey(#[from] odp_core::command::CommandError),
    #[error("token keys: {0}")]
    TokenKeys(#[from] odp_core::token::TokenError),
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser as _;

    use super::*;

    fn serve(extra: &[&str]) -> Result<ServeConfig, clap::Error> {
        let args = [
            "odp-api-server",
            "serve",
            "--database-url=postgres://localhost/odp",
            "--command-signing-key=/dev/null",
        ];
        match Cli::try_parse_from(args.iter().chain(extra))?.command {
            CliCommand::Serve(config) => Ok(config),
            other => panic!("parsed {other:?}"),
        }
    }

    #[test]
    fn statements_are_bounded_by_the_request_timeout() {
        let config = serve(&[]).unwrap();
        let pool = config.pool_config();
        assert_eq!(config.request_timeout(), Duration::from_secs(60));
        assert_eq!(pool.statement_timeout, Some(config.request_timeout()));
        assert_eq!(pool.acquire_timeout, Duration::from_secs(2));
        assert!(
            pool.sleep.is_some(),
            "released connections' checks are bounded"
        );

        let config = serve(&["--request-timeout-secs=5", "--db-acquire-timeout-secs=1"]).unwrap();
        let pool = config.pool_config();
        assert_eq!(pool.statement_timeout, Some(Duration::from_secs(5)));
        assert_eq!(pool.acquire_timeout, Duration::from_secs(1));
        assert!(serve(&["--request-timeout-secs=0"]).is_err());
        assert!(serve(&["--db-acquire-timeout-secs=0"]).is_err());
    }
}
