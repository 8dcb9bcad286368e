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
    /// Another agent serves this host id; the process exits with
    /// [`crate::host_lock::EXIT_HOST_TAKEN`].
    #[error("{0}")]
    HostTaken(String),
    #[error(transparent)]
    HostLock(crate::host_lock::HostLockError),
}

impl From<crate::host_lock::HostLockError> for Error {
    fn from(error: crate::host_lock::HostLockError) -> Self {
        match error {
            held @ crate::host_lock::HostLockError::Held { .. } => {
                Error::HostTaken(held.to_string())
            }
            other => Error::HostLock(other),
        }
    }
}

impl Error {
    /// The process exit code for this error: [`EXIT_HOST_TAKEN`] when
    /// another agent serves the host, 1 otherwise.
    ///
    /// [`EXIT_HOST_TAKEN`]: crate::host_lock::EXIT_HOST_TAKEN
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::HostTaken(_) => crate::host_lock::EXIT_HOST_TAKEN,
            _ => 1,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
