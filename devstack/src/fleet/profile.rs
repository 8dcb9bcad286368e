//! One simulated profile: started, its windows streamed, finished.

use super::*;

/// One simulated profile.
pub(super) struct ProfileRun {
    pub(super) shared: Arc<Shared>,
    pub(super) index: usize,
    pub(super) host: String,
    pub(super) agent_id: String,
    pub(super) start: StartProfile,
}

/// Resolves once a stop is asked; never when the sender is gone.
pub(super) async fn stop_asked(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|stopped| *stopped).await.is_err() {
        std::future::pending::<()>().await;
    }
}

impl ProfileRun {
    fn update(&self, change: impl FnOnce(&mut SimProfile)) {
        if let Some(profile) = self
            .shared
            .profiles
            .lock()
            .expect("profiles lock")
            .get_mut(&self.start.profile_id)
        {
            change(profile);
        }
    }

    pub(super) async fn run(self, mut stop: watch::Receiver<bool>) {
        let shared = self.shared.clone();
        let profile_id = self.start.profile_id;
        let first = &shared.windows[self.index % shared.windows.len()];
        let started = AgentEventKind::ProfileStarted {
            profile_id,
            event: first.event,
            frequency_hz: self.start.frequency_hz,
            pids: vec![10_000 + self.index as u32],
            language: Some(Language::Native),
            runtime_version: None,
            runtime: RuntimeInfo::default(),
        };
        if shared
            .event(self.index, &self.host, &self.agent_id, started)
            .await
        {
            bump(&shared.counters.acks_sent, 1);
            let at = unix_ms();
            self.update(|p| p.acked_ms = Some(at));
        }
        let started_ms = unix_ms();
        let window_ms = self
            .start
            .window_ms
            .unwrap_or(shared.default_window.as_millis() as u64)
            .max(1) as i64;
        let end_ms = started_ms + self.start.duration_ms as i64;
        let (mut snapshots, mut samples) = (0u64, 0u64);
        let mut window_start = started_ms;
        let mut sequence = 0u64;
        let reason = loop {
            let window_end = (window_start + window_ms).min(end_ms);
            let wait = Duration::from_millis((window_end - unix_ms()).max(0) as u64);
            let stopped = tokio::select! {
                () = tokio::time::sleep(wait) => false,
                () = stop_asked(&mut stop) => true,
            };
            let cut = if stopped {
                unix_ms().clamp(window_start, window_end)
            } else {
                window_end
            };
            if cut > window_start {
                let fixture =
                    &shared.windows[(self.index + sequence as usize) % shared.windows.len()];
                let snapshot = fixtures::rewrite(
                    fixture,
                    &fixtures::WindowHeader {
                        profile_id,
                        host: &self.host,
                        agent_id: &self.agent_id,
                        sequence,
                        // Stamped by the host's clock.
                        window_start_ms: window_start + shared.clock_offsets[self.index],
                        window_end_ms: cut + shared.clock_offsets[self.index],
                        frequency_hz: self.start.frequency_hz,
                    },
                );
                let count = snapshot.total_samples();
                if count > 0 {
                    if shared.snapshot(self.index, &snapshot).await {
                        snapshots += 1;
                        samples += count;
                        bump(&shared.counters.snapshots_sent, 1);
                        bump(&shared.counters.samples_sent, count);
                        self.update(|p| {
                            p.snapshots = snapshots;
                            p.samples = samples;
                        });
                    }
                    sequence += 1;
                }
            }
            if stopped {
                break FinishReason::Stopped;
            }
            if cut >= end_ms {
                break FinishReason::DurationElapsed;
            }
            window_start = cut;
        };
        let finished = AgentEventKind::ProfileFinished {
            profile_id,
            reason,
            snapshots,
            samples,
            spooled_snapshots: 0,
            spooled_samples: 0,
        };
        shared
            .event(self.index, &self.host, &self.agent_id, finished)
            .await;
        bump(&shared.counters.profiles_finished, 1);
        self.update(|p| p.finished = Some(reason));
        if let Some(state) = shared.hosts.get(&self.host) {
            state.lock().expect("host lock").running.remove(&profile_id);
        }
    }
}
