//! The sampling loop of one profile, on its own blocking thread: resolve the
//! target, open a plugin session, drain it every tick, cut windows into
//! snapshots, and stop on request, at the deadline or when the target is
//! gone, always flushing the last partial window.
//!
//! Cost control ([`crate::cost`]) acts here: a duty cycle switches the
//! sampling off and on between ticks, and each closed window is pruned
//! (FSP) and decides the next window's frequency (FDA, overhead budget),
//! which is recorded in every snapshot's header.
//!
//! It knows nothing of Kafka: results go to an `emit` callback, which the
//! agent turns into messages and the live test into assertions.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use odp_core::cost::CostEventKind;
use odp_core::event::FinishReason;
use odp_core::runtime::RuntimeInfo;
use odp_core::snapshot::SnapshotHeader;
use odp_core::{EventKind, Language, Snapshot, Target};
use tracing::{debug, info, warn};
use uuid::Uuid;

use crate::cost::control::Control;
use crate::cost::duty::Duty;
use crate::cost::CostSettings;
use crate::coverage::CoverageMeter;
use crate::plugin::identify::{self, LanguageRuntime};
use crate::plugin::{OpenOptions, PluginError, Plugins, Session, WindowSink};
use crate::targets::{ProcFs, Selector};
use crate::window::{publish_final, unix_ms, WindowClock};

/// How often buffers are drained at 99 Hz and faster; slower rates drain
/// as many samples less often (see [`drain_every`]).
const TICK: Duration = Duration::from_millis(50);
/// The longest wait between drains, whatever the rate.
const LONGEST_TICK: Duration = Duration::from_millis(500);

/// How long the sampling thread sleeps between drains at `hz`: about five
/// samples per thread at a time. Each wake-up costs the same whether it
/// finds 1 sample or 50, so at a continuous profile's 19 Hz draining every
/// 50 ms would be most of the agent's CPU.
fn drain_every(hz: u32) -> Duration {
    (TICK * 99 / hz.max(1)).clamp(TICK, LONGEST_TICK)
}
/// How often the target's processes and threads are re-scanned.
const RESCAN: Duration = Duration::from_secs(1);

/// Everything one profile needs, already validated.
#[derive(Debug, Clone)]
pub struct ProfileSpec {
    pub profile_id: Uuid,
    pub host: String,
    pub agent_id: String,
    pub target: Target,
    /// A pid target's descendants are sampled too.
    pub include_children: bool,
    pub duration: Duration,
    /// The requested frequency (cost control may lower it).
    pub frequency_hz: u32,
    pub window: Duration,
    pub cost: CostSettings,
    /// The plugin the command asked for; detected from the target when
    /// absent.
    pub plugin: Option<Language>,
    /// What to measure; the plugin's CPU event when absent.
    pub event: Option<EventKind>,
    /// Waits shorter than this are not recorded (wait events only).
    pub min_wait: Option<Duration>,
    /// A window encoding to more is sent as several snapshots.
    pub max_message_bytes: usize,
}

/// What the loop reports, in this order: `Started`, any number of
/// `Window`s, then `Finished`; or a lone `Failed`.
#[derive(Debug)]
pub enum RunnerEvent {
    Started {
        event: EventKind,
        frequency_hz: u32,
        pids: Vec<u32>,
        /// The plugin's runtime, and its version when known.
        runtime: LanguageRuntime,
        /// What the target runs with: flags, libraries, executable.
        runtime_info: RuntimeInfo,
    },
    Window(Box<Snapshot>),
    /// What cost control did, after the window it concerns.
    Cost(CostEventKind),
    Finished(FinishReason),
    Failed(String),
}

/// The processes of the target the plugin for `language` samples: those
/// that run it when the plugin was chosen by what the target runs, every
/// one when the profile asked for a plugin (the caller knows what it runs:
/// an interpreter linked in statically is not recognized).
fn sampled(procfs: &ProcFs, spec: &ProfileSpec, language: Language, pids: Vec<u32>) -> Vec<u32> {
    match spec.plugin {
        Some(_) => pids,
        None => identify::samplable(procfs, language, &pids),
    }
}

/// Runs a profile to its end. `stop` receiving a message (or its sender
/// being dropped) ends it as stopped; `emit` returning false (nobody
/// listening any more) ends it at once.
pub fn run(
    plugins: &Plugins,
    procfs: &ProcFs,
    spec: &ProfileSpec,
    stop: &Receiver<()>,
    mut emit: impl FnMut(RunnerEvent) -> bool,
) {
    let id = spec.profile_id;
    let selector = match Selector::of_profile(&spec.target, spec.include_children) {
        Ok(selector) => selector,
        Err(e) => {
            emit(RunnerEvent::Failed(format!("cannot list processes: {e}")));
            return;
        }
    };
    let pids = match procfs.resolve_selector(&selector) {
        Ok(pids) if !pids.is_empty() => pids,
        Ok(_) => {
            emit(RunnerEvent::Failed(
                PluginError::NoSuchProcess(spec.target.to_string()).to_string(),
            ));
            return;
        }
        Err(e) => {
            emit(RunnerEvent::Failed(format!("cannot list processes: {e}")));
            return;
        }
    };
    let runtime = match spec.plugin {
        // Asked for: its version only if it is what the target runs.
        Some(language) => Some(identify::identify_all(procfs, &pids))
            .filter(|identified| identified.language == language)
            .unwrap_or(LanguageRuntime {
                language,
                version: None,
            }),
        None => identify::identify_all(procfs, &pids),
    };
    let plugin = match plugins.for_event(runtime.language, spec.event) {
        Ok(plugin) => plugin,
        Err(e) => {
            emit(RunnerEvent::Failed(e.to_string()));
            return;
        }
    };
    let language = runtime.language;
    let pids = sampled(procfs, spec, language, pids);
    if pids.is_empty() {
        let wanted = format!("{} (none runs {language})", spec.target);
        emit(RunnerEvent::Failed(
            PluginError::NoSuchProcess(wanted).to_string(),
        ));
        return;
    }
    // Read before the session opens, so that a JVM's flags are its own and
    // not those the profile's JFR recording turns on (`+FlightRecorder`).
    let runtime_info = plugins.runtime_info(runtime.language, &pids);
    let start = Instant::now();
    let mut control = Control::new(spec.profile_id, spec.frequency_hz, spec.cost.clone(), start);
    let mut session = match plugin.open(
        &pids,
        control.frequency(),
        &OpenOptions {
            min_wait: spec.min_wait,
            target: Some(spec.target.clone()),
            include_children: spec.include_children,
        },
    ) {
        Ok(session) => session,
        Err(e) => {
            warn!(profile_id = %id, error = %e, "profile failed to start");
            emit(RunnerEvent::Failed(e.to_string()));
            return;
        }
    };
    info!(profile_id = %id, plugin = plugin.name(), version = ?runtime.version,
        event = %session.event(), pids = ?session.pids(),
        flags = runtime_info.flags.len(), libraries = runtime_info.libraries.len(),
        "profile started");
    if !emit(RunnerEvent::Started {
        event: session.event(),
        frequency_hz: control.frequency(),
        pids: session.pids(),
        runtime,
        runtime_info,
    }) {
        return;
    }
    // A session measuring only at the end has no window to cut before.
    let at_end = session.sends_at_end();

    // The profile's time runs from when sampling started: opening may take
    // seconds (a JVM initialising its flight recorder).
    let start = Instant::now();
    let duty = spec.cost.duty_cycle.map(|cycle| Duty::new(cycle, start));
    let mut paused = false;
    let mut clock = WindowClock::new(spec.window, spec.duration, start, unix_ms());
    let mut sink = WindowSink::new();
    let mut next_rescan = start + RESCAN;
    let mut meter =
        CoverageMeter::start(procfs.clone(), &session.pids(), session.follows_cpu_time())
            .seeing_new_processes(session.sees_new_processes());
    let reason = loop {
        let now = Instant::now();
        let mut sleep = clock.sleep_for(now, drain_every(control.frequency()));
        if let Some(duty) = &duty {
            sleep = sleep.min(duty.next_change(now).saturating_duration_since(now));
        }
        match stop.recv_timeout(sleep) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break FinishReason::Stopped,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Err(e) = poll(session.as_mut(), &mut sink, &mut meter) {
            emit(RunnerEvent::Failed(e.to_string()));
            return;
        }
        let now = Instant::now();
        meter.tick(now);
        if let Some(duty) = &duty {
            if duty.is_on(now) == paused {
                paused = !paused;
                meter.set_paused(paused);
                session.set_paused(paused);
            }
        }
        if now >= next_rescan {
            next_rescan = now + RESCAN;
            match procfs.resolve_selector(&selector) {
                Ok(pids) => match sampled(procfs, spec, language, pids) {
                    // Processes that each live less than a rescan period
                    // may all be gone at the rescan, yet sampled.
                    pids if pids.is_empty() && !session.sampled_target_lately() => {
                        break FinishReason::TargetExited
                    }
                    pids => {
                        session.sync_targets(&pids);
                        meter.track(&pids);
                    }
                },
                Err(e) => debug!(profile_id = %id, error = %e, "re-scan failed"),
            }
        }
        if clock.expired(now) {
            break FinishReason::DurationElapsed;
        }
        if clock.window_due(now) && !at_end {
            let closed = close_window(
                session.as_mut(),
                &mut sink,
                &mut clock,
                &mut control,
                spec,
                &mut meter,
            );
            let next_hz = closed.next_hz;
            if !emit_window(&mut emit, closed) {
                return;
            }
            if let Some(hz) = next_hz {
                info!(profile_id = %id, frequency_hz = hz, "sampling frequency adjusted");
                session.set_frequency(hz);
            }
        }
    };

    // What the kernel or the plugin's tool buffered since the last tick
    // belongs to the last window.
    match session.finish(&mut sink) {
        Ok(stats) => meter.add_poll(&stats),
        Err(e) if at_end => {
            warn!(profile_id = %id, error = %e, "profile failed at its end");
            emit(RunnerEvent::Failed(e.to_string()));
            return;
        }
        Err(e) => debug!(profile_id = %id, error = %e, "final drain failed"),
    }
    if publish_final(sink.samples(), clock.sequence()) || meter.has_pending() {
        let closed = close_window(
            session.as_mut(),
            &mut sink,
            &mut clock,
            &mut control,
            spec,
            &mut meter,
        );
        if !emit_window(&mut emit, closed) {
            return;
        }
    }
    info!(profile_id = %id, ?reason, windows = clock.sequence(), "profile finished");
    emit(RunnerEvent::Finished(reason));
}

/// The window cut to fit `max_bytes` per message, its parts numbered from
/// the window's sequence on; the clock skips the numbers the extra parts
/// took, so every message of the profile has its own.
fn numbered_parts(window: Snapshot, max_bytes: usize, clock: &mut WindowClock) -> Vec<Snapshot> {
    let first = window.sequence;
    let mut parts = window.split_to_fit(max_bytes);
    for (offset, part) in (0u64..).zip(parts.iter_mut()) {
        part.sequence = first + offset;
    }
    if parts.len() > 1 {
        debug!(
            sequence = first,
            parts = parts.len(),
            "window cut to fit messages"
        );
        clock.skip(parts.len() as u64 - 1);
    }
    parts
}

fn poll(
    session: &mut dyn Session,
    sink: &mut WindowSink,
    meter: &mut CoverageMeter,
) -> Result<(), PluginError> {
    let stats = session.poll(sink)?;
    meter.add_poll(&stats);
    Ok(())
}

/// A closed window: its (pruned) snapshot, what cost control reports about
/// it, and the next window's frequency when it changes.
struct Closed {
    /// The window, in parts that fit a message (usually one).
    snapshots: Vec<Snapshot>,
    reports: Vec<CostEventKind>,
    next_hz: Option<u32>,
}

/// Emits a window and its cost reports; false when nobody listens.
fn emit_window(emit: &mut impl FnMut(RunnerEvent) -> bool, closed: Closed) -> bool {
    closed
        .snapshots
        .into_iter()
        .all(|part| emit(RunnerEvent::Window(Box::new(part))))
        && closed
            .reports
            .into_iter()
            .all(|e| emit(RunnerEvent::Cost(e)))
}

/// Closes the current window into a snapshot and applies cost control.
fn close_window(
    session: &mut dyn Session,
    sink: &mut WindowSink,
    clock: &mut WindowClock,
    control: &mut Control,
    spec: &ProfileSpec,
    meter: &mut CoverageMeter,
) -> Closed {
    let now = Instant::now();
    let bounds = clock.close(now, unix_ms());
    let coverage = meter.close(control.frequency());
    if coverage.lost.overflow > 0 {
        warn!(profile_id = %spec.profile_id, sequence = bounds.sequence,
            lost = coverage.lost.overflow, "samples lost to full buffers in this window");
    }
    let mut snapshot = sink.take(SnapshotHeader {
        profile_id: spec.profile_id,
        host: spec.host.clone(),
        agent_id: spec.agent_id.clone(),
        sequence: bounds.sequence,
        window_start_ms: bounds.start_ms,
        window_end_ms: bounds.end_ms,
        event: session.event(),
        period: session.window_period(),
        frequency_hz: control.frequency(),
    });
    snapshot.coverage = coverage;
    let outcome = control.close_window(&mut snapshot, now, session.helper_cpu_time());
    let mut reports = outcome.events;
    if let Some(waits) = session.take_wait_sampling() {
        reports.push(CostEventKind::WaitsSampled {
            profile_id: spec.profile_id,
            sequence: bounds.sequence,
            switches: waits.switches,
            sampled_one_in: waits.sampled_one_in,
        });
    }
    Closed {
        snapshots: numbered_parts(snapshot, spec.max_message_bytes, clock),
        reports,
        next_hz: outcome.next_hz,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slower_rates_drain_as_many_samples_less_often() {
        assert_eq!(drain_every(999), TICK);
        assert_eq!(drain_every(99), TICK);
        // 19 Hz: five samples a thread, every quarter second or so.
        let continuous = drain_every(19);
        assert!(
            (Duration::from_millis(250)..=Duration::from_millis(270)).contains(&continuous),
            "{continuous:?}"
        );
        assert_eq!(drain_every(1), LONGEST_TICK);
        assert_eq!(drain_every(0), LONGEST_TICK);
    }
}
