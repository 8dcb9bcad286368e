//! The agent's error type.

use std::io;
use std::path::PathBuf;

use odp_core::command::CommandError;
use rdkafka::error::KafkaError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("cannot read command public key {path}: {source}")]
    PublicKeyFile { path: PathBuf, source: io::Error },
    #[error("invalid command public key: {0}")]
    PublicKey(#[source] CommandError),
    #[error("kafka: {0}")]
    Kafka(#[from] KafkaError),
    #[error("topic {topic:?} not found on the broker")]
    TopicMissing { topic: String },
    #[error("cannot install signal handlers: {0}")]
    Signal(#[source] io::Error),
    #[error("background task failed: {0}")]
    Task(String),
    #[error("cannot start profile thread: {0}")]
    Thread(#[source] io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
