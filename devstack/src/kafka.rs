//! The Kafka side of the stack: topic names, the Tansu broker, topic creation.

use std::path::{Path, PathBuf};
use std::time::Duration;

use odp_plumbing::Topics;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::ClientConfig;

use crate::error::{kafka_error, DevError, IoContext, Result};
use crate::ports::port_accepts;
use crate::process::{wait_for, ServiceProcess};

/// librdkafka settings every service gets on the local stack
/// (`ODP_KAFKA_OPTIONS`). Apache Kafka needs none of this.
///
/// - Tansu 0.6 answers a fetch that starts inside a record batch with
///   nothing, so a consumer resuming mid-batch (after a restart, a
///   rebalance or a pause) would skip the rest of that batch: one record
///   per batch keeps every position on a batch boundary.
/// - An idempotent producer whose batches timed out (a frozen broker) bumps
///   its producer epoch itself, which Tansu 0.6 never accepts: the producer
///   would retry for ever. Without idempotence, one request in flight keeps
///   batches in order, and the pipeline drops the duplicates a retry can
///   make by (agent, profile, sequence).
pub const TANSU_KAFKA_OPTIONS: &str =
    "batch.num.messages=1,enable.idempotence=false,max.in.flight.requests.per.connection=1";

/// Where the broker keeps its topics, group offsets and producer state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BrokerStorage {
    /// Tansu's SQLite engine in this directory: what the broker
    /// acknowledged survives its restart, like Apache Kafka's log.
    Durable(PathBuf),
    /// In memory: a restart loses every record and committed offset.
    Memory,
}

impl BrokerStorage {
    /// `--storage-engine` and the directory the broker runs in (the SQLite
    /// engine resolves its file against it).
    fn engine_and_dir(&self, log_dir: &Path) -> (String, PathBuf) {
        match self {
            BrokerStorage::Durable(dir) => ("sqlite://tansu.db".to_owned(), dir.clone()),
            BrokerStorage::Memory => ("memory://tansu/".to_owned(), log_dir.to_owned()),
        }
    }
}

/// Starts `tansu broker` on 127.0.0.1:`port`.
pub(crate) fn spawn_tansu(
    tansu: &Path,
    port: u16,
    storage: &BrokerStorage,
    log_dir: &Path,
    detach: bool,
) -> Result<ServiceProcess> {
    let url = format!("tcp://127.0.0.1:{port}");
    let (engine, dir) = storage.engine_and_dir(log_dir);
    std::fs::create_dir_all(&dir).io_context(|| format!("creating {}", dir.display()))?;
    ServiceProcess::builder("tansu", tansu)
        .args([
            "broker",
            "--listener-url",
            &url,
            "--advertised-listener-url",
            &url,
        ])
        .args(["--storage-engine", &engine])
        // Tansu reads these from the environment too; keep a stray export
        // (e.g. a developer's real broker settings) from redirecting it.
        .env_remove("CLUSTER_ID")
        .env_remove("SCHEMA_REGISTRY")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .log_dir(log_dir)
        .current_dir(dir)
        .own_process_group(detach)
        .spawn()
}

/// Waits until the broker listens and answers a metadata request.
pub(crate) async fn wait_broker_ready(
    bootstrap: &str,
    port: u16,
    broker: &mut ServiceProcess,
    timeout: Duration,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    // A dead broker would otherwise only show up as a timeout.
    let mut exited = None;
    wait_for("the Kafka broker to listen", timeout, || {
        let listening = port_accepts(port);
        if let Err(error) = broker.ensure_running() {
            exited = Some(error);
        }
        let stop = listening || exited.is_some();
        async move { stop }
    })
    .await?;
    if let Some(error) = exited {
        return Err(error);
    }

    loop {
        let last_error = match fetch_metadata(bootstrap, Duration::from_secs(3)).await {
            Ok(()) => return Ok(()),
            Err(error) => error.to_string(),
        };
        broker.ensure_running()?;
        if tokio::time::Instant::now() >= deadline {
            return Err(DevError::Timeout {
                what: format!("the Kafka broker at {bootstrap} to answer metadata requests"),
                timeout,
                detail: format!(" ({last_error})"),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn admin_client(bootstrap: &str) -> Result<AdminClient<DefaultClientContext>> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        // Fail fast on a broker that is not up yet; the caller retries.
        .set("socket.timeout.ms", "3000")
        .create()
        .map_err(|error| kafka_error("creating an admin client", error))
}

/// One metadata round trip (blocking in librdkafka, so off the async threads).
pub async fn fetch_metadata(bootstrap: &str, timeout: Duration) -> Result<()> {
    let bootstrap = bootstrap.to_owned();
    tokio::task::spawn_blocking(move || {
        let admin = admin_client(&bootstrap)?;
        admin
            .inner()
            .fetch_metadata(None, timeout)
            .map(|_| ())
            .map_err(|error| kafka_error(format!("fetching metadata from {bootstrap}"), error))
    })
    .await
    .map_err(|error| DevError::Invalid(format!("metadata task failed: {error}")))?
}

/// Creates the topics; ones that already exist are left as they are.
pub async fn create_topics(bootstrap: &str, topics: &Topics) -> Result<()> {
    let admin = admin_client(bootstrap)?;
    let specs = topics.specs();
    let new_topics: Vec<NewTopic<'_>> = specs
        .iter()
        .map(|spec| NewTopic::new(&spec.name, spec.partitions, TopicReplication::Fixed(1)))
        .collect();
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let results = admin
        .create_topics(&new_topics, &options)
        .await
        .map_err(|error| kafka_error("creating topics", error))?;
    for result in results {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, code)) => return Err(kafka_error(format!("creating topic {name}"), code)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_topic_names_match_the_design() {
        let topics = Topics::default();
        assert_eq!(topics.commands, "odp.commands");
        assert_eq!(topics.stacks, "odp.stacks");
        assert_eq!(topics.events, "odp.events");
        assert_eq!(topics.dead_letter, "odp.dead-letter");
        let partitions: Vec<i32> = topics.specs().iter().map(|spec| spec.partitions).collect();
        assert_eq!(partitions, [4, 4, 1, 1]);
    }

    #[test]
    fn prefix_and_cli_args() {
        let topics = Topics::with_prefix("t1-");
        assert_eq!(topics.dead_letter, "t1-odp.dead-letter");
        assert_eq!(
            topics.cli_args(),
            [
                "--topic-commands",
                "t1-odp.commands",
                "--topic-stacks",
                "t1-odp.stacks",
                "--topic-events",
                "t1-odp.events",
                "--topic-dead-letter",
                "t1-odp.dead-letter",
            ]
        );
    }
}
