//! Where a fresh consumer group starts on the stacks topic: the benches
//! publish first, then time a group that reads exactly what they
//! published, so each run's group must not read the earlier runs'
//! messages (the clock would time them as duplicates).

use std::time::Duration;

use odp_devstack::Stack;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer as _};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

const TIMEOUT: Duration = Duration::from_secs(10);

/// The stacks topic's partitions and their ends (the offset the next
/// message will get): where a group that reads only what comes next starts.
pub(crate) fn ends(stack: &Stack) -> Vec<(i32, i64)> {
    let consumer = client(stack, "bench-watermarks");
    let topic = &stack.topics().stacks;
    let metadata = consumer.fetch_metadata(Some(topic), TIMEOUT).unwrap();
    metadata.topics()[0]
        .partitions()
        .iter()
        .map(|partition| {
            let (_, high) = consumer
                .fetch_watermarks(topic, partition.id(), TIMEOUT)
                .unwrap();
            (partition.id(), high)
        })
        .collect()
}

/// Commits `offsets` of the stacks topic's partitions for `group`.
pub(crate) fn commit(stack: &Stack, group: &str, offsets: &[(i32, i64)]) {
    let topic = &stack.topics().stacks;
    let mut list = TopicPartitionList::new();
    for &(partition, offset) in offsets {
        list.add_partition_offset(topic, partition, Offset::Offset(offset))
            .unwrap();
    }
    client(stack, group)
        .commit(&list, CommitMode::Sync)
        .unwrap();
}

/// Commits, for the fresh consumer group `group`, the ends of the stacks
/// topic's partitions, so that its workers read only what is published
/// next.
#[allow(dead_code)] // not every bench starts a group at the end
pub(crate) fn start_at_end(stack: &Stack, group: &str) {
    commit(stack, group, &ends(stack));
}

fn client(stack: &Stack, group: &str) -> BaseConsumer {
    ClientConfig::new()
        .set("bootstrap.servers", stack.kafka_bootstrap())
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .unwrap()
}
