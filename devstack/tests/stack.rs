//! Starts a real stack (Tansu + private Postgres), sends one message through
//! a created topic, queries the migrated database, and stops it.

use std::time::Duration;

use odp_devstack::{workspace_binary, Stack, StackOptions};
use odp_plumbing::Topics;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{ClientConfig, Message};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stack_carries_a_message_and_serves_the_migrated_database() {
    let topics = Topics::with_prefix(&format!("it-{}-", uuid::Uuid::new_v4().simple()));
    let stack = Stack::start(StackOptions::ephemeral().topics(topics.clone()))
        .await
        .expect("start the stack (needs tansu: scripts/bootstrap.sh broker)");
    let state_dir = stack.state_dir().to_path_buf();
    assert!(state_dir.join("postgres").join("data").is_dir());

    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", stack.kafka_bootstrap())
        .set("message.timeout.ms", "10000")
        .create()
        .unwrap();
    producer
        .send(
            FutureRecord::to(&topics.events)
                .key("host-1")
                .payload("hello odp"),
            Duration::from_secs(10),
        )
        .await
        .map_err(|(error, _)| error)
        .expect("produce");

    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", stack.kafka_bootstrap())
        .set("group.id", "devstack-test")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    consumer.subscribe(&[&topics.events]).unwrap();
    let message = tokio::time::timeout(Duration::from_secs(30), consumer.recv())
        .await
        .expect("a message within 30 s")
        .expect("consume");
    assert_eq!(message.key(), Some(&b"host-1"[..]));
    assert_eq!(message.payload(), Some(&b"hello odp"[..]));
    drop(message);
    drop(consumer);

    // Created with the designed partition counts.
    let metadata = producer
        .client()
        .fetch_metadata(Some(&topics.commands), Duration::from_secs(10))
        .unwrap();
    assert_eq!(metadata.topics()[0].partitions().len(), 4);

    let pool = stack.connect().await.unwrap();
    let migrations: i64 = sqlx::query_scalar("select count(*) from _sqlx_migrations where success")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(migrations >= 1, "no migration recorded");
    pool.close().await;

    stack.stop().expect("stop the stack");
    assert!(!state_dir.exists(), "temporary state dir kept");
}

#[test]
fn workspace_binary_finds_binaries_next_to_the_test() {
    let found = workspace_binary("odp-dev").unwrap();
    let expected = std::path::Path::new(env!("CARGO_BIN_EXE_odp-dev"));
    assert_eq!(
        found.canonicalize().unwrap(),
        expected.canonicalize().unwrap()
    );
}
