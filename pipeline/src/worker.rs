//! The consume → store → commit loop.

use std::future::Future;
use std::time::Duration;

use odp_core::Snapshot;
use odp_store::StoreError;
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::producer::FutureProducer;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use sqlx::PgPool;

use crate::batch::{self, RawMessage, Rejected};
use crate::detect::{DetectError, Detector};
use crate::{alerts, dead_letter, Config, PipelineError};

const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Runs the worker until `shutdown` resolves. A batch in flight when it
/// does is abandoned uncommitted and redelivered to whoever next owns its
/// partitions, which storage makes harmless.
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> Result<(), PipelineError> {
    let pool = retry_transient("connect to postgres", || {
        odp_store::connect(&config.database_url)
    })
    .await?;
    odp_store::migrate(&pool).await?;
    let detector = retry_detector(&pool).await;
    // Dropping `stop_alerts` (on any return) stops the sender too.
    let (stop_alerts, alerts_stopped) = tokio::sync::watch::channel(false);
    let sender = alerts::Sender::new(pool.clone(), config.alerts.clone())?;
    let alert_task = tokio::spawn(alerts::run(sender, alerts_stopped));
    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", &config.kafka_bootstrap)
        .set("group.id", &config.group_id)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "30000")
        .create()?;
    consumer.subscribe(&[&config.topics.stacks, &config.topics.events])?;
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &config.kafka_bootstrap)
        .set("enable.idempotence", "true")
        .set("compression.type", "lz4")
        .create()?;
    tracing::info!(group = %config.group_id, stacks = %config.topics.stacks, events = %config.topics.events, "pipeline started");

    tokio::pin!(shutdown);
    loop {
        let work = async {
            let messages = next_batch(&consumer, &config).await;
            let sinks = Sinks {
                pool: &pool,
                producer: &producer,
                consumer: &consumer,
                detector: &detector,
            };
            process(&sinks, &config, messages).await
        };
        tokio::select! {
            _ = &mut shutdown => break,
            result = work => result?,
        }
    }
    let _ = stop_alerts.send(true);
    if let Err(e) = alert_task.await {
        tracing::error!(error = %e, "alert sender panicked");
    }
    tracing::info!("pipeline stopped");
    Ok(())
}

/// Waits for one message, then gathers more until the batch is full or its
/// wait is over.
async fn next_batch(consumer: &StreamConsumer, config: &Config) -> Vec<RawMessage> {
    let mut batch = Vec::new();
    let mut deadline = None;
    while batch.len() < config.batch_max as usize {
        let received = match deadline {
            None => consumer.recv().await,
            Some(deadline) => match tokio::time::timeout_at(deadline, consumer.recv()).await {
                Ok(received) => received,
                Err(_) => break,
            },
        };
        match received {
            Ok(m) => {
                batch.push(RawMessage {
                    topic: m.topic().to_owned(),
                    partition: m.partition(),
                    offset: m.offset(),
                    key: m.key().map(<[u8]>::to_vec),
                    payload: m.payload().unwrap_or_default().to_vec(),
                });
                deadline.get_or_insert_with(|| tokio::time::Instant::now() + config.batch_wait());
            }
            // librdkafka reports broker hiccups here and recovers by itself.
            Err(e) => tracing::warn!(error = %e, "kafka consume error"),
        }
    }
    batch
}

/// Where a batch's work goes.
struct Sinks<'a> {
    pool: &'a PgPool,
    producer: &'a FutureProducer,
    consumer: &'a StreamConsumer,
    detector: &'a Detector,
}

async fn process(
    sinks: &Sinks<'_>,
    config: &Config,
    messages: Vec<RawMessage>,
) -> Result<(), PipelineError> {
    let Sinks {
        pool,
        producer,
        consumer,
        ..
    } = *sinks;
    let positions: Vec<(String, i32, i64)> = messages
        .iter()
        .map(|m| (m.topic.clone(), m.partition, m.offset))
        .collect();
    let mut decoded = batch::decode(messages, &config.topics.stacks, &config.topics.events);
    let touched = batch::profiles_to_evaluate(&decoded);

    let snapshots: Vec<&Snapshot> = decoded.snapshots.iter().map(|(_, s)| s).collect();
    let stored = retry_transient("store snapshots", || {
        odp_store::store_snapshots(pool, &snapshots)
    })
    .await;
    drop(snapshots);
    match stored {
        Ok(outcome) => tracing::info!(
            stored = outcome.stored,
            duplicates = outcome.duplicates,
            samples = outcome.samples,
            "snapshots stored"
        ),
        Err(e) => {
            // Something in the batch is unstorable: store one at a time so
            // only the culprits go to the dead-letter topic.
            tracing::warn!(error = %e, "batch refused, storing snapshots one by one");
            for (message, snapshot) in std::mem::take(&mut decoded.snapshots) {
                let one = [&snapshot];
                if let Err(e) =
                    retry_transient("store snapshot", || odp_store::store_snapshots(pool, &one))
                        .await
                {
                    decoded.rejected.push(Rejected {
                        message,
                        reason: format!("unstorable snapshot: {e}"),
                    });
                }
            }
        }
    }
    for (message, event) in std::mem::take(&mut decoded.events) {
        if let Err(e) = retry_transient("record agent event", || {
            odp_store::record_agent_event(pool, &event)
        })
        .await
        {
            decoded.rejected.push(Rejected {
                message,
                reason: format!("unstorable agent event: {e}"),
            });
        }
    }
    // After the data is durable, before the offsets are: a crash re-runs
    // the evaluation, whose upserts make that harmless.
    sinks.detector.evaluate_all(pool, &touched).await;
    for rejected in &decoded.rejected {
        retry_dead_letter(producer, &config.topics.dead_letter, rejected).await;
    }
    commit(consumer, &positions)
}

fn commit(
    consumer: &StreamConsumer,
    positions: &[(String, i32, i64)],
) -> Result<(), PipelineError> {
    let mut list = TopicPartitionList::new();
    for (topic, partition, offset) in batch::commit_positions(positions) {
        list.add_partition_offset(&topic, partition, Offset::Offset(offset))?;
    }
    if list.count() == 0 {
        return Ok(());
    }
    // A synchronous commit blocks on the broker; keep it off the async
    // worker threads' hot path.
    tokio::task::block_in_place(|| consumer.commit(&list, CommitMode::Sync))?;
    Ok(())
}

/// Installs the seed rules and loads the rule set, retrying while the
/// database is unavailable. Any other failure leaves detection without rules until they load, rather
/// than stopping ingest.
async fn retry_detector(pool: &PgPool) -> Detector {
    let mut backoff = Duration::from_millis(100);
    loop {
        match Detector::start(pool).await {
            Ok(detector) => return detector,
            Err(DetectError::Store(e)) if e.is_transient() => {
                tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "loading rules failed, retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(e) => {
                tracing::error!(error = %e, "issue detection unavailable at start-up");
                return Detector::unloaded();
            }
        }
    }
}

/// Retries while the error is transient (database down, connection lost),
/// with exponential backoff; returns the first permanent error.
async fn retry_transient<T, F, Fut>(what: &str, mut attempt: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut backoff = Duration::from_millis(100);
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(e) if e.is_transient() => {
                tracing::warn!(error = %e, what, retry_in_ms = backoff.as_millis() as u64, "transient failure, retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(e) => return Err(e),
        }
    }
}

/// The dead-letter publish must succeed before the offset is committed, or
/// the message would be lost: retry until the broker takes it.
async fn retry_dead_letter(producer: &FutureProducer, topic: &str, rejected: &Rejected) {
    let mut backoff = Duration::from_millis(100);
    while let Err(e) = dead_letter::publish(producer, topic, rejected).await {
        tracing::error!(error = %e, retry_in_ms = backoff.as_millis() as u64, "dead-letter publish failed, retrying");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
