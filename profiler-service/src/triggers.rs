//! Triggers on this host ([`odp_core::trigger`]): whether a trigger's
//! condition has held for its whole period, from one [`Observation`] of
//! its service's processes a second. Pure: the agent's watch
//! ([`crate::trigger_watch`]) brings the readings of `/proc` and the time,
//! and publishes what [`TriggerEvaluator::tick`] says fired.
//!
//! - **CPU** (`cpu_above`): between two ticks, the CPU ticks (utime +
//!   stime, all threads) the service's processes used, as percent of one
//!   core. A pid seen at both ticks counts what it used in between. A pid
//!   new at a tick counts all it ever used if it started after the
//!   previous tick (its whole life falls in the interval), and nothing
//!   otherwise: it ran before without being the service's (renamed, or an
//!   exec), and how much of its CPU falls in the interval is unknown, so it
//!   counts from the next tick on. A pid gone by a tick takes what it used
//!   since the previous one with it. The condition holds when every
//!   interval of the last `for_secs` was above the threshold: an interval
//!   at or below it starts the period again.
//! - **Memory** (`rss_growth`): the sum of the processes' resident memory
//!   at each tick, and its growth a minute as the least-squares slope over
//!   the period's ticks, so one noisy tick moves it little (far less than
//!   it would move the difference of the first and last).
//! - A period is full once its ticks span `for_secs` (less [`JITTER_MS`]):
//!   after an agent restart or a changed condition, a trigger waits a whole
//!   period before it may fire, never on half a window. A tick that finds
//!   no process of the service, or could not read them, empties the period.
//! - After a firing the trigger does not fire again on this host until a
//!   period that began `cooldown_secs` after the fired one's: a condition
//!   that keeps holding fires once per cooldown, each time about the
//!   period just before it. The server keeps the cooldown by the same
//!   starts, which the firings report.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use odp_core::event::AgentEventKind;
use odp_core::trigger::{TriggerAssignment, TriggerCondition};
use uuid::Uuid;

use crate::targets::{CpuTicks, TICKS_PER_SECOND};

/// How often the watched services are read.
pub const TICK: Duration = Duration::from_secs(1);
/// How much less than `for_secs` a period's ticks may span and still fill
/// it: the timer wakes a few milliseconds late, not always by the same.
pub const JITTER_MS: i64 = 100;
const MIB: f64 = 1024.0 * 1024.0;

/// One process of a service at a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessReading {
    pub pid: u32,
    pub cpu: CpuTicks,
    pub rss_bytes: u64,
}

/// A service's processes at one tick.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    /// When it was read (unix ms, the agent's clock).
    pub at_ms: i64,
    /// Clock ticks since boot, read before the processes were listed: a
    /// process started at or after the previous tick's was not among its
    /// processes.
    pub uptime_ticks: u64,
    pub processes: Vec<ProcessReading>,
}

/// A trigger whose condition held for its period, its cooldown passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Firing {
    pub trigger_id: Uuid,
    pub service: String,
    pub condition: TriggerCondition,
    /// Over the period, in the condition's unit: the average CPU, or the
    /// memory's growth a minute.
    pub observed: f64,
    /// When the period began (unix ms).
    pub held_since_ms: i64,
}

impl Firing {
    /// The event that reports it.
    pub fn event(&self) -> AgentEventKind {
        AgentEventKind::TriggerFired {
            trigger_id: self.trigger_id,
            observed: self.observed,
            held_since_ms: self.held_since_ms,
        }
    }
}

/// The state of every trigger this host watches.
#[derive(Debug, Default)]
pub struct TriggerEvaluator {
    watched: HashMap<Uuid, Watched>,
}

impl TriggerEvaluator {
    /// One tick: `triggers` are those this host watches now (others are
    /// forgotten, cooldown included), `observations` what was read of
    /// their services (one missing: the service could not be read). The
    /// firings, in the order of `triggers`.
    pub fn tick(
        &mut self,
        triggers: &[TriggerAssignment],
        observations: &HashMap<String, Observation>,
    ) -> Vec<Firing> {
        self.watched
            .retain(|id, _| triggers.iter().any(|t| t.id == *id));
        let mut firings = Vec::new();
        for trigger in triggers {
            let watched = self
                .watched
                .entry(trigger.id)
                .or_insert_with(|| Watched::new(trigger.condition));
            if watched.condition != trigger.condition {
                // Another condition: what was measured does not apply.
                watched.condition = trigger.condition;
                watched.period.clear();
            }
            let Some(observation) = observations.get(&trigger.service) else {
                watched.forget_readings();
                continue;
            };
            let Some((observed, held_since_ms)) = watched.observe(observation) else {
                continue;
            };
            // Kept between the periods' starts, which the firings report and
            // the server checks the cooldown by: a tick's own time would
            // drift from them by up to a tick, more on a loaded host.
            let cooldown_ms = i64::from(trigger.cooldown_secs) * 1000;
            if watched
                .fired_held_since_ms
                .is_some_and(|fired| held_since_ms - fired < cooldown_ms)
            {
                continue;
            }
            watched.fired_held_since_ms = Some(held_since_ms);
            firings.push(Firing {
                trigger_id: trigger.id,
                service: trigger.service.clone(),
                condition: trigger.condition,
                observed,
                held_since_ms,
            });
        }
        firings
    }
}

/// One trigger's readings and last firing.
#[derive(Debug)]
struct Watched {
    condition: TriggerCondition,
    previous: Option<PreviousTick>,
    /// The period so far, oldest first: CPU intervals all above the
    /// threshold, or memory samples.
    period: VecDeque<Point>,
    /// The start of the period the last firing reported.
    fired_held_since_ms: Option<i64>,
}

/// What the previous tick read.
#[derive(Debug)]
struct PreviousTick {
    at_ms: i64,
    uptime_ticks: u64,
    cpu: HashMap<u32, CpuTicks>,
}

/// A CPU interval from `start_ms` to `end_ms` and the ticks used in it, or
/// a memory sample at `start_ms` = `end_ms` of `value` bytes.
#[derive(Debug, Clone, Copy)]
struct Point {
    start_ms: i64,
    end_ms: i64,
    value: u64,
}

impl Watched {
    fn new(condition: TriggerCondition) -> Watched {
        Watched {
            condition,
            previous: None,
            period: VecDeque::new(),
            fired_held_since_ms: None,
        }
    }

    /// Starts over from the next reading (the cooldown stays).
    fn forget_readings(&mut self) {
        self.previous = None;
        self.period.clear();
    }

    /// Takes a tick's reading; the observed value and the period's start
    /// when the condition held over a full period.
    fn observe(&mut self, now: &Observation) -> Option<(f64, i64)> {
        let previous = self.previous.replace(PreviousTick {
            at_ms: now.at_ms,
            uptime_ticks: now.uptime_ticks,
            cpu: now.processes.iter().map(|p| (p.pid, p.cpu)).collect(),
        });
        let stepped_back = previous.as_ref().is_some_and(|p| p.at_ms >= now.at_ms);
        if stepped_back || now.processes.is_empty() {
            self.period.clear();
            return None;
        }
        let period_ms = i64::from(self.condition.for_secs()) * 1000;
        match self.condition {
            TriggerCondition::CpuAbove { percent, .. } => {
                // The first reading only starts the first interval.
                let previous = previous?;
                let interval = Point {
                    start_ms: previous.at_ms,
                    end_ms: now.at_ms,
                    value: cpu_used_since(&previous, now),
                };
                if cpu_percent(interval.value, interval.end_ms - interval.start_ms)
                    <= f64::from(percent)
                {
                    self.period.clear();
                    return None;
                }
                self.period.push_back(interval);
                let held_since = self.full_period(now.at_ms, period_ms)?;
                let used = self.period.iter().map(|p| p.value).sum();
                Some((cpu_percent(used, now.at_ms - held_since), held_since))
            }
            TriggerCondition::RssGrowth { mib_per_min, .. } => {
                self.period.push_back(Point {
                    start_ms: now.at_ms,
                    end_ms: now.at_ms,
                    value: now.processes.iter().map(|p| p.rss_bytes).sum(),
                });
                let held_since = self.full_period(now.at_ms, period_ms)?;
                let growth = growth_mib_per_min(&self.period)?;
                (growth > f64::from(mib_per_min)).then_some((growth, held_since))
            }
        }
    }

    /// Drops what fell out of the period ending at `now_ms` (keeping the
    /// point that covers its start) and, when what is left spans it, when
    /// it began.
    fn full_period(&mut self, now_ms: i64, period_ms: i64) -> Option<i64> {
        let start_ms = now_ms - period_ms;
        while self
            .period
            .get(1)
            .is_some_and(|next| next.start_ms <= start_ms)
        {
            self.period.pop_front();
        }
        let first = self.period.front()?.start_ms;
        (first <= start_ms + JITTER_MS).then_some(first)
    }
}

/// The CPU ticks the processes of `now` used since `previous` (see the
/// module's notes for new and gone pids). A pid whose start time changed
/// is another process under a reused pid.
fn cpu_used_since(previous: &PreviousTick, now: &Observation) -> u64 {
    now.processes
        .iter()
        .map(|p| match previous.cpu.get(&p.pid) {
            Some(before) if before.started == p.cpu.started => {
                p.cpu.used.saturating_sub(before.used)
            }
            _ if p.cpu.started >= previous.uptime_ticks => p.cpu.used,
            _ => 0,
        })
        .sum()
}

/// `ticks` of CPU used in `span_ms`, as percent of one core.
fn cpu_percent(ticks: u64, span_ms: i64) -> f64 {
    ticks as f64 * 100_000.0 / (TICKS_PER_SECOND as f64 * span_ms.max(1) as f64)
}

/// The least-squares slope of memory samples, in MiB a minute; `None`
/// with fewer than two distinct times.
fn growth_mib_per_min(samples: &VecDeque<Point>) -> Option<f64> {
    let origin = samples.front()?.start_ms;
    let n = samples.len() as f64;
    let minutes = |p: &Point| (p.start_ms - origin) as f64 / 60_000.0;
    let mib = |p: &Point| p.value as f64 / MIB;
    let mean_x = samples.iter().map(minutes).sum::<f64>() / n;
    let mean_y = samples.iter().map(mib).sum::<f64>() / n;
    let (mut covariance, mut variance) = (0.0, 0.0);
    for p in samples {
        let dx = minutes(p) - mean_x;
        covariance += dx * (mib(p) - mean_y);
        variance += dx * dx;
    }
    (variance > 0.0).then(|| covariance / variance)
}

#[cfg(test)]
mod tests;
