//! Runs: a request checked, the hosts chosen from the live ones running
//! the service, one member profile started per host, and the run as the
//! API shows it (its status derived from its members').

use std::collections::BTreeMap;

use chrono::Utc;
use futures::{StreamExt, TryStreamExt};
use odp_api_types::{CreateRunRequest, Run, RunMember, RunStatus, ScheduleRun, StartRequest};
use odp_core::run::{select_hosts, Host, Selection, SelectionRequest, StopRule};
use odp_core::{ProfileStatus, Target};
use odp_store::{
    Database, Inserted, NewRun, NewSchedule, NewService, ProfileRow, RunHost, RunHostRow, RunRow,
    RunState, Runs, Services,
};
use uuid::Uuid;

use crate::service::profiles::{self, StartedBy, ValidStart};
use crate::service_error::ServiceError;
use crate::AppState;

pub(crate) mod reads;

fn unprocessable(message: String) -> ServiceError {
    ServiceError::Invalid(message)
}

/// The member profile every chosen host starts, before its host is set:
/// checked as an ordinary start of the service's target.
pub(crate) fn member_start(
    request: &CreateRunRequest,
    target: &Target,
    run: Uuid,
) -> Result<ValidStart, ServiceError> {
    let (process_name, cmdline, cgroup) = match target.clone() {
        Target::ProcessName(name) => (Some(name), None, None),
        Target::CommandLine(regex) => (None, Some(regex), None),
        Target::Cgroup(path) => (None, None, Some(path)),
        other => {
            return Err(ServiceError::Internal(format!(
                "a service's target is {other}"
            )))
        }
    };
    let mut start = ValidStart::try_from(StartRequest {
        host: "run-member".into(),
        service: Some(request.service.clone()),
        pid: None,
        process_name,
        cmdline,
        cgroup,
        duration_secs: request.duration_secs,
        frequency_hz: request.frequency_hz,
        window_secs: request.window_secs,
        labels: BTreeMap::from([("run".to_owned(), run.to_string())]),
        options: request.options.clone(),
    })?;
    start.run_id = Some(run);
    Ok(start)
}

/// Members started at once. Each start waits on a few round trips (its
/// row, the broker's acknowledgement of its command, the host's record):
/// one after another, a 1,000-host run took 3.8 s to publish. Few enough
/// that the starts hold at most this many of the pool's connections.
const MEMBER_STARTS_IN_FLIGHT: usize = 8;

/// Starts the run `request` asks for: checks it, chooses its hosts,
/// records it and starts one member per host.
pub(crate) async fn create(
    state: &AppState,
    request: CreateRunRequest,
    by: &StartedBy,
) -> Result<Run, ServiceError> {
    if let Some(rule) = &request.stop_when {
        rule.validate().map_err(|e| unprocessable(e.to_string()))?;
    }
    let service = defined_service(&state.pool, &request.service).await?;
    let id = Uuid::new_v4();
    let template = member_start(&request, &service.target, id)?;
    let spec = ScheduleRun {
        hosts: request.hosts,
        stratify_by: request.stratify_by,
        seed: request.seed,
        strict: request.strict,
        stop_when: request.stop_when,
    };
    launch(state, id, &service, &spec, template, by).await
}

/// The service `name` as defined, or 422 when none is.
pub(crate) async fn defined_service(db: &Database, name: &str) -> Result<NewService, ServiceError> {
    match Services::new(db).get(name).await? {
        Some(row) => Ok(row.service),
        None => Err(unprocessable(format!(
            "no service {name:?} is defined (POST /api/v1/services)"
        ))),
    }
}

/// Starts the run a run schedule's `spec` asks for, as `by` (the
/// schedule): its members profile the service's target now, with the
/// schedule's duration, frequency, window and options.
pub(crate) async fn create_for_schedule(
    state: &AppState,
    schedule: &NewSchedule,
    spec: &ScheduleRun,
    by: &StartedBy,
) -> Result<Run, ServiceError> {
    let service = defined_service(&state.pool, &schedule.service).await?;
    let id = Uuid::new_v4();
    let template = ValidStart {
        host: "run-member".into(),
        service: service.name.clone(),
        target: service.target.clone(),
        duration_secs: schedule.duration_secs.max(1) as u64,
        frequency_hz: schedule.frequency_hz.max(1) as u32,
        window_secs: schedule.window_secs.map(|s| s.max(1) as u64),
        labels: BTreeMap::from([
            ("run".to_owned(), id.to_string()),
            ("schedule".to_owned(), schedule.name.clone()),
        ]),
        options: schedule.options.clone(),
        run_id: Some(id),
    };
    launch(state, id, &service, spec, template, by).await
}

/// Chooses the run's hosts from the live ones running `service`, checks
/// the caller's host limit, records the run and starts one member per
/// host from `template`, recording how each start went.
async fn launch(
    state: &AppState,
    id: Uuid,
    service: &NewService,
    spec: &ScheduleRun,
    template: ValidStart,
    by: &StartedBy,
) -> Result<Run, ServiceError> {
    let requested_by = by.subject.as_str();
    let live_within = state.control.live_within();
    let live: Vec<Host> = Services::new(&state.pool)
        .hosts_running(&service.name, live_within)
        .await?
        .into_iter()
        .map(|h| Host {
            id: h.host,
            labels: h.labels,
        })
        .collect();
    if live.is_empty() {
        return Err(unprocessable(format!(
            "no live host runs service {:?} ({})",
            service.name, service.target
        )));
    }
    let asked = SelectionRequest {
        selection: spec.hosts,
        stratify_by: spec.stratify_by.clone(),
        seed: spec.seed.unwrap_or_else(|| Uuid::new_v4().as_u64_pair().0),
        strict: spec.strict,
    };
    let selection = select_hosts(&live, &asked).map_err(|e| unprocessable(e.to_string()))?;
    let runs = Runs::new(&state.pool);
    let busy = runs.live_members_for(requested_by).await?;
    check_host_limit(
        selection.hosts.len(),
        busy,
        state.max_run_hosts_per_user,
        requested_by,
    )?;
    runs.create(&NewRun {
        id,
        service: service.name.clone(),
        selection: &asked,
        chosen: &selection,
        stop_rule: spec.stop_when,
        max_duration_ms: (template.duration_secs * 1000) as i64,
        requested_by: requested_by.to_owned(),
    })
    .await?;
    let starts = selection.hosts.iter().cloned().map(|host| {
        let start = ValidStart {
            host: host.clone(),
            ..template.clone()
        };
        let runs = runs.clone();
        async move {
            let outcome = start_member(state, id, &host, start, by).await;
            if !outcome.started {
                tracing::info!(run = %id, %host, reason = outcome.reason.as_deref().unwrap_or("-"),
                    "run member not started");
            }
            runs.record_host(id, &outcome)
                .await
                .map(|()| outcome.started)
        }
    });
    let started = futures::stream::iter(starts)
        .buffer_unordered(MEMBER_STARTS_IN_FLIGHT)
        .try_fold(0usize, |started, ok| async move {
            Ok(started + usize::from(ok))
        })
        .await?;
    tracing::info!(run = %id, service = %service.name, hosts = selection.hosts.len(), started,
        eligible = selection.eligible, by = %requested_by, "run started");
    describe(state, id).await
}

/// 422 when `chosen` more hosts, with the `busy` ones `requested_by`'s
/// running runs profile now, exceed `limit` (`--max-run-hosts-per-user`).
/// 422 rather than 429: retrying the same request does not help until a
/// run ends, and asking for fewer hosts does, as with the read budgets.
pub(crate) fn check_host_limit(
    chosen: usize,
    busy: i64,
    limit: u64,
    requested_by: &str,
) -> Result<(), ServiceError> {
    let busy = busy.max(0).unsigned_abs();
    let total = busy.saturating_add(chosen as u64);
    if total <= limit {
        return Ok(());
    }
    Err(unprocessable(format!(
        "this run would profile {chosen} host(s) while the running runs of {requested_by} \
         profile {busy}: {total} is more than the limit of {limit} concurrent run hosts per \
         user (ODP_MAX_RUN_HOSTS_PER_USER); ask for fewer hosts or stop a run"
    )))
}

/// Starts one chosen host's member and says how it went.
async fn start_member(
    state: &AppState,
    run: Uuid,
    host: &str,
    start: ValidStart,
    by: &StartedBy,
) -> RunHost {
    let not_started = |reason: String, profile_id, blocked_by| RunHost {
        host: host.to_owned(),
        profile_id,
        started: false,
        reason: Some(reason),
        blocked_by,
    };
    match profiles::start(state, start, by, None).await {
        Ok(Inserted::Created(row) | Inserted::Replayed(row)) => RunHost {
            host: host.to_owned(),
            profile_id: Some(row.id),
            started: true,
            reason: None,
            blocked_by: None,
        },
        Ok(Inserted::Duplicate(live)) => not_started(
            format!(
                "the target already has a live profile {} (requested by {}, {})",
                live.id,
                live.requested_by,
                live.status.as_str()
            ),
            None,
            Some(live.id),
        ),
        Err(e) => {
            // A command the broker refused leaves its member recorded as
            // failed; any other error comes before the member is recorded.
            let failed = Runs::new(&state.pool)
                .members(run)
                .await
                .ok()
                .and_then(|members| members.into_iter().find(|m| m.host == host));
            let reason = match (&failed, &e) {
                (Some(_), ServiceError::Unavailable(message)) => {
                    format!("the broker refused the start command: {message}")
                }
                (_, ServiceError::Internal(message)) => {
                    tracing::error!(%run, %host, error = %message, "starting a run member failed");
                    "the start failed: internal error; see the api-server log".to_owned()
                }
                _ => format!("the start failed: {e}"),
            };
            not_started(reason, failed.map(|m| m.id), None)
        }
    }
}

/// The run `id` as stored, or 404.
pub(crate) async fn row(state: &AppState, id: Uuid) -> Result<RunRow, ServiceError> {
    Runs::new(&state.pool)
        .get(id)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no run {id}")))
}

/// The run `id` with its members, or 404.
pub(crate) async fn describe(state: &AppState, id: Uuid) -> Result<Run, ServiceError> {
    let row = row(state, id).await?;
    let runs = Runs::new(&state.pool);
    let members = runs.members(id).await?;
    let hosts = runs.hosts_of(&[id]).await?;
    view_with(row, &members, &hosts)
}

/// How many hosts' reasons a partial run's reason lists.
const REASONS_LISTED: usize = 5;

/// How a run whose members have all ended ends: `finished`, or `partial`
/// naming each host without a profile to show and why.
pub(crate) fn ending_of(members: &[RunMember]) -> (RunState, String) {
    let lacking: Vec<&RunMember> = members.iter().filter(|m| lacks_profile(m)).collect();
    if lacking.is_empty() {
        return (RunState::Finished, "every member ended".to_owned());
    }
    let mut reasons: Vec<String> = lacking
        .iter()
        .take(REASONS_LISTED)
        .map(|m| {
            format!(
                "{}: {}",
                m.host,
                m.reason.as_deref().unwrap_or(m.status.as_str())
            )
        })
        .collect();
    if lacking.len() > REASONS_LISTED {
        reasons.push(format!("and {} more", lacking.len() - REASONS_LISTED));
    }
    let reason = format!(
        "every member ended; {} of {} host(s) have no profile to show: {}",
        lacking.len(),
        members.len(),
        reasons.join("; ")
    );
    (RunState::Partial, reason)
}

/// A member that was not started, failed or expired.
fn lacks_profile(member: &RunMember) -> bool {
    matches!(
        member.status,
        ProfileStatus::Failed | ProfileStatus::Expired
    )
}

/// The newest runs, of `service` when given.
pub(crate) async fn list(
    state: &AppState,
    service: Option<&str>,
    limit: i64,
) -> Result<Vec<Run>, ServiceError> {
    let runs = Runs::new(&state.pool);
    let rows = runs.list(service, limit).await?;
    let ids: Vec<Uuid> = rows.iter().map(|row| row.id).collect();
    let members = runs.members_of(&ids).await?;
    let hosts = runs.hosts_of(&ids).await?;
    rows.into_iter()
        .map(|row| {
            let mine: Vec<ProfileRow> = members
                .iter()
                .filter(|m| m.run_id == Some(row.id))
                .cloned()
                .collect();
            let started: Vec<RunHostRow> = hosts
                .iter()
                .filter(|h| h.run_id == row.id)
                .cloned()
                .collect();
            view_with(row, &mine, &started)
        })
        .collect()
}

/// Stops every live member of the run and ends it as stopped.
pub(crate) async fn stop(
    state: &AppState,
    id: Uuid,
    requested_by: &str,
) -> Result<Run, ServiceError> {
    let current = row(state, id).await?;
    let reason = format!("stopped by {requested_by}");
    let stopped = Runs::new(&state.pool)
        .end(
            id,
            &odp_store::RunEnd {
                state: RunState::Stopped,
                reason: &reason,
                reached_epsilon: None,
                samples_used: None,
            },
        )
        .await?;
    if !stopped {
        // Ended before, or just now by its stop rule or its last member.
        let ended = row(state, id).await.map_or(current.status, |r| r.status);
        return Err(ServiceError::Conflict(format!(
            "run {id} has ended ({})",
            ended.as_str()
        )));
    }
    stop_members(state, id, requested_by).await?;
    describe(state, id).await
}

/// Asks every live member of run `id` to stop.
pub(crate) async fn stop_members(
    state: &AppState,
    id: Uuid,
    requested_by: &str,
) -> Result<(), ServiceError> {
    for member in Runs::new(&state.pool).members(id).await? {
        if member.status.is_terminal() {
            continue;
        }
        if let Err(e) = profiles::stop(state, &member, requested_by).await {
            tracing::warn!(run = %id, profile_id = %member.id, error = %e, "stopping a run member failed");
        }
    }
    Ok(())
}

/// The run as the API shows it, without its hosts' start records (a host
/// without a profile shows as not started).
pub(crate) fn view(row: RunRow, members: &[ProfileRow]) -> Result<Run, ServiceError> {
    view_with(row, members, &[])
}

/// The run as the API shows it: each chosen host's member, or why it has
/// none (`hosts`, the run's start records).
pub(crate) fn view_with(
    row: RunRow,
    members: &[ProfileRow],
    hosts: &[RunHostRow],
) -> Result<Run, ServiceError> {
    let asked: SelectionRequest = RunRow::decode(&row.selection.0, "selection")?;
    let selection: Selection = RunRow::decode(&row.chosen.0, "chosen")?;
    let stop_when: Option<StopRule> = row
        .stop_rule
        .as_ref()
        .map(|rule| RunRow::decode(&rule.0, "stop_rule"))
        .transpose()?;
    let starting = row.status == RunState::Running
        && Utc::now() - row.created_at < chrono::Duration::seconds(STARTING_SECS);
    let run_members = run_members(&selection, members, hosts, starting);
    let status = status_of(row.status, &run_members);
    let duration_ms = row.max_duration_ms.max(0) as f64;
    let saved_secs = match (row.status, row.ended_at) {
        (RunState::Precise, Some(ended)) => {
            let ran_ms = (ended - row.created_at).num_milliseconds().max(0) as f64;
            Some(((duration_ms - ran_ms) / 1000.0).max(0.0))
        }
        _ => None,
    };
    Ok(Run {
        id: row.id,
        service: row.service,
        status,
        status_reason: row.status_reason,
        hosts: asked.selection,
        stratify_by: asked.stratify_by,
        seed: asked.seed,
        selection,
        members: run_members,
        stop_when,
        duration_secs: (duration_ms / 1000.0) as u64,
        reached_epsilon: row.reached_epsilon,
        samples_used: row.samples_used,
        saved_secs,
        requested_by: row.requested_by,
        created_at: row.created_at,
        ended_at: row.ended_at,
    })
}

/// How long after its creation a running run's host with neither a start
/// record nor a profile counts as still being started.
const STARTING_SECS: i64 = 60;

/// One member per chosen host: its profile, or why it has none. `starting`:
/// the run was just created, and a host not yet recorded is still being
/// started (rather than lost).
fn run_members(
    selection: &Selection,
    members: &[ProfileRow],
    hosts: &[RunHostRow],
    starting: bool,
) -> Vec<RunMember> {
    selection
        .hosts
        .iter()
        .map(|host| {
            let profile = members.iter().find(|m| &m.host == host);
            let record = hosts.iter().map(|h| &h.outcome).find(|h| &h.host == host);
            member_of(host, profile, record, starting)
        })
        .collect()
}

/// One chosen host's member.
fn member_of(
    host: &str,
    profile: Option<&ProfileRow>,
    record: Option<&RunHost>,
    starting: bool,
) -> RunMember {
    let not_started = |reason: &str| format!("not started: {reason}");
    match (record, profile) {
        (Some(record), profile) if !record.started => RunMember {
            host: host.to_owned(),
            profile_id: profile.map(|p| p.id).or(record.profile_id),
            status: ProfileStatus::Failed,
            reason: Some(not_started(
                record.reason.as_deref().unwrap_or("no reason recorded"),
            )),
        },
        (_, Some(profile)) => RunMember {
            host: host.to_owned(),
            profile_id: Some(profile.id),
            status: profile.status,
            reason: profile.status_reason.clone().or_else(|| {
                matches!(
                    profile.status,
                    ProfileStatus::Failed | ProfileStatus::Expired
                )
                .then(|| profile.status.as_str().to_owned())
            }),
        },
        (None, None) if starting => RunMember {
            host: host.to_owned(),
            profile_id: None,
            status: ProfileStatus::Requested,
            reason: Some("being started".into()),
        },
        (_, None) => RunMember {
            host: host.to_owned(),
            profile_id: None,
            status: ProfileStatus::Failed,
            // Runs from before start records: the api-server logged why.
            reason: Some(not_started(
                "the target already had a live profile, or the start failed",
            )),
        },
    }
}

/// A run's status: how it ended, or where its members are.
pub(crate) fn status_of(state: RunState, members: &[RunMember]) -> RunStatus {
    let failed = members
        .iter()
        .any(|m| matches!(m.status, ProfileStatus::Failed | ProfileStatus::Expired));
    let live = |m: &&RunMember| !m.status.is_terminal();
    match state {
        RunState::Stopped => RunStatus::Stopped,
        RunState::Precise => RunStatus::Precise,
        RunState::Partial => RunStatus::Partial,
        _ if members.iter().any(|m| m.status == ProfileStatus::Running) => RunStatus::Running,
        _ if members.iter().filter(live).count() > 0 => RunStatus::Dispatching,
        _ if failed => RunStatus::Partial,
        _ => RunStatus::Finished,
    }
}

#[cfg(test)]
mod tests;
