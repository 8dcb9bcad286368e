//! The agent's main loop: commands in, profiles started and stopped,
//! heartbeats and triggers' firings ([`crate::trigger_watch`]) out, and a
//! clean exit on a signal or an `undeploy`.
//!
//! Every profile is one task (plus its sampling thread); the loop only
//! starts, signals and reaps them, so a slow broker never delays a stop.
//! Continuous profiles' segments ([`crate::continuous`]) are started and
//! stopped by the same loop, through the same path as commands' profiles,
//! whenever a sync, a heartbeat's scan, a part's end or a segment boundary
//! may change what should run.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use odp_core::command::{CommandVerifier, StartProfile, UndeployMode};
use odp_core::event::AgentEventKind;
use odp_core::liveness::AgentClaim;
use odp_core::service::SyncServices;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{debug, error, info, warn};
use uuid::Uuid;

use crate::commands::{self, AgentState, Decision, Intake, Received, Rejection, Verdict};
use crate::config::Config;
use crate::continuous::{LiveServices, Now, Scheduler};
use crate::cost::CostSettings;
use crate::error::{Error, Result};
use crate::heartbeat::{heartbeats, Beat};
use crate::host_lock::HostLock;
use crate::metrics::AgentMetrics;
use crate::peers::PeerWatch;
use crate::plugin::Plugins;
use crate::profile_task::{self, Outcome, StopHandle};
use crate::publish::{Origin, Publisher};
use crate::replay::{ReplayGuard, ReplayStore};
use crate::sampling_thread::ProfileSpec;
use crate::services::{self as host_services, ServiceBook, ServiceStore};
use crate::targets::ProcFs;
use crate::trigger_watch;
use crate::window::unix_ms;

mod segments;

/// How long running profiles get to flush on shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

type Joined = std::result::Result<(tokio::task::Id, (Uuid, Outcome)), tokio::task::JoinError>;

/// Whether the loop goes on after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Exit,
}

struct Agent {
    config: Config,
    publisher: Publisher,
    verifier: CommandVerifier,
    /// Keeps the verifier's ids across restarts.
    replay: ReplayGuard,
    plugins: Plugins,
    procfs: ProcFs,
    running: HashMap<Uuid, StopHandle>,
    tasks: JoinSet<(Uuid, Outcome)>,
    /// Which profile each task runs, to clean up after a panicked task.
    task_profiles: HashMap<tokio::task::Id, Uuid>,
    draining: bool,
    heartbeat: watch::Sender<Vec<Uuid>>,
    /// The service definitions held, which heartbeats scan for.
    services: watch::Sender<Arc<ServiceBook>>,
    service_store: ServiceStore,
    /// What the heartbeats' last scan found live.
    live: watch::Receiver<LiveServices>,
    /// The continuous profiles' parts among `running`.
    continuous: Scheduler,
    /// Assignments last found without room, to warn once per change.
    over_cap: Vec<Uuid>,
    metrics: Arc<AgentMetrics>,
}

impl AgentState for Agent {
    fn is_running(&self, profile_id: &Uuid) -> bool {
        self.running.contains_key(profile_id)
    }
    /// Profiles that commands started: continuous segments have their own
    /// bound ([`crate::continuous::MAX_SEGMENTS`]).
    fn running_count(&self) -> usize {
        self.running.len() - self.continuous.running()
    }
    fn draining(&self) -> bool {
        self.draining
    }
}

/// Runs the agent with the given plugins until `shutdown` resolves or an
/// `undeploy` command says so; running profiles are stopped and flushed.
pub async fn run_until(
    config: Config,
    plugins: Plugins,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    config.validate()?;
    // Before anything is published or read: a second agent of this host
    // must not even heartbeat.
    let lock = HostLock::acquire(&config.lock_dir, &config.host_id)?;
    info!(lock = %lock.path().display(), "this agent serves the host on this machine");
    let started_at_ms = unix_ms();
    let mut registry = odp_metrics::Registry::default();
    let metrics = AgentMetrics::register(&mut registry);
    if let Some(listen) = config.metrics_listen {
        let exposition = Arc::new(odp_metrics::Metrics::new(registry));
        odp_metrics::spawn(listen, exposition)
            .await
            .map_err(|e| Error::Config(format!("--metrics-listen {listen}: {e}")))?;
    }
    let publisher = Publisher::new(&config, metrics.clone())?;
    let mut verifier =
        CommandVerifier::from_public_pem(&config.command_public_key_pem, &config.host_id)
            .map_err(Error::PublicKey)?;
    // Before any command is read: what an earlier run took stays refused.
    let replay = ReplayGuard::open(
        ReplayStore::new(&config.state_dir),
        &mut verifier,
        started_at_ms / 1000,
    );
    let certificate = config.identity.certificate();
    info!(host = %config.host_id, agent_id = %config.agent_id, plugins = ?plugins.names(),
        certificate = %certificate.id, certificate_expires_at = certificate.expires_at,
        "agent starting");
    tokio::pin!(shutdown);

    let me = AgentClaim {
        agent_id: config.agent_id.clone(),
        machine_id: Some(config.machine_id.clone()),
        started_at_ms,
    };
    // Before the peers are read: the revocations an earlier run was sent.
    let service_store = ServiceStore::new(&config.state_dir);
    let book = load_services(&service_store);
    let (services, services_rx) = watch::channel(Arc::new(book));
    let peers = tokio::select! {
        peers = watch_peers(&config, me, services_rx.clone()) => peers?,
        () = &mut shutdown => return Ok(()),
    };

    // Before any profile runs, so an earlier run's spool goes out first.
    let resender = publisher.spawn_resender();
    let labels = host_services::host_labels(&config.labels);
    info!(?labels, "host labels");
    let (heartbeat, running_rx) = watch::channel(Vec::new());
    let (scanned, live) = watch::channel(LiveServices::default());
    let beats = tokio::spawn(heartbeats(
        publisher.clone(),
        Beat {
            every: config.heartbeat,
            plugins: plugins.names(),
            machine_id: config.machine_id.clone(),
            started_at_ms,
            labels,
            procfs: ProcFs::default(),
            metrics: metrics.clone(),
        },
        running_rx,
        services_rx.clone(),
        scanned,
    ));
    let triggers = tokio::spawn(trigger_watch::watch_triggers(
        config.host_id.clone(),
        ProcFs::default(),
        publisher.clone(),
        metrics.clone(),
        services_rx,
    ));
    let continuous = Scheduler::new(&config.host_id, config.continuous_segment);
    let mut agent = Agent {
        config,
        publisher,
        verifier,
        replay,
        plugins,
        procfs: ProcFs::default(),
        running: HashMap::new(),
        tasks: JoinSet::new(),
        task_profiles: HashMap::new(),
        draining: false,
        heartbeat,
        services,
        service_store,
        live,
        continuous,
        over_cap: Vec::new(),
        metrics,
    };

    let connected = tokio::select! {
        intake = Intake::connect(&agent.config) => Some(intake),
        () = &mut shutdown => None,
    };
    let mut outcome = Ok(());
    match connected {
        Some(Ok(intake)) => {
            let host = agent.config.host_id.clone();
            let peer_yield = peers.wait_for_yield();
            tokio::pin!(peer_yield);
            tokio::select! {
                () = agent.serve(&intake, &mut shutdown) => {}
                found = &mut peer_yield => {
                    error!(%found, "another agent keeps this host; stopping every profile and exiting");
                    outcome = Err(Error::HostTaken(format!(
                        "{found}; this agent yields the host {host}"
                    )));
                }
            }
        }
        Some(Err(e)) => {
            beats.abort();
            triggers.abort();
            if let Some(resender) = &resender {
                resender.abort();
            }
            return Err(e);
        }
        None => {}
    }

    agent.stop_all();
    agent.reap_all().await;
    beats.abort();
    triggers.abort();
    // What is still spooled stays on disk for the next start.
    if let Some(resender) = &resender {
        resender.abort();
    }
    // Snapshots and lifecycle events were already awaited by the profile
    // tasks; what may be left is a heartbeat, not worth a long wait.
    agent.publisher.flush(Duration::from_secs(2)).await;
    info!("agent stopped");
    drop(lock);
    outcome
}

/// Connects the watch of this host's heartbeats (retrying while the events
/// topic is missing) and refuses to go on when a live agent on another
/// machine already serves the host.
async fn watch_peers(
    config: &Config,
    me: AgentClaim,
    services: watch::Receiver<Arc<ServiceBook>>,
) -> Result<PeerWatch> {
    let mut peers = loop {
        match PeerWatch::connect(config, me.clone(), services.clone()).await {
            Ok(peers) => break peers,
            Err(e) => {
                warn!(error = %e, "events topic not ready, retrying");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    };
    match peers.check_at_start().await {
        Some(found) => Err(Error::HostTaken(format!(
            "{found}; not starting a second agent for host {}",
            config.host_id
        ))),
        None => Ok(peers),
    }
}

impl Agent {
    async fn serve(&mut self, intake: &Intake, shutdown: &mut (impl Future<Output = ()> + Unpin)) {
        // The assignments an earlier run kept start with the first scan.
        let mut scans_open = true;
        loop {
            // Slept on the monotonic clock, planned by the wall clock's
            // boundaries: a late wake is set right by the plan it makes.
            let wake = self.continuous.next_wake(Now::read()).map(|at_ms| {
                let ms = u64::try_from(at_ms - unix_ms()).unwrap_or(0);
                tokio::time::Instant::now() + Duration::from_millis(ms)
            });
            tokio::select! {
                biased;
                () = &mut *shutdown => {
                    info!("shutdown requested");
                    return;
                }
                Some(joined) = self.tasks.join_next_with_id(), if !self.tasks.is_empty() => {
                    self.reaped(joined);
                    if self.draining && self.running.is_empty() {
                        info!("drained: last profile finished");
                        return;
                    }
                }
                () = tokio::time::sleep_until(wake.unwrap_or_else(tokio::time::Instant::now)),
                    if wake.is_some() => self.plan_continuous(),
                changed = self.live.changed(), if scans_open => match changed {
                    Ok(()) => self.plan_continuous(),
                    // The heartbeats ended (the agent is stopping).
                    Err(_) => scans_open = false,
                },
                received = intake.next() => match received {
                    Ok(received) => {
                        let flow = self.handle(intake, &received).await;
                        if let Err(e) = intake.commit(&received).await {
                            warn!(offset = received.offset, error = %e, "cannot commit command offset");
                        }
                        if flow == Flow::Exit {
                            return;
                        }
                    }
                    Err(e) => {
                        warn!(error = %e, "reading commands failed");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                },
            }
        }
    }

    async fn handle(&mut self, intake: &Intake, received: &Received) -> Flow {
        let now_s = unix_ms() / 1000;
        let verdict = commands::check(
            &mut self.verifier,
            &self.config.host_id,
            received.key.as_deref(),
            received.payload.as_deref(),
            now_s,
        );
        let command = match verdict {
            Verdict::NotOurs => {
                debug!(offset = received.offset, "another host's command, skipped");
                return Flow::Continue;
            }
            Verdict::Rejected(rejection) => {
                self.metrics.command("rejected");
                self.reject(rejection, intake, received).await;
                return Flow::Continue;
            }
            Verdict::Accepted(command) => {
                // On disk before it is acted on: a restart right after
                // must not take it again.
                self.replay.keep(&mut self.verifier, now_s);
                command
            }
        };
        self.metrics.command("accepted");
        let command_id = command.id;
        match commands::decide(*command, self) {
            Decision::Start(start) => {
                let options = &start.options;
                let cost = options
                    .check_target(&start.target)
                    .and_then(|()| self.config.cost.resolve(start.frequency_hz, options));
                match cost {
                    Ok(cost) => {
                        self.start(start, cost, 0);
                    }
                    Err(reason) => {
                        let rejection = Rejection {
                            command_id: Some(command_id),
                            profile_id: Some(start.profile_id),
                            reason: reason.to_string(),
                            dead_letter: false,
                        };
                        self.reject(rejection, intake, received).await;
                    }
                }
                Flow::Continue
            }
            Decision::Stop(profile_id) => {
                info!(%command_id, %profile_id, "stop requested");
                if let Some(handle) = self.running.get(&profile_id) {
                    handle.stop();
                }
                Flow::Continue
            }
            Decision::Undeploy(UndeployMode::Now) => {
                info!(%command_id, "undeploy now: stopping every profile and exiting");
                Flow::Exit
            }
            Decision::Undeploy(UndeployMode::Drain) => {
                info!(%command_id, running = self.running.len(),
                    "undeploy drain: no new profiles, continuous ones stop now");
                self.draining = true;
                // Continuous segments would never drain: stopped, flushed.
                self.plan_continuous();
                if self.running.is_empty() {
                    Flow::Exit
                } else {
                    Flow::Continue
                }
            }
            Decision::SyncServices(sync) => {
                if let Err(reason) = self.sync_services(&sync) {
                    let rejection = Rejection {
                        command_id: Some(command_id),
                        profile_id: None,
                        reason,
                        dead_letter: false,
                    };
                    self.reject(rejection, intake, received).await;
                } else {
                    info!(%command_id, services = sync.services.len(),
                        revoked = sync.revoked.len(), continuous = sync.continuous.len(),
                        triggers = sync.triggers.len(), digest = %sync.digest,
                        "service definitions, revocations, continuous profiles and triggers replaced");
                    self.plan_continuous();
                }
                Flow::Continue
            }
            Decision::Reject(rejection) => {
                self.reject(rejection, intake, received).await;
                Flow::Continue
            }
        }
    }

    /// Replaces the held service definitions, on disk first so a restart
    /// keeps them. A file that cannot be written does not refuse the sync:
    /// the definitions hold until the agent restarts, and then its
    /// heartbeats report the older digest and the api-server syncs again.
    fn sync_services(&mut self, sync: &SyncServices) -> std::result::Result<(), String> {
        let book = ServiceBook::new(sync)?;
        if let Err(e) = self.service_store.save(sync) {
            error!(path = %self.service_store.path().display(), error = %e,
                "cannot keep the service definitions; they hold until a restart");
        }
        self.services.send_replace(Arc::new(book));
        Ok(())
    }

    /// Starts a profile, its windows numbered from `first_sequence`;
    /// whether it started (if not, its `profile_failed` is on its way).
    fn start(&mut self, start: StartProfile, cost: CostSettings, first_sequence: u64) -> bool {
        let options = &start.options;
        let spec = ProfileSpec {
            profile_id: start.profile_id,
            host: self.config.host_id.clone(),
            agent_id: self.config.agent_id.clone(),
            target: start.target,
            include_children: options.include_children,
            duration: Duration::from_millis(start.duration_ms),
            frequency_hz: start.frequency_hz,
            window: start
                .window_ms
                .map_or(self.config.window, Duration::from_millis),
            cost,
            plugin: options.plugin,
            event: options.event,
            min_wait: options.min_wait_us.map(Duration::from_micros),
            max_message_bytes: self.config.max_message_bytes,
        };
        info!(profile_id = %spec.profile_id, target = %spec.target, frequency_hz = spec.frequency_hz,
            duration_ms = start.duration_ms, plugin = ?spec.plugin, "starting profile");
        let plugins = self.plugins.clone();
        let publisher = self.publisher.clone();
        let cost_events = self.config.cost_events;
        let started = profile_task::start(
            plugins,
            self.procfs.clone(),
            spec,
            publisher,
            cost_events,
            first_sequence,
        );
        match started {
            Ok((handle, task)) => {
                self.running.insert(start.profile_id, handle);
                let task = self.tasks.spawn(task);
                self.task_profiles.insert(task.id(), start.profile_id);
                self.publish_running();
                true
            }
            Err(e) => {
                error!(profile_id = %start.profile_id, error = %e, "cannot start profile");
                let publisher = self.publisher.clone();
                let kind = AgentEventKind::ProfileFailed {
                    profile_id: start.profile_id,
                    error: e.to_string(),
                };
                tokio::spawn(async move { publisher.event_or_warn(kind).await });
                false
            }
        }
    }

    async fn reject(&self, rejection: Rejection, intake: &Intake, received: &Received) {
        warn!(command_id = ?rejection.command_id, profile_id = ?rejection.profile_id,
            reason = %rejection.reason, "command rejected");
        if rejection.dead_letter {
            let origin = Origin {
                topic: &self.config.topics.commands,
                partition: intake.partition(),
                offset: received.offset,
            };
            let sent = self
                .publisher
                .dead_letter(
                    received.key.as_deref(),
                    received.payload.as_deref(),
                    &rejection.reason,
                    origin,
                )
                .await;
            if let Err(e) = sent {
                warn!(error = %e, "cannot publish to the dead-letter topic");
            }
        }
        self.publisher
            .event_or_warn(AgentEventKind::CommandRejected {
                command_id: rejection.command_id,
                profile_id: rejection.profile_id,
                reason: rejection.reason,
            })
            .await;
    }

    fn reaped(&mut self, joined: Joined) {
        let task = match joined {
            Ok((task, (profile_id, outcome))) => {
                debug!(%profile_id, ?outcome, "profile task ended");
                task
            }
            Err(e) => {
                // A panicked publishing task; its sampling thread stops by
                // itself once the channel to the task is closed.
                error!(error = %e, "profile task failed");
                e.id()
            }
        };
        if let Some(profile_id) = self.task_profiles.remove(&task) {
            self.running.remove(&profile_id);
            let scan = self.live.borrow().scan;
            if self.continuous.ended(&profile_id, Now::read(), scan) {
                self.plan_continuous();
            }
        }
        self.publish_running();
    }

    /// Stops every profile, continuous ones included, and starts no more.
    fn stop_all(&mut self) {
        self.draining = true;
        for handle in self.running.values() {
            handle.stop();
        }
    }

    /// Waits for every profile to flush, up to the grace period.
    async fn reap_all(&mut self) {
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        while !self.tasks.is_empty() {
            match tokio::time::timeout_at(deadline, self.tasks.join_next_with_id()).await {
                Ok(Some(joined)) => self.reaped(joined),
                Ok(None) => break,
                Err(_) => {
                    warn!(
                        running = self.running.len(),
                        "profiles did not flush in time"
                    );
                    self.tasks.abort_all();
                    break;
                }
            }
        }
    }

    fn publish_running(&self) {
        let mut ids: Vec<Uuid> = self.running.keys().copied().collect();
        ids.sort_unstable();
        self.metrics.running_profiles.set(ids.len() as i64);
        self.heartbeat.send_replace(ids);
    }
}

/// The definitions an earlier run kept, or none (reported as the empty
/// set's digest, so the api-server syncs).
fn load_services(store: &ServiceStore) -> ServiceBook {
    match store.load() {
        Ok(Some(book)) => {
            info!(path = %store.path().display(), services = book.definitions().len(),
                digest = %book.digest(), "service definitions kept by an earlier run");
            book
        }
        Ok(None) => ServiceBook::default(),
        Err(e) => {
            warn!(path = %store.path().display(), error = %e,
                "cannot use the kept service definitions; holding none until the next sync");
            ServiceBook::default()
        }
    }
}
