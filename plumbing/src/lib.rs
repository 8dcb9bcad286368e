//! What ODP's service binaries (api-server, pipeline, agent) and its dev
//! stack share, so each is written once:
//!
//! - [`KafkaArgs`]: `--kafka-bootstrap` and `--kafka-option`, validated
//!   into [`Kafka`], which makes every librdkafka client configuration;
//! - [`Topics`]: the four topic names and their `--topic-*` flags;
//! - [`shutdown_signal`]: SIGTERM or Ctrl-C;
//! - [`Backoff`]: the wait between retries;
//! - [`egress`]: which addresses alerts may be sent to;
//! - [`heap`]: handing freed heap back to the system;
//! - [`signed`]: the headers that authenticate an agent's messages.

pub mod backoff;
pub mod egress;
pub mod heap;
pub mod kafka;
pub mod shutdown;
pub mod signed;
pub mod topics;

pub use backoff::Backoff;
pub use kafka::{Kafka, KafkaArgs, KafkaConfigError};
pub use shutdown::{shutdown_signal, ShutdownSignals, StopSignal};
pub use topics::{EmptyTopic, TopicSpec, Topics};
