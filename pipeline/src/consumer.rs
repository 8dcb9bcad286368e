//! The consumer's side of loss-free scale-out: which partitions have work
//! in flight (polled but not yet committed), and a context that, when a
//! rebalance takes partitions away, waits for that work to be stored and
//! committed before letting them go — so the next owner starts where this
//! worker stopped instead of redoing its last batches. The context also
//! turns librdkafka's statistics into the consumer-lag gauges.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::{ClientContext, Statistics};

use crate::metrics::PipelineMetrics;

type Partition = (String, i32);

/// Messages polled and not yet committed, per partition.
#[derive(Default)]
pub(crate) struct InFlight {
    pending: Mutex<HashMap<Partition, usize>>,
    settled: Condvar,
}

impl InFlight {
    /// Counts a batch's messages as in flight.
    pub(crate) fn add(&self, partitions: impl IntoIterator<Item = Partition>) {
        let mut pending = self.pending.lock().expect("in-flight lock");
        for partition in partitions {
            *pending.entry(partition).or_default() += 1;
        }
    }

    /// A batch's messages are settled (committed, or abandoned to be
    /// redelivered).
    pub(crate) fn remove(&self, partitions: impl IntoIterator<Item = Partition>) {
        let mut pending = self.pending.lock().expect("in-flight lock");
        for partition in partitions {
            if let Some(count) = pending.get_mut(&partition) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    pending.remove(&partition);
                }
            }
        }
        self.settled.notify_all();
    }

    /// Blocks until none of `partitions` has work in flight, or `timeout`
    /// passes; returns whether they settled.
    pub(crate) fn wait_settled(&self, partitions: &[Partition], timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut pending = self.pending.lock().expect("in-flight lock");
        loop {
            if !partitions.iter().any(|p| pending.contains_key(p)) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            pending = self
                .settled
                .wait_timeout(pending, left)
                .expect("in-flight lock")
                .0;
        }
    }
}

pub(crate) struct WorkerContext {
    pub(crate) metrics: Arc<PipelineMetrics>,
    pub(crate) in_flight: Arc<InFlight>,
    /// How long a revocation waits for in-flight work.
    pub(crate) flush_timeout: Duration,
    /// Whether polling is paused for backpressure (see `poll.rs`).
    pub(crate) paused: Arc<AtomicBool>,
}

impl ClientContext for WorkerContext {
    fn stats(&self, statistics: Statistics) {
        for (topic, stats) in statistics.topics {
            for (partition, stats) in stats.partitions {
                // -1 is librdkafka's internal "unassigned" partition; a lag
                // of -1 means not known yet.
                if partition < 0 || stats.consumer_lag < 0 || stats.fetch_state != "active" {
                    continue;
                }
                self.metrics.set_lag(&topic, partition, stats.consumer_lag);
            }
        }
    }
}

impl ConsumerContext for WorkerContext {
    // Runs on the polling task, inside `recv`, before librdkafka releases
    // the partitions: blocking here is what holds the release back.
    fn pre_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let Rebalance::Revoke(revoked) = rebalance else {
            return;
        };
        let partitions: Vec<Partition> = revoked
            .elements()
            .iter()
            .map(|e| (e.topic().to_owned(), e.partition()))
            .collect();
        for (topic, partition) in &partitions {
            self.metrics.clear_lag(topic, *partition);
        }
        if self.in_flight.wait_settled(&partitions, self.flush_timeout) {
            tracing::info!(partitions = partitions.len(), "revoked partitions flushed");
        } else {
            // Their batches will still be stored; the commit may then fail
            // and the next owner redo them, which storage makes harmless.
            tracing::warn!(timeout = ?self.flush_timeout, "revoked partitions not flushed in time");
        }
    }

    // librdkafka keeps a partition's pause flag when the partition is
    // revoked, so one paused for backpressure, taken away and later given
    // back would never be fetched again (the resume only covers what is
    // assigned at that moment). Every assigned partition is therefore set
    // to the poller's current state.
    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(assigned) = rebalance {
            let paused = self.paused.load(Ordering::SeqCst);
            let applied = if paused {
                consumer.pause(assigned)
            } else {
                consumer.resume(assigned)
            };
            if let Err(e) = applied {
                tracing::warn!(error = %e, paused, "setting assigned partitions' pause state failed");
            }
            tracing::info!(partitions = assigned.count(), paused, "partitions assigned");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(topic: &str, partition: i32) -> Partition {
        (topic.to_owned(), partition)
    }

    #[test]
    fn waits_only_for_the_partitions_asked_about() {
        let in_flight = InFlight::default();
        in_flight.add([p("s", 0), p("s", 0), p("s", 1)]);
        assert!(in_flight.wait_settled(&[p("s", 2)], Duration::ZERO));
        assert!(!in_flight.wait_settled(&[p("s", 0)], Duration::from_millis(10)));
        in_flight.remove([p("s", 0)]);
        assert!(!in_flight.wait_settled(&[p("s", 0)], Duration::ZERO));
        in_flight.remove([p("s", 0)]);
        assert!(in_flight.wait_settled(&[p("s", 0)], Duration::ZERO));
        assert!(!in_flight.wait_settled(&[p("s", 1)], Duration::ZERO));
    }

    #[test]
    fn a_waiter_wakes_when_another_thread_settles() {
        let in_flight = Arc::new(InFlight::default());
        in_flight.add([p("s", 3)]);
        let settler = {
            let in_flight = in_flight.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                in_flight.remove([p("s", 3)]);
            })
        };
        assert!(in_flight.wait_settled(&[p("s", 3)], Duration::from_secs(30)));
        settler.join().unwrap();
    }
}
