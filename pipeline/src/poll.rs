//! The polling side of the worker: gathers messages into batches and hands
//! them to the processing side over a bounded channel. When processing
//! falls behind (Postgres slow or down) the channel fills, and polling
//! pauses the assigned partitions instead of buffering without bound —
//! while still polling, so rebalance callbacks keep being served and the
//! worker keeps its place in the group.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::Message;
use tokio::sync::{mpsc, watch};

use crate::batch::RawMessage;
use crate::consumer::{InFlight, WorkerContext};
use crate::metrics::PipelineMetrics;

pub(crate) type KafkaConsumer = StreamConsumer<WorkerContext>;

pub(crate) struct Poller {
    pub(crate) consumer: Arc<KafkaConsumer>,
    pub(crate) batch_max: usize,
    pub(crate) batch_wait: Duration,
    pub(crate) in_flight: Arc<InFlight>,
    pub(crate) metrics: Arc<PipelineMetrics>,
    /// Shared with the consumer context, which applies it to partitions
    /// assigned while paused.
    pub(crate) paused: Arc<AtomicBool>,
}

/// The partitions of a batch's messages, one entry per message.
pub(crate) fn partitions_of(batch: &[RawMessage]) -> Vec<(String, i32)> {
    batch
        .iter()
        .map(|m| (m.topic.clone(), m.partition))
        .collect()
}

impl Poller {
    /// Sends batches until `stop` turns true or the receiver is gone. A
    /// batch being gathered when it stops was never handed over: it stays
    /// uncommitted and is redelivered.
    pub(crate) async fn run(
        self,
        batches: mpsc::Sender<Vec<RawMessage>>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut carried = Vec::new();
        loop {
            let batch = tokio::select! {
                batch = self.next_batch(&mut carried) => batch,
                _ = stop.wait_for(|stopped| *stopped) => return,
            };
            let permit = match batches.try_reserve() {
                Ok(permit) => permit,
                Err(mpsc::error::TrySendError::Closed(())) => return,
                Err(mpsc::error::TrySendError::Full(())) => {
                    match self.wait_for_room(&batches, &mut carried, &mut stop).await {
                        Some(permit) => permit,
                        None => return,
                    }
                }
            };
            self.in_flight.add(partitions_of(&batch));
            permit.send(batch);
        }
    }

    /// Waits for one message (or takes those carried over), then gathers
    /// more until the batch is full or its wait is over.
    async fn next_batch(&self, carried: &mut Vec<RawMessage>) -> Vec<RawMessage> {
        let mut batch = std::mem::take(carried);
        let mut deadline =
            (!batch.is_empty()).then(|| tokio::time::Instant::now() + self.batch_wait);
        while batch.len() < self.batch_max {
            let received = match deadline {
                None => self.consumer.recv().await,
                Some(deadline) => {
                    match tokio::time::timeout_at(deadline, self.consumer.recv()).await {
                        Ok(received) => received,
                        Err(_) => break,
                    }
                }
            };
            match received {
                Ok(m) => {
                    batch.push(owned(&m));
                    deadline.get_or_insert_with(|| tokio::time::Instant::now() + self.batch_wait);
                }
                // librdkafka reports broker hiccups here and recovers by itself.
                Err(e) => tracing::warn!(error = %e, "kafka consume error"),
            }
        }
        batch
    }

    /// Pauses fetching until the channel has room, polling meanwhile;
    /// messages fetched before the pause took effect are carried into the
    /// next batch.
    async fn wait_for_room<'a>(
        &self,
        batches: &'a mpsc::Sender<Vec<RawMessage>>,
        carried: &mut Vec<RawMessage>,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<mpsc::Permit<'a, Vec<RawMessage>>> {
        self.metrics.queue_paused.inc();
        self.set_paused(true);
        let permit = loop {
            tokio::select! {
                permit = batches.reserve() => break permit.ok(),
                received = self.consumer.recv() => match received {
                    Ok(m) => carried.push(owned(&m)),
                    Err(e) => tracing::warn!(error = %e, "kafka consume error"),
                },
                _ = stop.wait_for(|stopped| *stopped) => break None,
            }
        };
        self.set_paused(false);
        permit
    }

    fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::SeqCst);
        self.metrics.polling_paused.set(i64::from(paused));
        let result = self.consumer.assignment().and_then(|assigned| {
            if paused {
                self.consumer.pause(&assigned)
            } else {
                self.consumer.resume(&assigned)
            }
        });
        match result {
            Ok(()) => tracing::debug!(paused, "partitions paused or resumed"),
            Err(e) => tracing::warn!(error = %e, paused, "pausing or resuming partitions failed"),
        }
    }
}

fn owned(m: &rdkafka::message::BorrowedMessage<'_>) -> RawMessage {
    let (certificate, signature) = odp_plumbing::signed::signature_of(m);
    RawMessage {
        topic: m.topic().to_owned(),
        partition: m.partition(),
        offset: m.offset(),
        key: m.key().map(<[u8]>::to_vec),
        payload: m.payload().unwrap_or_default().to_vec(),
        certificate,
        signature,
    }
}
