//! Command intake: read this host's partition of `odp.commands`, verify
//! each command and decide what to do with it.
//!
//! The api-server keys commands by host id with Kafka's murmur2
//! partitioner, so the agent computes that partition itself and `assign`s
//! it alone: it never reads (or even fetches) the rest of the fleet's
//! commands, and no group rebalance ever moves its partition away. The
//! consumer group `odp-agent-<host>` only stores committed offsets, so a
//! restarted agent resumes after the last command it handled.

use std::sync::Arc;
use std::time::Duration;

use odp_core::command::{
    Command, CommandAction, CommandError, CommandVerifier, StartProfile, UndeployMode,
};
use odp_core::model::TargetError;
use odp_core::partition::partition_for_key;
use odp_core::service::SyncServices;
use odp_core::Target;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use tracing::{debug, info, warn};
use uuid::Uuid;

use crate::config::{Config, MAX_WINDOW, MIN_WINDOW};
use crate::error::{Error, Result};

/// Highest sampling frequency a command may ask for, per thread.
pub use odp_core::cost::MAX_FREQUENCY_HZ;
/// Longest profile a command may ask for.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);
/// Profiles running at once on one host, to bound the agent's overhead.
pub const MAX_PROFILES: usize = 16;
const METADATA_TIMEOUT: Duration = Duration::from_secs(10);

/// A command refused before or after verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub command_id: Option<Uuid>,
    pub profile_id: Option<Uuid>,
    pub reason: String,
    /// Whether the message itself is unusable (not a verifiable command) and
    /// goes to the dead-letter topic.
    pub dead_letter: bool,
}

/// What one message of the commands partition turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// A verified command.
    Accepted(Box<Command>),
    Rejected(Rejection),
    /// Another host's command sharing the partition: not ours to judge.
    NotOurs,
}

/// Verifies one message: key, encoding, then signature, host, expiry and
/// replay through the verifier.
pub fn check(
    verifier: &mut CommandVerifier,
    host: &str,
    key: Option<&[u8]>,
    payload: Option<&[u8]>,
    now_unix_s: i64,
) -> Verdict {
    if key != Some(host.as_bytes()) {
        return Verdict::NotOurs;
    }
    let reject = |command_id, reason: String, dead_letter| {
        Verdict::Rejected(Rejection {
            command_id,
            profile_id: None,
            reason,
            dead_letter,
        })
    };
    let Some(token) = payload.and_then(|p| std::str::from_utf8(p).ok()) else {
        return reject(None, "command is empty or not UTF-8".to_owned(), true);
    };
    let token = token.trim();
    match verifier.verify(token, now_unix_s) {
        Ok(command) => Verdict::Accepted(Box::new(command)),
        Err(e) => {
            // Unusable messages, and commands no api-server issues (valid
            // for longer than any command may be), go to the dead letters.
            let dead_letter = matches!(
                e,
                CommandError::Invalid(_) | CommandError::Key(_) | CommandError::ExpiryTooFar { .. }
            );
            reject(
                CommandVerifier::unverified_id(token),
                e.to_string(),
                dead_letter,
            )
        }
    }
}

/// What the agent does with a verified command.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Start(StartProfile),
    Stop(Uuid),
    Undeploy(UndeployMode),
    /// Replace the held service definitions with these (checked).
    SyncServices(SyncServices),
    Reject(Rejection),
}

/// The agent's state a decision depends on.
pub trait AgentState {
    fn is_running(&self, profile_id: &Uuid) -> bool;
    fn running_count(&self) -> usize;
    fn draining(&self) -> bool;
}

pub fn decide(command: Command, state: &dyn AgentState) -> Decision {
    let reject = |profile_id: Option<Uuid>, reason: String| {
        Decision::Reject(Rejection {
            command_id: Some(command.id),
            profile_id,
            reason,
            dead_letter: false,
        })
    };
    match command.action {
        CommandAction::Start(ref start) => {
            let id = Some(start.profile_id);
            if state.draining() {
                reject(id, "agent is draining and takes no new profiles".to_owned())
            } else if state.is_running(&start.profile_id) {
                reject(
                    id,
                    format!("profile {} is already running", start.profile_id),
                )
            } else if state.running_count() >= MAX_PROFILES {
                reject(
                    id,
                    format!("{MAX_PROFILES} profiles already running on this host"),
                )
            } else if let Err(reason) = validate_start(start) {
                reject(id, reason.to_string())
            } else {
                Decision::Start(start.clone())
            }
        }
        CommandAction::Stop { profile_id } => {
            if state.is_running(&profile_id) {
                Decision::Stop(profile_id)
            } else {
                reject(
                    Some(profile_id),
                    format!("profile {profile_id} is not running"),
                )
            }
        }
        CommandAction::Undeploy { mode } => Decision::Undeploy(mode),
        // Taken while draining too: it only changes what heartbeats say.
        CommandAction::SyncServices(sync) => match sync.check() {
            Ok(()) => Decision::SyncServices(sync),
            Err(e) => reject(None, format!("sync_services refused: {e}")),
        },
    }
}

/// Why the agent refuses a start command.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartError {
    #[error("frequency {0} Hz is outside 1..={MAX_FREQUENCY_HZ}")]
    Frequency(u32),
    #[error("duration {ms} ms is outside 1..={max} ms", max = MAX_DURATION.as_millis())]
    Duration { ms: u64 },
    #[error(
        "window {ms} ms is outside {min}..={max} ms",
        min = MIN_WINDOW.as_millis(),
        max = MAX_WINDOW.as_millis()
    )]
    Window { ms: u64 },
    #[error("an imported profile has no process to sample")]
    Imported,
    #[error(transparent)]
    Target(#[from] TargetError),
}

/// Checks a start command's parameters against what the agent can do.
pub fn validate_start(start: &StartProfile) -> Result<(), StartError> {
    if start.frequency_hz == 0 || start.frequency_hz > MAX_FREQUENCY_HZ {
        return Err(StartError::Frequency(start.frequency_hz));
    }
    if start.duration_ms == 0 || Duration::from_millis(start.duration_ms) > MAX_DURATION {
        return Err(StartError::Duration {
            ms: start.duration_ms,
        });
    }
    if let Some(window_ms) = start.window_ms {
        let window = Duration::from_millis(window_ms);
        if window < MIN_WINDOW || window > MAX_WINDOW {
            return Err(StartError::Window { ms: window_ms });
        }
    }
    match &start.target {
        Target::Imported(_) => Err(StartError::Imported),
        // The API checked it too; checked again so a bad pattern from a
        // command that skipped it fails here, not in every re-scan.
        target => Ok(target.check()?),
    }
}

/// A message read from the commands partition, copied out of the consumer
/// so it can be handled (and then committed) without holding a borrow.
#[derive(Debug, Clone)]
pub struct Received {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub payload: Option<Vec<u8>>,
}

/// The consumer of this host's commands partition.
pub struct Intake {
    consumer: Arc<StreamConsumer>,
    topic: String,
    partition: i32,
}

impl Intake {
    /// Finds this host's partition and assigns it. Waits (retrying every
    /// few seconds) while the topic does not exist yet.
    pub async fn connect(config: &Config) -> Result<Intake> {
        let topic = config.topics.commands.clone();
        let group = format!("odp-agent-{}", config.host_id);
        let mut client = config.kafka.client(&[]);
        client
            .set("group.id", &group)
            .set("client.id", format!("odp-agent-{}", config.agent_id))
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest");
        let partitions = loop {
            match partition_count(client.clone(), topic.clone()).await {
                Ok(n) => break n,
                Err(e) => {
                    warn!(topic = %topic, error = %e, "commands topic not ready, retrying");
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            }
        };
        let partition = partition_for_key(config.host_id.as_bytes(), partitions) as i32;
        let consumer: StreamConsumer = client.create()?;
        let mut assignment = TopicPartitionList::new();
        assignment.add_partition_offset(&topic, partition, Offset::Stored)?;
        consumer.assign(&assignment)?;
        info!(topic = %topic, partition, partitions, group = %group, "reading this host's commands partition");
        Ok(Intake {
            consumer: Arc::new(consumer),
            topic,
            partition,
        })
    }

    pub fn partition(&self) -> i32 {
        self.partition
    }

    /// The next message of the partition.
    pub async fn next(&self) -> Result<Received> {
        let message = self.consumer.recv().await?;
        Ok(Received {
            partition: message.partition(),
            offset: message.offset(),
            key: message.key().map(<[u8]>::to_vec),
            payload: message.payload().map(<[u8]>::to_vec),
        })
    }

    /// Commits past a handled message, synchronously so a crash right after
    /// never replays it (commands are rare: the round trip is cheap).
    pub async fn commit(&self, received: &Received) -> Result<()> {
        let mut list = TopicPartitionList::new();
        list.add_partition_offset(
            &self.topic,
            received.partition,
            Offset::Offset(received.offset + 1),
        )?;
        let consumer = Arc::clone(&self.consumer);
        tokio::task::spawn_blocking(move || consumer.commit(&list, CommitMode::Sync))
            .await
            .map_err(|e| Error::Task(e.to_string()))??;
        debug!(
            partition = received.partition,
            offset = received.offset,
            "command committed"
        );
        Ok(())
    }
}

/// The partition count of a topic, from a short-lived metadata client (the
/// metadata call blocks, so it runs off the async threads).
async fn partition_count(client: ClientConfig, topic: String) -> Result<u32> {
    tokio::task::spawn_blocking(move || -> Result<u32> {
        let probe: BaseConsumer = client.create()?;
        let metadata = probe.fetch_metadata(Some(&topic), METADATA_TIMEOUT)?;
        let count = metadata
            .topics()
            .iter()
            .find(|t| t.name() == topic && t.error().is_none())
            .map_or(0, |t| t.partitions().len());
        match u32::try_from(count) {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Error::TopicMissing { topic }),
        }
    })
    .await
    .map_err(|e| Error::Task(e.to_string()))?
}

#[cfg(test)]
mod tests;
