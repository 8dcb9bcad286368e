//! Runs: a request checked, the hosts chosen from the live ones running
//! the service, one member profile started per host, and the run as the
//! API shows it (its status derived from its members').

use std::collections::BTreeMap;
use std::time::Duration;

use odp_api_types::{CreateRunRequest, Run, RunMember, RunStatus, StartRequest};
use odp_core::run::{select_hosts, Host, Selection, SelectionRequest, StopRule};
use odp_core::{ProfileStatus, Target};
use odp_store::{Inserted, NewRun, ProfileRow, RunRow, RunState, Runs, Services};
use uuid::Uuid;

use crate::error::ApiError;
use crate::service::profiles::{self, ValidStart};
use crate::service::scope::StartedBy;
use crate::AppState;

fn unprocessable(message: String) -> ApiError {
    ApiError::Unprocessable(message)
}

/// The member profile every chosen host starts, before its host is set:
/// checked as an ordinary start of the service's target.
fn member_start(
    request: &CreateRunRequest,
    target: &Target,
    run: Uuid,
) -> Result<ValidStart, ApiError> {
    let (process_name, cmdline, cgroup) = match target.clone() {
        Target::ProcessName(name) => (Some(name), None, None),
        Target::CommandLine(regex) => (None, Some(regex), None),
        Target::Cgroup(path) => (None, None, Some(path)),
        other => return Err(ApiError::Internal(format!("a service's target is {other}"))),
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

/// Starts the run `request` asks for: checks it, chooses its hosts,
/// records it and starts one member per host.
pub(crate) async fn create(
    state: &AppState,
    request: CreateRunRequest,
    by: &StartedBy,
) -> Result<Run, ApiError> {
    let requested_by = by.subject.as_str();
    if let Some(rule) = &request.stop_when {
        rule.validate().map_err(|e| unprocessable(e.to_string()))?;
    }
    let service = Services::new(&state.pool)
        .get(&request.service)
        .await?
        .ok_or_else(|| {
            unprocessable(format!(
                "no service {:?} is defined (POST /api/v1/services)",
                request.service
            ))
        })?;
    let id = Uuid::new_v4();
    let template = member_start(&request, &service.target, id)?;
    let live_within = Duration::from_secs(state.control.live_within_secs().max(0).unsigned_abs());
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
        selection: request.hosts,
        stratify_by: request.stratify_by.clone(),
        seed: request
            .seed
            .unwrap_or_else(|| Uuid::new_v4().as_u64_pair().0),
        strict: request.strict,
    };
    let selection = select_hosts(&live, &asked).map_err(|e| unprocessable(e.to_string()))?;
    let runs = Runs::new(&state.pool);
    runs.create(&NewRun {
        id,
        service: service.name.clone(),
        selection: &asked,
        chosen: &selection,
        stop_rule: request.stop_when,
        max_duration_ms: (request.duration_secs * 1000) as i64,
        requested_by: requested_by.to_owned(),
    })
    .await?;
    for host in &selection.hosts {
        let start = ValidStart {
            host: host.clone(),
            ..template.clone()
        };
        match profiles::start(state, start, by, None).await {
            Ok(Inserted::Created(_)) => {}
            Ok(Inserted::Duplicate(live)) | Ok(Inserted::Replayed(live)) => tracing::info!(
                run = %id, %host, live = %live.id,
                "run member not started: the target already has a live profile"
            ),
            Err(e) => tracing::warn!(run = %id, %host, error = %e, "run member not started"),
        }
    }
    tracing::info!(run = %id, service = %service.name, hosts = selection.hosts.len(),
        eligible = selection.eligible, by = %requested_by, "run started");
    describe(state, id).await
}

/// The run `id` as stored, or 404.
pub(crate) async fn row(state: &AppState, id: Uuid) -> Result<RunRow, ApiError> {
    Runs::new(&state.pool)
        .get(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no run {id}")))
}

/// The run `id` with its members, or 404.
pub(crate) async fn describe(state: &AppState, id: Uuid) -> Result<Run, ApiError> {
    let row = row(state, id).await?;
    let members = Runs::new(&state.pool).members(id).await?;
    view(row, &members)
}

/// The newest runs, of `service` when given.
pub(crate) async fn list(
    state: &AppState,
    service: Option<&str>,
    limit: i64,
) -> Result<Vec<Run>, ApiError> {
    let runs = Runs::new(&state.pool);
    let rows = runs.list(service, limit).await?;
    let ids: Vec<Uuid> = rows.iter().map(|row| row.id).collect();
    let members = runs.members_of(&ids).await?;
    rows.into_iter()
        .map(|row| {
            let mine: Vec<ProfileRow> = members
                .iter()
                .filter(|m| m.run_id == Some(row.id))
                .cloned()
                .collect();
            view(row, &mine)
        })
        .collect()
}

/// Stops every live member of the run and ends it as stopped.
pub(crate) async fn stop(state: &AppState, id: Uuid, requested_by: &str) -> Result<Run, ApiError> {
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
        return Err(ApiError::Conflict(format!(
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
) -> Result<(), ApiError> {
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

/// The run as the API shows it.
pub(crate) fn view(row: RunRow, members: &[ProfileRow]) -> Result<Run, ApiError> {
    let asked: SelectionRequest = RunRow::decode(&row.selection.0, "selection")?;
    let selection: Selection = RunRow::decode(&row.chosen.0, "chosen")?;
    let stop_when: Option<StopRule> = row
        .stop_rule
        .as_ref()
        .map(|rule| RunRow::decode(&rule.0, "stop_rule"))
        .transpose()?;
    let run_members = run_members(&selection, members);
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

/// One member per chosen host: its profile, or why it has none.
fn run_members(selection: &Selection, members: &[ProfileRow]) -> Vec<RunMember> {
    selection
        .hosts
        .iter()
        .map(|host| match members.iter().find(|m| &m.host == host) {
            Some(profile) => RunMember {
                host: host.clone(),
                profile_id: Some(profile.id),
                status: profile.status,
                reason: profile.status_reason.clone(),
            },
            None => RunMember {
                host: host.clone(),
                profile_id: None,
                status: ProfileStatus::Failed,
                // Its start found the target already profiled, or failed
                // before recording a profile (the api-server logged which).
                reason: Some(
                    "not started: the target already had a live profile, or the start failed"
                        .into(),
                ),
            },
        })
        .collect()
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
        _ if members.iter().any(|m| m.status == ProfileStatus::Running) => RunStatus::Running,
        _ if members.iter().filter(live).count() > 0 => RunStatus::Dispatching,
        _ if failed => RunStatus::Partial,
        _ => RunStatus::Finished,
    }
}
