//! The simulator's command intake: every command of the commands topic,
//! verified for its host with the agent's own code and acted on.

use super::profile::ProfileRun;
use super::*;

/// A consumer assigned every partition of the commands topic from its
/// current end, in a group of its own (which only names it: nothing is
/// committed).
pub(super) async fn command_consumer(options: &FleetOptions) -> Result<StreamConsumer> {
    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", &options.kafka_bootstrap)
        .set("group.id", format!("odp-fleet-sim-{}", Uuid::new_v4()))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "50")
        .create()
        .map_err(|e| kafka_error("creating the fleet's command consumer", e))?;
    let topic = options.topics.commands.clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let assignment = loop {
        match end_offsets(&consumer, &topic) {
            Ok(assignment) => break assignment,
            Err(e) if tokio::time::Instant::now() > deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    consumer
        .assign(&assignment)
        .map_err(|e| kafka_error(format!("assigning {topic}"), e))?;
    Ok(consumer)
}

fn end_offsets(consumer: &StreamConsumer, topic: &str) -> Result<TopicPartitionList> {
    let timeout = Duration::from_secs(10);
    let metadata = consumer
        .fetch_metadata(Some(topic), timeout)
        .map_err(|e| kafka_error(format!("metadata of {topic}"), e))?;
    let partitions = metadata
        .topics()
        .first()
        .map_or(0, |t| t.partitions().len() as i32);
    if partitions == 0 {
        return Err(DevError::Invalid(format!(
            "topic {topic} has no partitions"
        )));
    }
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        let (_, high) = consumer
            .fetch_watermarks(topic, partition, timeout)
            .map_err(|e| kafka_error(format!("watermarks of {topic}/{partition}"), e))?;
        assignment
            .add_partition_offset(topic, partition, Offset::Offset(high))
            .map_err(|e| kafka_error("assigning partitions", e))?;
    }
    Ok(assignment)
}

/// Reads every command and acts for the simulated hosts.
pub(super) async fn intake(shared: Arc<Shared>, consumer: StreamConsumer) {
    loop {
        let message = match consumer.recv().await {
            Ok(message) => message,
            Err(e) => {
                tracing::debug!(error = %e, "fleet simulator: reading commands failed");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let received_ms = unix_ms();
        bump(&shared.counters.commands_read, 1);
        let Some(host) = message.key().and_then(|k| std::str::from_utf8(k).ok()) else {
            bump(&shared.counters.commands_not_ours, 1);
            continue;
        };
        if !shared.hosts.contains_key(host) {
            bump(&shared.counters.commands_not_ours, 1);
            continue;
        }
        let host = host.to_owned();
        let token = message
            .payload()
            .and_then(|p| std::str::from_utf8(p).ok())
            .unwrap_or("")
            .trim()
            .to_owned();
        let published_ms = message.timestamp().to_millis();
        handle(&shared, &host, &token, published_ms, received_ms).await;
    }
}

async fn handle(
    shared: &Arc<Shared>,
    host: &str,
    token: &str,
    published_ms: Option<i64>,
    received_ms: i64,
) {
    let verified = {
        let mut state = shared.hosts[host].lock().expect("host lock");
        // By the host's clock, as its agent checks.
        let host_now_ms = received_ms + shared.clock_offsets[state.index];
        state.verifier.verify(token, host_now_ms.div_euclid(1000))
    };
    let command = match verified {
        Ok(command) => command,
        Err(e) => {
            bump(&shared.counters.commands_rejected, 1);
            let id = CommandVerifier::unverified_id(token);
            shared.reject(host, id, None, e.to_string()).await;
            return;
        }
    };
    bump(&shared.counters.commands_verified, 1);
    let kind = match &command.action {
        CommandAction::Start(_) => "start",
        CommandAction::Stop { .. } => "stop",
        CommandAction::Undeploy { .. } => "undeploy",
        CommandAction::SyncServices(_) => "sync_services",
    };
    shared
        .latencies
        .lock()
        .expect("latency lock")
        .push(CommandLatency {
            host: host.to_owned(),
            command_id: command.id,
            kind,
            published_ms: published_ms.unwrap_or(command.issued_at * 1000),
            issued_at: command.issued_at,
            received_ms,
        });
    let refused = |reason: String, profile_id: Option<Uuid>| {
        bump(&shared.counters.commands_refused, 1);
        shared.reject(host, Some(command.id), profile_id, reason)
    };
    match command.action {
        CommandAction::Start(start) => {
            let profile_id = start.profile_id;
            let spawned = {
                let mut guard = shared.hosts[host].lock().expect("host lock");
                let state = &mut *guard;
                if state.undeployed {
                    Err("agent is draining and takes no new profiles".to_owned())
                } else if start.frequency_hz == 0 || start.duration_ms == 0 {
                    Err("a start needs a frequency and a duration".to_owned())
                } else if let Entry::Vacant(slot) = state.running.entry(profile_id) {
                    let (stop, stop_rx) = watch::channel(false);
                    slot.insert(stop);
                    shared.profiles.lock().expect("profiles lock").insert(
                        profile_id,
                        SimProfile {
                            profile_id,
                            host: host.to_owned(),
                            agent_id: state.agent_id.clone(),
                            received_ms,
                            acked_ms: None,
                            snapshots: 0,
                            samples: 0,
                            finished: None,
                        },
                    );
                    Ok((state.index, state.agent_id.clone(), stop_rx))
                } else {
                    Err(format!("profile {profile_id} is already running"))
                }
            };
            match spawned {
                Ok((index, agent_id, stop_rx)) => {
                    bump(&shared.counters.starts, 1);
                    let run = ProfileRun {
                        shared: shared.clone(),
                        index,
                        host: host.to_owned(),
                        agent_id,
                        start,
                    };
                    tokio::spawn(run.run(stop_rx));
                }
                Err(reason) => refused(reason, Some(profile_id)).await,
            }
        }
        CommandAction::Stop { profile_id } => {
            let stopped = {
                let state = shared.hosts[host].lock().expect("host lock");
                state
                    .running
                    .get(&profile_id)
                    .map(|stop| stop.send_replace(true))
                    .is_some()
            };
            if stopped {
                bump(&shared.counters.stops, 1);
            } else {
                refused(
                    format!("profile {profile_id} is not running"),
                    Some(profile_id),
                )
                .await;
            }
        }
        CommandAction::Undeploy { .. } => {
            let mut state = shared.hosts[host].lock().expect("host lock");
            state.undeployed = true;
            for stop in state.running.values() {
                stop.send_replace(true);
            }
        }
        CommandAction::SyncServices(sync) => match sync.check() {
            Ok(()) => {
                bump(&shared.counters.syncs, 1);
                shared.hosts[host].lock().expect("host lock").held = Some(sync);
            }
            Err(e) => refused(format!("sync_services refused: {e}"), None).await,
        },
    }
}
