//! A worker left without partitions while its group makes no progress
//! rejoins the group.
//!
//! Tansu 0.6 can leave a consumer group formed with nobody assigned: a
//! worker SIGKILLed while it led the group and restarted at once joins as
//! a follower of its dead self, gets an empty assignment, and when the
//! dead member's session expires the group is marked forming again without
//! a new generation, so no member is ever told to rejoin
//! (docs/tansu-group-recovery.md). Apache Kafka rebalances by itself after
//! the session timeout. So a worker that holds no partition watches its
//! group's committed offsets: when the topics have lag and the offsets
//! have not moved for a session timeout and then some, nobody is consuming
//! them, and it leaves and joins the group again, which forms it anew.
//! A worker idle beside busy ones (more workers than partitions) sees the
//! offsets move and stays put.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer;
use rdkafka::{Offset, TopicPartitionList};
use tokio::sync::watch;

use crate::metrics::PipelineMetrics;
use crate::poll::KafkaConsumer;

const CHECK_EVERY: Duration = Duration::from_secs(1);
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) struct StallWatch {
    pub(crate) consumer: Arc<KafkaConsumer>,
    pub(crate) topics: Vec<String>,
    /// How long the offsets may stand still, lag waiting, before the worker
    /// rejoins: the session timeout (by then any dead member is gone)
    /// plus a margin.
    pub(crate) patience: Duration,
    pub(crate) metrics: Arc<PipelineMetrics>,
}

/// The group's progress on the topics: (lag, sum of committed offsets).
type Progress = (i64, i64);

impl StallWatch {
    pub(crate) async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut still_since: Option<(Instant, i64)> = None;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(CHECK_EVERY) => {}
                _ = stop.wait_for(|stopped| *stopped) => return,
            }
            let assigned = self.consumer.assignment().map_or(0, |a| a.count());
            if assigned > 0 {
                still_since = None;
                continue;
            }
            let consumer = self.consumer.clone();
            let topics = self.topics.clone();
            let progress = tokio::task::spawn_blocking(move || progress(&consumer, &topics)).await;
            let Ok(Some((lag, committed))) = progress else {
                continue;
            };
            still_since = next_state(still_since, lag, committed, Instant::now());
            if let Some((since, _)) = still_since {
                if since.elapsed() >= self.patience {
                    tracing::warn!(
                        lag,
                        still_secs = since.elapsed().as_secs(),
                        "no partitions while the group's offsets stand still: rejoining the group"
                    );
                    self.metrics.group_rejoins.inc();
                    self.consumer.unsubscribe();
                    let topics: Vec<&str> = self.topics.iter().map(String::as_str).collect();
                    if let Err(e) = self.consumer.subscribe(&topics) {
                        tracing::error!(error = %e, "subscribing again failed");
                    }
                    still_since = None;
                }
            }
        }
    }
}

/// Since when the offsets stand still with lag waiting, given the last
/// state and a new reading.
fn next_state(
    last: Option<(Instant, i64)>,
    lag: i64,
    committed: i64,
    now: Instant,
) -> Option<(Instant, i64)> {
    if lag == 0 {
        return None;
    }
    match last {
        Some((since, before)) if before == committed => Some((since, before)),
        _ => Some((now, committed)),
    }
}

/// The lag of the group on `topics` and the sum of its committed offsets,
/// or `None` when the broker cannot say now.
fn progress(consumer: &KafkaConsumer, topics: &[String]) -> Option<Progress> {
    let mut list = TopicPartitionList::new();
    for topic in topics {
        let metadata = consumer.fetch_metadata(Some(topic), QUERY_TIMEOUT).ok()?;
        for t in metadata.topics().iter().filter(|t| t.name() == topic) {
            for p in t.partitions() {
                list.add_partition(topic, p.id());
            }
        }
    }
    let committed = consumer.committed_offsets(list, QUERY_TIMEOUT).ok()?;
    let (mut lag, mut sum) = (0i64, 0i64);
    for element in committed.elements() {
        let (low, high) = consumer
            .fetch_watermarks(element.topic(), element.partition(), QUERY_TIMEOUT)
            .ok()?;
        let at = match element.offset() {
            Offset::Offset(offset) => offset,
            // Nothing committed yet: the group would start at the earliest.
            _ => low,
        };
        lag += (high - at).max(0);
        sum += at;
    }
    Some((lag, sum))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_standing_offsets_with_lag_count_as_stalled() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(5);
        assert_eq!(next_state(None, 0, 10, t0), None);
        let started = next_state(None, 3, 10, t0);
        assert_eq!(started, Some((t0, 10)));
        // Still standing: the clock keeps its start.
        assert_eq!(next_state(started, 3, 10, t1), Some((t0, 10)));
        // Moving: someone consumes; the clock starts again.
        assert_eq!(next_state(started, 3, 12, t1), Some((t1, 12)));
        // Caught up: nothing waits.
        assert_eq!(next_state(started, 0, 13, t1), None);
    }
}
