//! The error type of the dev stack.

use std::io;
use std::time::Duration;

/// Everything that can go wrong while starting, driving or stopping the local stack.
#[derive(Debug, thiserror::Error)]
pub enum DevError {
    /// An external program the stack needs is not installed.
    #[error("{tool} not found: {hint}")]
    ToolMissing { tool: String, hint: String },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },

    /// An external command ran but failed; `output` is its stderr/stdout (or log tail).
    #[error("`{command}` failed ({status}):\n{output}")]
    CommandFailed {
        command: String,
        status: String,
        output: String,
    },

    /// A process of the stack exited while we were waiting for it.
    #[error("{what} exited early ({status}); its log ends with:\n{log_tail}")]
    ExitedEarly {
        what: String,
        status: String,
        log_tail: String,
    },

    #[error("timed out after {timeout:?} waiting for {what}{detail}")]
    Timeout {
        what: String,
        timeout: Duration,
        detail: String,
    },

    #[error("kafka: {context}: {message}")]
    Kafka { context: String, message: String },

    #[error("database: {context}: {source}")]
    Database {
        context: String,
        #[source]
        source: sqlx::Error,
    },

    #[error("running migrations: {0}")]
    Migrations(#[source] Box<dyn std::error::Error + Send + Sync>),

    #[error("state file {path}: {message}")]
    State { path: String, message: String },

    /// The binary of one of our services has not been built.
    #[error("binary `{name}` not found (tried {tried}); build it with `cargo build --bin {name}`")]
    BinaryMissing { name: String, tried: String },

    #[error("{0}")]
    Invalid(String),

    #[error(transparent)]
    Client(#[from] odp_client::ClientError),
}

pub type Result<T, E = DevError> = std::result::Result<T, E>;

/// Attaches a human-readable context to `io::Error`s.
pub(crate) trait IoContext<T> {
    fn io_context(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn io_context(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| DevError::Io {
            context: context(),
            source,
        })
    }
}

pub(crate) fn kafka_error(context: impl Into<String>, error: impl std::fmt::Display) -> DevError {
    DevError::Kafka {
        context: context.into(),
        message: error.to_string(),
    }
}
