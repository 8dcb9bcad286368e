//! The agent's watch of its triggers ([`crate::triggers`]): every second
//! while the held sync assigns this host a trigger, it reads the processes
//! of the triggers' services from `/proc` (each service resolved once,
//! whatever the number of its triggers), off the async threads, and
//! publishes each firing as a signed `trigger_fired` event. It shares
//! nothing with the sampling path but the publisher, whose events are
//! queued without waiting for the broker. With no trigger it sleeps until
//! the next sync.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use odp_core::trigger::TriggerAssignment;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::metrics::AgentMetrics;
use crate::publish::Publisher;
use crate::services::ServiceBook;
use crate::targets::ProcFs;
use crate::triggers::{Observation, ProcessReading, TriggerEvaluator, TICK};
use crate::window::unix_ms;

/// Watches the triggers of the book `services` holds that cover `host`,
/// until aborted.
pub(crate) async fn watch_triggers(
    host: String,
    procfs: ProcFs,
    publisher: Publisher,
    metrics: Arc<AgentMetrics>,
    mut services: watch::Receiver<Arc<ServiceBook>>,
) {
    let mut evaluator = TriggerEvaluator::default();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let book = services.borrow_and_update().clone();
        let watched: Vec<TriggerAssignment> = book
            .triggers()
            .iter()
            .filter(|t| t.covers(&host))
            .cloned()
            .collect();
        if watched.is_empty() {
            evaluator = TriggerEvaluator::default();
            if services.changed().await.is_err() {
                return;
            }
            tick.reset_immediately();
            continue;
        }
        tokio::select! {
            _ = tick.tick() => {}
            changed = services.changed() => match changed {
                // Read with the new book at once: a new trigger's period
                // starts now, a removed one stops being read.
                Ok(()) => continue,
                Err(_) => return,
            },
        }
        let names: BTreeSet<String> = watched.iter().map(|t| t.service.clone()).collect();
        let (read_book, read_procfs) = (Arc::clone(&book), procfs.clone());
        let started = Instant::now();
        let read =
            tokio::task::spawn_blocking(move || observe(&read_book, &names, &read_procfs)).await;
        metrics.triggers_read(started.elapsed());
        let observations = match read {
            Ok(observations) => observations,
            Err(e) => {
                warn!(error = %e, "reading the triggers' processes failed");
                HashMap::new()
            }
        };
        for firing in evaluator.tick(&watched, &observations) {
            info!(trigger_id = %firing.trigger_id, service = %firing.service,
                observed = firing.observed, unit = firing.condition.unit(),
                held_since_ms = firing.held_since_ms, "trigger fired");
            metrics.trigger_fired();
            publisher.event_detached(firing.event());
        }
    }
}

/// What `/proc` says now of each named service's processes. A service
/// that cannot be read is left out (its triggers start over). Each
/// service's time and uptime are read before its processes are listed
/// ([`Observation::uptime_ticks`]).
pub fn observe(
    book: &ServiceBook,
    services: &BTreeSet<String>,
    procfs: &ProcFs,
) -> HashMap<String, Observation> {
    let mut observations = HashMap::with_capacity(services.len());
    for service in services {
        let at_ms = unix_ms();
        let Some(uptime_ticks) = procfs.uptime_ticks() else {
            debug!("cannot read the uptime for triggers");
            break;
        };
        let pids = match book.resolve(service, procfs) {
            Ok(pids) => pids,
            Err(e) => {
                debug!(service, error = %e, "cannot list a trigger's processes");
                continue;
            }
        };
        // A process that exited since it was listed is left out.
        let processes = pids
            .into_iter()
            .filter_map(|pid| {
                Some(ProcessReading {
                    pid,
                    cpu: procfs.cpu_ticks(pid)?,
                    rss_bytes: procfs.rss_bytes(pid)?,
                })
            })
            .collect();
        observations.insert(
            service.clone(),
            Observation {
                at_ms,
                uptime_ticks,
                processes,
            },
        );
    }
    observations
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use odp_core::service::{ServiceDefinition, SyncServices};
    use odp_core::Target;

    use super::*;

    fn book(services: &[(&str, Target)]) -> ServiceBook {
        let definitions = services
            .iter()
            .map(|(name, target)| ServiceDefinition {
                name: (*name).to_owned(),
                target: target.clone(),
            })
            .collect();
        ServiceBook::new(&SyncServices::new(definitions)).unwrap()
    }

    #[test]
    fn a_service_is_read_with_its_processes_cpu_and_memory() {
        let procfs = ProcFs::default();
        let me = std::process::id();
        let comm = procfs.comm(me).unwrap();
        let book = book(&[
            ("tests", Target::ProcessName(comm)),
            ("nobody", Target::ProcessName("no-such-process-x".into())),
            ("sleepers", Target::ProcessName("sleep".into())),
        ]);
        let names: BTreeSet<String> = ["tests", "nobody", "undefined"].map(str::to_owned).into();
        // Some CPU used, a few clock ticks' worth.
        let busy_until = Instant::now() + Duration::from_millis(50);
        while Instant::now() < busy_until {
            std::hint::spin_loop();
        }
        let before = unix_ms();
        let observations = observe(&book, &names, &procfs);
        let tests = &observations["tests"];
        assert!(tests.at_ms >= before);
        // Other runs of these tests may be listed too.
        let reading = tests.processes.iter().find(|p| p.pid == me).unwrap();
        assert!(reading.cpu.used > 0);
        assert!(reading.cpu.started <= tests.uptime_ticks);
        assert!(reading.rss_bytes > 1 << 20, "{reading:?}");
        assert!(observations["nobody"].processes.is_empty());
        assert!(observations["undefined"].processes.is_empty());
        assert!(!observations.contains_key("sleepers"), "not asked for");
    }

    /// What one tick costs the agent, printed: the thread's CPU time to
    /// read a service whose target is a cgroup (every process of the
    /// host's `/proc` is looked at, the costliest target) and one by
    /// name.
    #[test]
    fn a_tick_costs_little_cpu() {
        let thread_cpu = || {
            let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
            Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
        };
        let book = book(&[
            ("all", Target::Cgroup("/".into())),
            ("sleepers", Target::ProcessName("sleep".into())),
        ]);
        let procfs = ProcFs::default();
        for service in ["all", "sleepers"] {
            let names = BTreeSet::from([service.to_owned()]);
            const TICKS: u32 = 50;
            let before = thread_cpu();
            let mut processes = 0;
            for _ in 0..TICKS {
                processes = observe(&book, &names, &procfs)[service].processes.len();
            }
            let per_tick = (thread_cpu() - before) / TICKS;
            let listed = std::fs::read_dir("/proc").unwrap().count();
            eprintln!(
                "trigger tick of {service:?}: {per_tick:?} CPU ({processes} of the service's \
                 processes read, {listed} /proc entries), {:.3} % of a core at one tick a second",
                per_tick.as_secs_f64() * 100.0
            );
            // Far from a core's percent: an unoptimized build, a loaded
            // machine, and still bounded.
            assert!(per_tick < Duration::from_millis(50), "{per_tick:?}");
        }
    }
}
