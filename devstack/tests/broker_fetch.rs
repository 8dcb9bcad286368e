//! The in-memory broker (the dev stack's for tests and benches) serves a
//! consumer from any offset, as Apache Kafka does: from a batch's own
//! offset the batches that follow, and from inside a batch that whole
//! batch, whose records before the offset the client skips. Tansu 0.6
//! started such a fetch at the next batch, losing the rest of the one the
//! offset was in (our patch, scripts/tansu/patches/tansu-storage.patch).

use std::time::{Duration, Instant};

use odp_devstack::{create_topics, Broker};
use odp_plumbing::Topics;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

const MESSAGES: i64 = 64;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_reads_every_record_from_any_offset() {
    let broker = Broker::start()
        .await
        .expect("start the broker (needs tansu: scripts/bootstrap.sh broker)");
    let topics = Topics::with_prefix(&format!("fetch-{}-", uuid::Uuid::new_v4().simple()));
    create_topics(broker.bootstrap(), &topics)
        .await
        .expect("create the topics");
    // The events topic has one partition; the records are sent together,
    // so the producer packs them into batches of several.
    produce_in_batches(broker.bootstrap(), &topics.events).await;

    let bootstrap = broker.bootstrap().to_owned();
    let topic = topics.events.clone();
    tokio::task::spawn_blocking(move || {
        for start in 0..MESSAGES {
            let read = read_from(&bootstrap, &topic, start, (MESSAGES - start) as usize);
            let expected: Vec<(i64, String)> =
                (start..MESSAGES).map(|o| (o, format!("m{o}"))).collect();
            assert_eq!(read, expected, "reading from offset {start}");
        }
        assert_eq!(read_from(&bootstrap, &topic, MESSAGES, 0), []);
    })
    .await
    .unwrap();
}

async fn produce_in_batches(bootstrap: &str, topic: &str) {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "false")
        .set("linger.ms", "200")
        .set("batch.num.messages", "8")
        .set("message.timeout.ms", "20000")
        .create()
        .unwrap();
    let payloads: Vec<String> = (0..MESSAGES).map(|o| format!("m{o}")).collect();
    // Enqueued before any is awaited, so they wait for the linger together.
    let deliveries: Vec<_> = payloads
        .iter()
        .map(|payload| {
            producer
                .send_result(
                    FutureRecord::<(), _>::to(topic)
                        .partition(0)
                        .payload(payload),
                )
                .map_err(|(error, _)| error)
                .expect("enqueue")
        })
        .collect();
    for (delivery, expected) in deliveries.into_iter().zip(0..) {
        let delivered = delivery
            .await
            .expect("delivery report")
            .map_err(|(error, _)| error)
            .expect("produce");
        assert_eq!(
            delivered.offset, expected,
            "records are stored in the order sent"
        );
    }
    producer.flush(Duration::from_secs(10)).unwrap();
}

/// The offsets and payloads a fresh consumer assigned at `start` reads,
/// waiting for `expected` records (and a second more when none are).
fn read_from(bootstrap: &str, topic: &str, start: i64, expected: usize) -> Vec<(i64, String)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("fetch-{start}"))
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, Offset::Offset(start))
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let patience = if expected == 0 {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(30)
    };
    let deadline = Instant::now() + patience;
    let mut read = Vec::new();
    while read.len() < expected.max(1) && Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(100)) {
            let message = message.expect("consume");
            let payload = String::from_utf8(message.payload().unwrap().to_vec()).unwrap();
            read.push((message.offset(), payload));
        }
    }
    read
}
