//! Fires due profiling schedules.
//!
//! Every tick runs in one transaction ([`odp_store::SchedulerTick`]) that
//! first takes the scheduler lock (a Postgres advisory lock, a MySQL named
//! lock): when another replica holds it, that replica is firing and this
//! one does nothing. Due schedules are locked `for update skip locked`, and
//! each fired occurrence is claimed by inserting its unique
//! `(schedule_id, scheduled_for)` run row before the profile starts, so an
//! occurrence fires at most once even without the lock. Occurrences that
//! fell due while no scheduler ran are recorded as `missed`, never fired in
//! bulk: only the latest fires, and only within the grace period.

use std::time::Duration;

use chrono::{DateTime, Utc};
use odp_api_types::ScheduleRun;
use odp_store::{Database, Fired, Inserted, NewSchedule, RunOutcome, Runs, SchedulerTick};
use uuid::Uuid;

use crate::cron_schedule::{plan_tick, CronSchedule};
use crate::service::profiles::{self, StartedBy, ValidStart};
use crate::service::runs;
use crate::service_error::ServiceError;
use crate::AppState;

/// At most this many schedules fire per tick; the rest stay due for the
/// next one.
const SCHEDULES_PER_TICK: i64 = 100;

#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// How often to look for due schedules.
    pub tick: Duration,
    /// How late the latest due occurrence may still fire.
    pub grace: chrono::Duration,
}

impl SchedulerOptions {
    pub fn from_config(config: &crate::ServeConfig) -> Self {
        SchedulerOptions {
            tick: Duration::from_secs(config.scheduler_tick_secs),
            grace: chrono::Duration::seconds(config.scheduler_grace_secs as i64),
        }
    }
}

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Whether this tick held the scheduler lock (else another did).
    pub locked: bool,
    pub started: u32,
    pub skipped_busy: u32,
    pub failed: u32,
    /// Missed occurrences newly recorded.
    pub missed: u64,
}

/// Ticks forever, every `options.tick`.
pub async fn run(state: AppState, options: SchedulerOptions) {
    let mut interval = tokio::time::interval(options.tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        match tick(&state, &options, Utc::now()).await {
            Ok(report) if report.started + report.skipped_busy + report.failed > 0 => {
                tracing::info!(?report, "scheduler fired schedules")
            }
            Ok(report) if report.missed > 0 => {
                tracing::warn!(missed = report.missed, "scheduler recorded missed runs")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "scheduler tick failed"),
        }
    }
}

/// One pass over the schedules due at `now`, in one transaction on the
/// api-server's database.
pub async fn tick(
    state: &AppState,
    options: &SchedulerOptions,
    now: DateTime<Utc>,
) -> Result<TickReport, odp_store::StoreError> {
    tick_on(&state.pool, state, options, now).await
}

/// [`tick`] with the schedules in `db`, either backend.
pub async fn tick_on(
    db: impl Into<Database>,
    state: &AppState,
    options: &SchedulerOptions,
    now: DateTime<Utc>,
) -> Result<TickReport, odp_store::StoreError> {
    let mut tx = SchedulerTick::begin(db).await?;
    let mut report = TickReport::default();
    match fire_due(state, &mut tx, now, options, &mut report).await {
        Ok(()) => tx.commit().await?,
        Err(e) => {
            // Ends the transaction and frees the lock now, not when the
            // connection is next used or closed.
            if let Err(rollback) = tx.rollback().await {
                tracing::warn!(error = %rollback, "scheduler rollback failed");
            }
            return Err(e);
        }
    }
    Ok(report)
}

/// Fires what is due if this tick gets the lock.
async fn fire_due(
    state: &AppState,
    tx: &mut SchedulerTick,
    now: DateTime<Utc>,
    options: &SchedulerOptions,
    report: &mut TickReport,
) -> Result<(), odp_store::StoreError> {
    if !tx.try_lock().await? {
        return Ok(());
    }
    report.locked = true;
    for schedule in tx.due(now, SCHEDULES_PER_TICK).await? {
        fire_schedule(state, tx, &schedule.schedule, now, options, report).await?;
    }
    Ok(())
}

async fn fire_schedule(
    state: &AppState,
    tx: &mut SchedulerTick,
    schedule: &NewSchedule,
    now: DateTime<Utc>,
    options: &SchedulerOptions,
    report: &mut TickReport,
) -> Result<(), odp_store::StoreError> {
    let Some(due_since) = schedule.next_run_at else {
        return Ok(());
    };
    // Stored expressions were validated on write (sub-minute ones only
    // where the server allowed them); one that no longer parses (e.g. a
    // zone dropped from the tz database) stops with a failed run.
    let spec = match CronSchedule::parse(&schedule.cron, &schedule.timezone, true) {
        Ok(spec) => spec,
        Err(reason) => {
            tx.claim_run(
                schedule.id,
                due_since,
                RunOutcome::Failed,
                Some(&reason.to_string()),
            )
            .await?;
            report.failed += 1;
            return tx.advance(schedule.id, None, None).await;
        }
    };
    let plan = plan_tick(&spec, due_since, now, options.grace);
    if plan.missed_unrecorded > 0 {
        tracing::warn!(schedule = %schedule.id, unrecorded = plan.missed_unrecorded,
            "more missed runs than are recorded");
    }
    report.missed += tx
        .record_missed(
            schedule.id,
            &plan.missed,
            "not fired: no scheduler was running when it fell due",
        )
        .await?;
    let mut fired_at = None;
    if let Some(occurrence) = plan.fire {
        // Claim the occurrence first: a concurrent scheduler's claim waits
        // on this row and then finds it taken.
        if let Some(run_id) = tx
            .claim_run(schedule.id, occurrence, RunOutcome::Started, None)
            .await?
        {
            let outcome = match &schedule.run_spec {
                Some(spec) => {
                    let (outcome, run, detail) = start_run(state, schedule, spec).await;
                    tx.finish_run(run_id, outcome, Fired::Run(run), detail.as_deref())
                        .await?;
                    outcome
                }
                None => {
                    let (outcome, profile_id, detail) = start_profile(state, schedule).await;
                    let fired = Fired::Profile(profile_id);
                    tx.finish_run(run_id, outcome, fired, detail.as_deref())
                        .await?;
                    outcome
                }
            };
            match outcome {
                RunOutcome::Started => report.started += 1,
                RunOutcome::SkippedBusy => report.skipped_busy += 1,
                RunOutcome::Failed | RunOutcome::Missed => report.failed += 1,
            }
            fired_at = Some(now);
        }
    }
    tx.advance(schedule.id, plan.next_run_at, fired_at).await
}

/// Who a schedule's profiles and runs are started by: schedules are an
/// admin's to make, so they may deploy as one.
fn started_by(schedule: &NewSchedule) -> StartedBy {
    StartedBy {
        subject: format!("schedule:{}", schedule.id),
        may_deploy: true,
    }
}

/// What a failed start records: its message, or for an internal error a
/// pointer to the log.
fn failure(schedule: &NewSchedule, e: ServiceError) -> String {
    match e {
        ServiceError::Internal(e) => {
            tracing::error!(schedule = %schedule.id, error = %e, "scheduled start failed");
            "internal error; see the api-server log".into()
        }
        e => e.to_string(),
    }
}

/// Starts a run schedule's run through the same path as
/// `POST /api/v1/runs`, as `schedule:<id>`; skipped while its previous
/// run is still running.
async fn start_run(
    state: &AppState,
    schedule: &NewSchedule,
    spec: &ScheduleRun,
) -> (RunOutcome, Option<Uuid>, Option<String>) {
    let by = started_by(schedule);
    match Runs::new(&state.pool).running_for(&by.subject).await {
        Ok(running) => {
            if let Some(previous) = running.first() {
                return (
                    RunOutcome::SkippedBusy,
                    None,
                    Some(format!("its previous run {} is still running", previous.id)),
                );
            }
        }
        Err(e) => return (RunOutcome::Failed, None, Some(failure(schedule, e.into()))),
    }
    match runs::create_for_schedule(state, schedule, spec, &by).await {
        Ok(run) => {
            tracing::info!(schedule = %schedule.id, run = %run.id, "scheduled run started");
            (RunOutcome::Started, Some(run.id), None)
        }
        Err(e) => (RunOutcome::Failed, None, Some(failure(schedule, e))),
    }
}

/// Starts the schedule's profile through the same path as
/// `POST /api/v1/profiles`, as `schedule:<id>`.
async fn start_profile(
    state: &AppState,
    schedule: &NewSchedule,
) -> (RunOutcome, Option<Uuid>, Option<String>) {
    let start = ValidStart {
        host: schedule.host.clone(),
        service: schedule.service.clone(),
        target: schedule.target.clone(),
        duration_secs: schedule.duration_secs as u64,
        frequency_hz: schedule.frequency_hz as u32,
        window_secs: schedule.window_secs.map(|s| s as u64),
        labels: [("schedule".to_owned(), schedule.name.clone())].into(),
        options: schedule.options.clone(),
        run_id: None,
    };
    let by = started_by(schedule);
    match profiles::start(state, start, &by, None).await {
        Ok(Inserted::Created(row) | Inserted::Replayed(row)) => {
            tracing::info!(schedule = %schedule.id, profile_id = %row.id, "scheduled profile started");
            (RunOutcome::Started, Some(row.id), None)
        }
        Ok(Inserted::Duplicate(live)) => (
            RunOutcome::SkippedBusy,
            None,
            Some(format!(
                "the target already has a live profile: {}",
                live.id
            )),
        ),
        Err(e) => (RunOutcome::Failed, None, Some(failure(schedule, e))),
    }
}
