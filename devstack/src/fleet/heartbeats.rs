//! Every simulated host's heartbeat, as its agent would send it.

use super::*;

/// Each host's heartbeat once per `every`, the hosts spread evenly over it.
pub(super) async fn heartbeats(shared: Arc<Shared>, every: Duration) {
    let step = every / shared.order.len().max(1) as u32;
    let mut tick = tokio::time::interval(step.max(Duration::from_micros(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let version = env!("CARGO_PKG_VERSION").to_owned();
    for host in shared.order.iter().cycle() {
        tick.tick().await;
        let Some(state) = shared.hosts.get(host) else {
            continue;
        };
        let (index, agent_id, kind) = {
            let state = state.lock().expect("host lock");
            if state.undeployed {
                continue;
            }
            let kind = AgentEventKind::Heartbeat {
                version: version.clone(),
                running_profiles: state.running.keys().copied().collect(),
                plugins: vec!["native".to_owned()],
                machine_id: Some(state.machine_id.clone()),
                started_at_ms: Some(shared.started_at_ms),
                labels: state.labels.clone(),
                services: state.live_services(),
                services_digest: Some(state.digest()),
            };
            (state.index, state.agent_id.clone(), kind)
        };
        let at_ms = shared.clock_ms(index);
        let payload = AgentEvent {
            host: host.clone(),
            agent_id,
            at_ms,
            kind,
        }
        .to_json();
        let signature = shared.identities[index].sign(Channel::Events, &payload);
        let record = FutureRecord::to(&shared.topics.events)
            .key(host)
            .payload(&payload)
            .timestamp(at_ms)
            .headers(signed::headers(&signature));
        // Queued now, delivered in the background: a slow broker must not
        // bunch the next hosts' beats.
        match shared.producer(index).send_result(record) {
            Ok(delivery) => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    match delivery.await {
                        Ok(Ok(_)) => bump(&shared.counters.heartbeats_sent, 1),
                        _ => bump(&shared.counters.send_failures, 1),
                    }
                });
            }
            Err(_) => bump(&shared.counters.send_failures, 1),
        }
    }
}
