//! Agents of this host id on other machines, from the host's heartbeats.
//!
//! The lock file ([`crate::host_lock`]) keeps a second agent of a host id
//! off this machine; it cannot see another machine. So the agent also
//! reads its host's partition of the events topic (agents key events by
//! host id with the murmur2 partitioner, as the api-server keys commands),
//! first the last `--peer-live-secs` of it before acting on any command,
//! then as it goes, and yields to a live agent on another machine that
//! started before it ([`odp_core::liveness`]).
//!
//! Only heartbeats signed by an agent the api-server enrolled for this host
//! count ([`crate::identity`]): anyone who can write to the topic could
//! otherwise stop this agent with one forged heartbeat. Nor do those of an
//! identity the api-server revoked since (the revocations come with the
//! service definitions, [`odp_core::service::SyncServices`], and are kept
//! across restarts with them): a stolen identity cannot take the host.

use std::sync::Arc;
use std::time::{Duration, Instant};

use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::identity::{Channel, IdentityError};
use odp_core::liveness::{AgentClaim, HostClaims};
use odp_core::partition::partition_for_key;
use rdkafka::consumer::{BaseConsumer, Consumer, StreamConsumer};
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::identity::Verifier;
use crate::services::ServiceBook;
use crate::window::unix_ms;

const METADATA_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest the start-up check reads the partition's recent past.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(10);
/// How long the start-up check waits for a message before taking the
/// partition as read.
const IDLE: Duration = Duration::from_secs(2);
/// Least time between two warnings about ignored heartbeats: a flood of
/// forgeries must not flood the log too.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// A live agent of this host on another machine that keeps the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Yield {
    pub agent_id: String,
    pub machine_id: Option<String>,
}

impl std::fmt::Display for Yield {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "agent {} on machine {} serves this host id and started first",
            self.agent_id,
            self.machine_id.as_deref().unwrap_or("(unknown)")
        )
    }
}

/// This agent's reading of its host's heartbeats.
pub struct PeerWatch {
    consumer: StreamConsumer,
    /// The partition's end when the watch started: the start-up check
    /// reads up to it.
    end_at_start: i64,
    claims: HostClaims,
    trust: Trust,
    me: AgentClaim,
    live_ms: i64,
}

impl PeerWatch {
    /// Assigns the host's events partition from `--peer-live-secs` ago;
    /// `services` holds the identities the api-server revoked.
    pub async fn connect(
        config: &Config,
        me: AgentClaim,
        services: watch::Receiver<Arc<ServiceBook>>,
    ) -> Result<PeerWatch> {
        let topic = config.topics.events.clone();
        let mut client = config.kafka.client(&[]);
        client
            // Required by librdkafka; nothing is ever committed under it.
            .set("group.id", format!("odp-agent-peers-{}", config.agent_id))
            .set("client.id", format!("odp-agent-{}", config.agent_id))
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "latest");
        let live_ms = config.peer_live.as_millis() as i64;
        let since_ms = unix_ms() - live_ms;
        let (consumer, end_at_start) = tokio::task::spawn_blocking({
            let host = config.host_id.clone();
            move || assign_since(&client, &topic, &host, since_ms)
        })
        .await
        .map_err(|e| Error::Task(e.to_string()))??;
        Ok(PeerWatch {
            consumer,
            end_at_start,
            claims: HostClaims::new(config.host_id.clone()),
            trust: Trust::new(config.verifier.clone(), config.host_id.clone(), services),
            me,
            live_ms,
        })
    }

    /// Reads what the partition held when this was called (up to a time
    /// limit) and says whether a live agent on another machine keeps the
    /// host.
    pub async fn check_at_start(&mut self) -> Option<Yield> {
        let PeerWatch {
            consumer,
            end_at_start,
            claims,
            trust,
            ..
        } = self;
        let end = *end_at_start;
        if end > 0 {
            let caught_up = async {
                loop {
                    let message = match tokio::time::timeout(IDLE, consumer.recv()).await {
                        Ok(Ok(message)) => message,
                        Ok(Err(e)) => {
                            warn!(error = %e, "reading recent heartbeats failed");
                            return;
                        }
                        // Nothing more came: the partition's end is reached.
                        Err(_) => return,
                    };
                    observe(claims, trust, &message);
                    if message.offset() + 1 >= end {
                        return;
                    }
                }
            };
            if tokio::time::timeout(CATCH_UP_LIMIT, caught_up)
                .await
                .is_err()
            {
                warn!("reading recent heartbeats took too long; going on");
            }
        }
        self.verdict()
    }

    /// Resolves once a live agent on another machine is found to keep the
    /// host; reads heartbeats until then.
    pub async fn wait_for_yield(mut self) -> Yield {
        loop {
            match self.consumer.recv().await {
                Ok(message) => observe(&mut self.claims, &mut self.trust, &message),
                Err(e) => {
                    debug!(error = %e, "reading heartbeats failed, retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            }
            if let Some(found) = self.verdict() {
                return found;
            }
        }
    }

    fn verdict(&self) -> Option<Yield> {
        self.claims
            .yield_to(&self.me, unix_ms(), self.live_ms)
            .map(|claim| Yield {
                agent_id: claim.agent_id.clone(),
                machine_id: claim.machine_id.clone(),
            })
    }
}

/// Notes a message of the events partition, heard when the broker
/// stamped it, if it is a heartbeat of this host that an agent enrolled
/// for the host signed.
fn observe(claims: &mut HostClaims, trust: &mut Trust, message: &BorrowedMessage<'_>) {
    let Some(event) = message
        .payload()
        .and_then(|payload| AgentEvent::from_json(payload).ok())
    else {
        return;
    };
    // Other hosts' events share the partition; only this host's
    // heartbeats matter, and only they are worth a signature check.
    if !matches!(event.kind, AgentEventKind::Heartbeat { .. }) || event.host != trust.host {
        return;
    }
    if !trust.admits(&event, message) {
        return;
    }
    // The earlier of the broker's stamp and the signed send time: a genuine
    // heartbeat captured and produced again later gets a fresh broker
    // stamp, but keeps the time its agent signed, so it reads as old.
    let heard_at_ms = message
        .timestamp()
        .to_millis()
        .map_or(event.at_ms, |stamped| stamped.min(event.at_ms));
    claims.observe(&event, heard_at_ms);
}

/// Which heartbeats of this host may count, and the log of those that may
/// not.
struct Trust {
    verifier: Verifier,
    host: String,
    /// The last sync's book: the identities revoked since they were issued.
    services: watch::Receiver<Arc<ServiceBook>>,
    /// Heartbeats ignored since the last warning.
    ignored: u64,
    warned_at: Option<Instant>,
}

impl Trust {
    fn new(verifier: Verifier, host: String, services: watch::Receiver<Arc<ServiceBook>>) -> Trust {
        Trust {
            verifier,
            host,
            services,
            ignored: 0,
            warned_at: None,
        }
    }

    /// Whether `event`, a heartbeat naming this host, was signed by an
    /// agent whose certificate is for this host and not revoked.
    fn admits(&mut self, event: &AgentEvent, message: &BorrowedMessage<'_>) -> bool {
        let now = odp_plumbing::signed::unix_now();
        let checked = odp_plumbing::signed::verify(&self.verifier, Channel::Events, message, now)
            .and_then(|certificate| {
                certificate.check_host(&event.host)?;
                match self.services.borrow().is_revoked(certificate.id) {
                    true => Err(IdentityError::Revoked { id: certificate.id }),
                    false => Ok(()),
                }
            });
        let Err(error) = checked else {
            return true;
        };
        self.ignore(event, &error);
        false
    }

    fn ignore(&mut self, event: &AgentEvent, error: &IdentityError) {
        debug!(agent_id = %event.agent_id, error = %error,
            "heartbeat ignored: not signed by an agent enrolled for this host, or revoked");
        self.ignored += 1;
        if self.warned_at.is_some_and(|at| at.elapsed() < WARN_EVERY) {
            return;
        }
        warn!(ignored = self.ignored, agent_id = %event.agent_id, error = %error,
            "ignoring heartbeats for this host that no agent enrolled for it signed \
             (forged, from an agent without an identity, or revoked)");
        self.ignored = 0;
        self.warned_at = Some(Instant::now());
    }
}

/// A consumer assigned to `host`'s events partition at the first offset
/// from `since_ms` on (the end when the broker cannot look that up), and
/// the offset to read up to for the past (0: nothing to read).
fn assign_since(
    client: &ClientConfig,
    topic: &str,
    host: &str,
    since_ms: i64,
) -> Result<(StreamConsumer, i64)> {
    let probe: BaseConsumer = client.create()?;
    let metadata = probe.fetch_metadata(Some(topic), METADATA_TIMEOUT)?;
    let partitions = metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic && t.error().is_none())
        .map_or(0, |t| t.partitions().len());
    let Ok(partitions @ 1..) = u32::try_from(partitions) else {
        return Err(Error::TopicMissing {
            topic: topic.to_owned(),
        });
    };
    let partition = partition_for_key(host.as_bytes(), partitions) as i32;
    let mut wanted = TopicPartitionList::new();
    wanted.add_partition_offset(topic, partition, Offset::Offset(since_ms))?;
    let start = match probe.offsets_for_times(wanted, METADATA_TIMEOUT) {
        Ok(found) => found
            .find_partition(topic, partition)
            .map(|p| p.offset())
            .filter(|offset| matches!(offset, Offset::Offset(_))),
        Err(e) => {
            warn!(error = %e, "cannot look up recent heartbeats by time; reading from now on");
            None
        }
    };
    let end = match start {
        Some(_) => probe
            .fetch_watermarks(topic, partition, METADATA_TIMEOUT)
            .map(|(_, high)| high)?,
        None => 0,
    };
    let start = start.unwrap_or(Offset::End);
    let consumer: StreamConsumer = client.create()?;
    let mut assignment = TopicPartitionList::new();
    assignment.add_partition_offset(topic, partition, start)?;
    consumer.assign(&assignment)?;
    info!(
        topic,
        partition,
        ?start,
        end,
        "reading this host's heartbeats"
    );
    Ok((consumer, end))
}
