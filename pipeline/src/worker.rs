//! The consume → store → commit loop.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use odp_plumbing::Backoff;
use odp_store::{Database, SnapshotToStore, StoreError};
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::producer::FutureProducer;
use rdkafka::{Offset, TopicPartitionList};
use uuid::Uuid;

use crate::batch::authenticity::{self, Trust, UNAUTHENTICATED};
use crate::batch::{self, Prepared, RawMessage, Rejected, Sources};
use crate::consumer::{InFlight, WorkerContext};
use crate::detect::{DetectError, Detector};
use crate::metrics::PipelineMetrics;
use crate::poll::{KafkaConsumer, Poller};
use crate::{alerts, dead_letter, retention, Config, PipelineError};

/// Waits between retries of a store while Postgres is away (or of a
/// dead-letter publish): from 100 ms, doubling, at most 5 s so ingestion
/// resumes within seconds of its return.
const BACKOFF: Backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));

/// Runs the worker until `shutdown` resolves, then drains: polling stops,
/// batches already handed over are stored and committed (for up to
/// `--drain-timeout-secs`), and the worker leaves the group. Anything
/// still unstored then stays uncommitted and is redelivered to whoever
/// next owns its partitions, which storage makes harmless.
pub async fn run(
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), PipelineError> {
    // Before anything else: without it no message can be believed.
    let verifier = Arc::new(config.message_verifier()?);
    let pool_config = odp_store::PoolConfig::default();
    let pool = retry_transient("connect to the database", || {
        Database::connect_with(&config.database_url, &pool_config)
    })
    .await?;
    pool.migrate().await?;
    let detector = Arc::new(
        retry_detector(&pool)
            .await
            .evaluating_every(Duration::from_secs(config.detect_interval_secs)),
    );
    // Dropping `stop_alerts` (on any return) stops the background tasks too.
    let (stop_alerts, alerts_stopped) = tokio::sync::watch::channel(false);
    let sender = alerts::Sender::new(pool.clone(), config.alerts.clone())?;
    let deferred_task = tokio::spawn(Detector::run_deferred(
        detector.clone(),
        pool.clone(),
        alerts_stopped.clone(),
    ));
    let reanalysis_task = tokio::spawn(crate::reanalysis::run(
        pool.clone(),
        detector.clone(),
        alerts_stopped.clone(),
    ));
    let revoked = retry_transient("load the revoked agent identities", || {
        authenticity::load_revoked(&pool)
    })
    .await?;
    let revoked_count = revoked.len() as i64;
    let (revoked_sender, revoked) = tokio::sync::watch::channel(Arc::new(revoked));
    let trust = Trust { verifier, revoked };
    let alert_task = tokio::spawn(alerts::run(sender, alerts_stopped.clone()));
    let (stop_retention, retention_stopped) = tokio::sync::watch::channel(false);
    let retention_task = tokio::spawn(retention::run(
        pool.clone(),
        config.retention.clone(),
        retention_stopped.clone(),
    ));
    let mut registry = odp_metrics::Registry::default();
    let metrics = PipelineMetrics::register(&mut registry);
    metrics.revoked_identities.set(revoked_count);
    let revocation_task = tokio::spawn(authenticity::refresh_revoked(
        pool.clone(),
        config.revocation_refresh(),
        revoked_sender,
        metrics.clone(),
        alerts_stopped,
    ));
    if let Some(listen) = config.metrics_listen {
        odp_metrics::spawn(listen, Arc::new(odp_metrics::Metrics::new(registry))).await?;
    }
    let compaction_task = tokio::spawn(crate::compaction::run(
        pool.clone(),
        Duration::from_secs(config.compact_after_secs),
        metrics.clone(),
        retention_stopped,
    ));
    let in_flight = Arc::new(InFlight::default());
    let paused = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let kafka = config
        .kafka
        .validate()
        .map_err(|e| PipelineError::Config(e.to_string()))?;
    config
        .topics
        .validate()
        .map_err(|e| PipelineError::Config(e.to_string()))?;
    // A whole message of the largest size, and the record's framing: what
    // is fetched must not stop short of what the agents may send.
    let fetch_bytes = config.max_message_bytes + (64 << 10);
    let consumer: Arc<KafkaConsumer> = Arc::new(
        kafka
            .client(&[])
            .set("group.id", &config.group_id)
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("session.timeout.ms", config.session_timeout_ms.to_string())
            .set("statistics.interval.ms", "5000")
            .set("max.partition.fetch.bytes", fetch_bytes.to_string())
            .create_with_context(WorkerContext {
                metrics: metrics.clone(),
                in_flight: in_flight.clone(),
                flush_timeout: Duration::from_secs(config.rebalance_flush_secs),
                paused: paused.clone(),
            })?,
    );
    consumer.subscribe(&[&config.topics.stacks, &config.topics.events])?;
    let (stop_watch, watch_stopped) = tokio::sync::watch::channel(false);
    let stall_watch = tokio::spawn(
        crate::rejoin::StallWatch {
            consumer: consumer.clone(),
            topics: vec![config.topics.stacks.clone(), config.topics.events.clone()],
            patience: Duration::from_millis(config.session_timeout_ms) + Duration::from_secs(1),
            metrics: metrics.clone(),
        }
        .run(watch_stopped),
    );
    // Idempotence is a default the operator may override with --kafka-option.
    let producer: FutureProducer = kafka
        .client(&[("enable.idempotence", "true")])
        .set("compression.type", "lz4")
        .set("message.max.bytes", fetch_bytes.to_string())
        .create()?;
    tracing::info!(group = %config.group_id, stacks = %config.topics.stacks, events = %config.topics.events, "pipeline started");

    let (stop, stopping) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("shutting down: draining");
        let _ = stop.send(true);
    });
    let (batches, queued) = tokio::sync::mpsc::channel(config.queued_batches as usize);
    let poller = Poller {
        consumer: consumer.clone(),
        batch_max: config.batch_max as usize,
        batch_wait: config.batch_wait(),
        in_flight: in_flight.clone(),
        metrics: metrics.clone(),
        paused,
    };
    let polling = tokio::spawn(poller.run(batches, stopping.clone()));
    let clocks = crate::clocks::Clocks::default();
    let sinks = Sinks {
        clocks: &clocks,
        pool: &pool,
        producer: &producer,
        consumer: &consumer,
        detector: &detector,
        metrics: &metrics,
        in_flight: &in_flight,
        trust: &trust,
    };
    let outcome = process_queued(&sinks, &config, queued, stopping).await;
    let _ = stop_watch.send(true);
    stall_watch.abort();
    polling.abort();
    consumer.unsubscribe();
    let _ = stop_alerts.send(true);
    revocation_task.abort();
    if let Err(e) = alert_task.await {
        tracing::error!(error = %e, "alert sender panicked");
    }
    // A pass under way is cut short between batches; each batch is its
    // own transaction, so nothing is left half done.
    let _ = stop_retention.send(true);
    retention_task.abort();
    compaction_task.abort();
    if let Err(e) = reanalysis_task.await {
        tracing::error!(error = %e, "rule re-analysis panicked");
    }
    if let Err(e) = deferred_task.await {
        tracing::error!(error = %e, "deferred issue detection panicked");
    }
    tracing::info!("pipeline stopped");
    outcome
}

/// Processes batches as the poller queues them. On shutdown the poller
/// ends and drops its sender, so `recv` yields the batches still queued
/// and then `None`: that is the drain, cut short after the drain timeout.
///
/// While a batch is stored, the next one, if already queued, is taken and
/// decoded on a blocking thread, so decoding does not wait for Postgres
/// nor Postgres for decoding. It stays counted in flight until processed,
/// as if still queued; the queue thereby holds one batch more.
async fn process_queued(
    sinks: &Sinks<'_>,
    config: &Config,
    mut queued: tokio::sync::mpsc::Receiver<Vec<RawMessage>>,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<(), PipelineError> {
    let drain_timeout = Duration::from_secs(config.drain_timeout_secs);
    let give_up = async move {
        let _ = stopping.wait_for(|stopped| *stopped).await;
        tokio::time::sleep(drain_timeout).await;
    };
    tokio::pin!(give_up);
    let mut ahead = None;
    loop {
        let decoding = match ahead.take() {
            Some(decoding) => decoding,
            None => {
                let messages = tokio::select! {
                    batch = queued.recv() => batch,
                    _ = &mut give_up => None,
                };
                let Some(messages) = messages else {
                    return Ok(());
                };
                decode_apart(config, sinks.trust, messages)
            }
        };
        let mut batch = match decoding.await {
            Ok(batch) => batch,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        if let Ok(next) = queued.try_recv() {
            ahead = Some(decode_apart(config, sinks.trust, next));
        }
        let partitions = std::mem::take(&mut batch.partitions);
        let result = tokio::select! {
            result = process(sinks, config, batch) => Some(result),
            _ = &mut give_up => None,
        };
        sinks.in_flight.remove(partitions);
        match result {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(e),
            None => {
                tracing::warn!(timeout = ?drain_timeout, "drain timed out; the rest is redelivered");
                return Ok(());
            }
        }
    }
}

/// Decodes `messages` on a blocking thread, against the revoked
/// identities as last loaded.
fn decode_apart(
    config: &Config,
    trust: &Trust,
    messages: Vec<RawMessage>,
) -> tokio::task::JoinHandle<Prepared> {
    let topics = config.topics.clone();
    let max_bytes = usize::try_from(config.max_message_bytes).unwrap_or(usize::MAX);
    let trust = trust.clone();
    tokio::task::spawn_blocking(move || {
        let sources = Sources {
            stacks_topic: &topics.stacks,
            events_topic: &topics.events,
            max_bytes,
        };
        trust.with_authenticator(|auth| batch::prepare(messages, sources, auth))
    })
}

/// Where a batch's work goes.
struct Sinks<'a> {
    /// The hosts' clock corrections.
    clocks: &'a crate::clocks::Clocks,
    pool: &'a Database,
    producer: &'a FutureProducer,
    consumer: &'a KafkaConsumer,
    detector: &'a Detector,
    metrics: &'a PipelineMetrics,
    in_flight: &'a InFlight,
    trust: &'a Trust,
}

async fn process(sinks: &Sinks<'_>, config: &Config, batch: Prepared) -> Result<(), PipelineError> {
    let Sinks {
        pool,
        producer,
        consumer,
        metrics,
        ..
    } = *sinks;
    let started = Instant::now();
    let Prepared {
        positions,
        mut decoded,
        ..
    } = batch;
    for (topic, ..) in &positions {
        metrics.consumed(topic);
    }
    let unauthenticated = decoded
        .rejected
        .iter()
        .filter(|r| r.reason.starts_with(UNAUTHENTICATED))
        .count();
    metrics.unauthenticated.inc_by(unauthenticated as u64);
    let refused_before = decoded.rejected.len();
    reject_foreign_hosts(pool, &mut decoded).await?;
    metrics
        .foreign_profile
        .inc_by((decoded.rejected.len() - refused_before) as u64);
    // After the segments were found by the agents' own times.
    let corrections = sinks.clocks.corrections(pool).await;
    let moved = crate::clocks::correct(&mut decoded, &corrections);
    metrics.clock_corrected.inc_by(moved as u64);
    // Only what is left is about to be stored: a refused `profile_finished`
    // must not have its (real) profile evaluated either.
    let touched = batch::profiles_to_evaluate(&decoded);

    // Each stored with its message's payload, the bytes it was decoded
    // from, as its block: not encoded again.
    let snapshots: Vec<SnapshotToStore<'_>> = decoded
        .snapshots
        .iter()
        .map(|(message, s)| SnapshotToStore::received(s, &message.payload))
        .collect();
    let stored = store(sinks, &snapshots).await;
    drop(snapshots);
    let stored_at = started.elapsed();
    match stored {
        Ok(outcome) => {
            tracing::info!(
                stored = outcome.stored,
                duplicates = outcome.duplicates,
                samples = outcome.samples,
                foreign = outcome.foreign.len(),
                "snapshots stored"
            );
            batch::reject_foreign(&mut decoded, &outcome.foreign);
        }
        Err(e) => {
            // Something in the batch is unstorable: store one at a time so
            // only the culprits go to the dead-letter topic.
            tracing::warn!(error = %e, "batch refused, storing snapshots one by one");
            for (message, snapshot) in std::mem::take(&mut decoded.snapshots) {
                match store(
                    sinks,
                    &[SnapshotToStore::received(&snapshot, &message.payload)],
                )
                .await
                {
                    Ok(outcome) => match outcome.foreign.first() {
                        Some(refused) => decoded.rejected.push(Rejected {
                            message,
                            reason: refused.reason(),
                        }),
                        None => decoded.snapshots.push((message, snapshot)),
                    },
                    Err(e) => decoded.rejected.push(Rejected {
                        message,
                        reason: format!("unstorable snapshot: {e}"),
                    }),
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
        } else {
            metrics.events_stored.inc();
        }
    }
    // After the data is durable, before the offsets are: a crash re-runs
    // the evaluation, whose upserts make that harmless.
    sinks
        .detector
        .evaluate_batch(pool, &touched.windows, &touched.finished)
        .await;
    for rejected in &decoded.rejected {
        retry_dead_letter(producer, &config.topics.dead_letter, rejected).await;
        metrics.dead_letters.inc();
    }
    let committing_at = started.elapsed();
    commit(consumer, metrics, &positions)?;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    tracing::debug!(
        messages = positions.len(),
        store_ms = ms(stored_at),
        after_ms = ms(committing_at - stored_at),
        commit_ms = ms(started.elapsed() - committing_at),
        "batch processed"
    );
    metrics
        .batch_seconds
        .observe(started.elapsed().as_secs_f64());
    Ok(())
}

/// Rejects the batch's snapshots and events for profiles that do not exist
/// or run on another host than their sender's: one look-up per batch.
/// Fails only when the database refuses it for good; nothing of the batch
/// is stored or committed then, so it is redelivered.
async fn reject_foreign_hosts(
    pool: &Database,
    decoded: &mut batch::Decoded,
) -> Result<(), PipelineError> {
    let named = authenticity::named_profiles(decoded);
    if named.is_empty() {
        return Ok(());
    }
    let profiles = odp_store::Profiles::new(pool.clone());
    let mut hosts =
        retry_transient("look up the hosts of profiles", || profiles.hosts(&named)).await?;
    open_continuous_segments(pool, decoded, &mut hosts).await?;
    authenticity::reject_foreign_hosts(decoded, &hosts);
    Ok(())
}

/// Opens the continuous profiles' segments the batch's unknown profiles
/// are ([`batch::segments`]) and adds their hosts to `hosts`. Reads the
/// configurations only when a batch names a profile the store lacks.
async fn open_continuous_segments(
    pool: &Database,
    decoded: &batch::Decoded,
    hosts: &mut HashMap<Uuid, String>,
) -> Result<(), PipelineError> {
    let unknown = batch::segments::unknown(decoded, hosts);
    if unknown.is_empty() {
        return Ok(());
    }
    let continuous = odp_store::ContinuousProfiles::new(pool.clone());
    let assignments =
        retry_transient("read the continuous profiles", || continuous.assignments()).await?;
    let segments = batch::segments::segments(&unknown, &assignments);
    for &(message, assignment, segment_start_s) in &segments {
        let segment = odp_store::Segment {
            profile_id: message.profile_id,
            assignment,
            host: &message.host,
            segment_start_s,
            agent_id: &message.agent_id,
        };
        let opened = retry_transient("open a continuous segment", || {
            continuous.open_segment(&segment)
        })
        .await?;
        if opened {
            tracing::info!(profile_id = %message.profile_id, host = %message.host,
                continuous = %assignment.id, segment_start_s, "continuous segment opened");
        }
    }
    // Opened now or by another worker meanwhile, or not at all when its
    // configuration was deleted: the store says which.
    let ids: Vec<Uuid> = segments.iter().map(|(m, _, _)| m.profile_id).collect();
    let profiles = odp_store::Profiles::new(pool.clone());
    hosts.extend(retry_transient("look up the hosts of segments", || profiles.hosts(&ids)).await?);
    Ok(())
}

/// Stores snapshots, retrying while Postgres is unavailable, and counts
/// what was stored.
async fn store(
    sinks: &Sinks<'_>,
    snapshots: &[SnapshotToStore<'_>],
) -> Result<odp_store::IngestOutcome, StoreError> {
    let outcome = retry_transient("store snapshots", || {
        odp_store::store_snapshots(sinks.pool, snapshots)
    })
    .await?;
    let metrics = sinks.metrics;
    metrics.snapshots_stored.inc_by(outcome.stored as u64);
    metrics
        .snapshots_duplicate
        .inc_by(outcome.duplicates as u64);
    metrics.samples_stored.inc_by(outcome.samples);
    Ok(outcome)
}

/// Commits the batch's offsets. A refused commit (the partition moved to
/// another worker in a rebalance) loses nothing: the data is stored, and
/// the next owner's redelivery is recognised as duplicate.
fn commit(
    consumer: &KafkaConsumer,
    metrics: &PipelineMetrics,
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
    if let Err(e) = tokio::task::block_in_place(|| consumer.commit(&list, CommitMode::Sync)) {
        metrics.commit_failures.inc();
        tracing::warn!(error = %e, "offset commit refused; the stored data will come back as duplicates");
    }
    Ok(())
}

/// Installs the seed rules and loads the rule set, retrying while the
/// database is unavailable. Any other failure leaves detection without rules until they load, rather
/// than stopping ingest.
async fn retry_detector(pool: &Database) -> Detector {
    let started = BACKOFF
        .retry(
            || Detector::start(pool),
            |e, wait| match e {
                DetectError::Store(e) if e.is_transient() => {
                    tracing::warn!(error = %e, retry_in_ms = wait.as_millis() as u64, "loading rules failed, retrying");
                    true
                }
                _ => false,
            },
        )
        .await;
    started.unwrap_or_else(|e| {
        tracing::error!(error = %e, "issue detection unavailable at start-up");
        Detector::unloaded()
    })
}

/// Retries while the error is transient (database down, connection lost),
/// with exponential backoff; returns the first permanent error.
async fn retry_transient<T, F, Fut>(what: &str, attempt: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    BACKOFF
        .retry(attempt, |e, wait| {
            let transient = e.is_transient();
            if transient {
                tracing::warn!(error = %e, what, retry_in_ms = wait.as_millis() as u64, "transient failure, retrying");
            }
            transient
        })
        .await
}

/// The dead-letter publish must succeed before the offset is committed, or
/// the message would be lost: retry until the broker takes it.
async fn retry_dead_letter(producer: &FutureProducer, topic: &str, rejected: &Rejected) {
    // Never gives up, so it returns only once the broker took it.
    let _published = BACKOFF
        .retry(
            || dead_letter::publish(producer, topic, rejected),
            |e, wait| {
                tracing::error!(error = %e, retry_in_ms = wait.as_millis() as u64, "dead-letter publish failed, retrying");
                true
            },
        )
        .await;
}
