//! Starting profiles: a start request checked into a [`ValidStart`], and
//! the one path every start takes, a user's or a schedule's (record it,
//! deploy an agent if the host has none, publish the signed command).

use odp_api_types::{DuplicateStart, ErrorCode, ErrorDetail, Profile, StartRequest};
use odp_core::command::{CommandAction, StartProfile};
use odp_core::cost::StartOptions;
use odp_core::{Snapshot, Target};
use odp_store::runtime::profile_runtime;
use odp_store::{
    read_coverage, Inserted, Labels, NewProfile, NewRequest, ProfileMode, ProfileRow,
    ProfileStatus, Profiles, Read, RequestKind,
};
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::service::start_options::start_options;
use crate::service_error::ServiceError;
use crate::validate::{validate_labels, validate_name};
use crate::views;
use crate::AppState;

pub(crate) const MAX_DURATION_SECS: u64 = 3600;
pub(crate) use odp_core::cost::MAX_FREQUENCY_HZ;
pub(crate) const DEFAULT_FREQUENCY_HZ: u32 = 99;

/// Who a start is for, and whether it may deploy an agent to a host that
/// has none (only callers who could deploy: admins and their schedules).
#[derive(Debug, Clone)]
pub(crate) struct StartedBy {
    pub subject: String,
    pub may_deploy: bool,
}

impl StartedBy {
    pub(crate) fn caller(caller: &Caller) -> StartedBy {
        StartedBy {
            subject: caller.subject.clone(),
            may_deploy: caller.role >= Role::Admin,
        }
    }
}

/// A start request that passed validation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ValidStart {
    pub host: String,
    pub service: String,
    pub target: Target,
    pub duration_secs: u64,
    pub frequency_hz: u32,
    pub window_secs: Option<u64>,
    pub labels: Labels,
    pub options: StartOptions,
    /// The run the profile is a member of (runs start their members here).
    pub run_id: Option<Uuid>,
}

impl TryFrom<StartRequest> for ValidStart {
    type Error = ServiceError;

    fn try_from(request: StartRequest) -> Result<ValidStart, ServiceError> {
        let invalid = |m: String| Err(ServiceError::Invalid(m));
        validate_name("host", &request.host)?;
        let target = target_of(&request)?;
        if !(1..=MAX_DURATION_SECS).contains(&request.duration_secs) {
            return invalid(format!(
                "`duration_secs` must be between 1 and {MAX_DURATION_SECS}"
            ));
        }
        let frequency_hz = request.frequency_hz.unwrap_or(DEFAULT_FREQUENCY_HZ);
        if !(1..=MAX_FREQUENCY_HZ).contains(&frequency_hz) {
            return invalid(format!(
                "`frequency_hz` must be between 1 and {MAX_FREQUENCY_HZ}"
            ));
        }
        if let Some(window) = request.window_secs {
            if !(1..=300).contains(&window) {
                return invalid("`window_secs` must be between 1 and 300".into());
            }
        }
        let service = match request.service {
            Some(service) => {
                validate_name("service", &service)?;
                service
            }
            None => match &target {
                Target::ProcessName(name) => name.clone(),
                Target::Pid(_) | Target::Imported(_) => request.host.clone(),
                // Many programs may match: the caller says which service
                // they make up rather than the API guessing from a pattern.
                Target::CommandLine(_) | Target::Cgroup(_) => {
                    return invalid(
                        "`service` is required when profiling by `cmdline` or `cgroup`".into(),
                    )
                }
            },
        };
        validate_labels(&request.labels)?;
        let options = start_options(request.options.unwrap_or_default(), frequency_hz)?;
        options
            .check_target(&target)
            .map_err(|e| ServiceError::Invalid(format!("options: {e}")))?;
        Ok(ValidStart {
            options,
            labels: request.labels,
            service,
            host: request.host,
            target,
            duration_secs: request.duration_secs,
            frequency_hz,
            window_secs: request.window_secs,
            run_id: None,
        })
    }
}

/// The one target field given, checked.
fn target_of(request: &StartRequest) -> Result<Target, ServiceError> {
    let given = [
        request.pid.map(Target::Pid),
        request.process_name.clone().map(Target::ProcessName),
        request.cmdline.clone().map(Target::CommandLine),
        request.cgroup.clone().map(Target::Cgroup),
    ];
    let fields = "`pid`, `process_name`, `cmdline` or `cgroup`";
    one_target(given.into_iter().flatten(), fields)
}

/// The one target of `given`, checked; `fields` names the fields it came
/// from, for the error.
pub(crate) fn one_target(
    mut given: impl Iterator<Item = Target>,
    fields: &str,
) -> Result<Target, ServiceError> {
    let invalid = |m: String| Err(ServiceError::Invalid(m));
    let (Some(target), None) = (given.next(), given.next()) else {
        return invalid(format!("give exactly one target: {fields}"));
    };
    match &target {
        Target::Pid(0) => return invalid("`pid` must be positive".into()),
        Target::ProcessName(name)
            if name.is_empty() || name.len() > 255 || name.contains(['/', '\0']) =>
        {
            return invalid("`process_name` must be 1 to 255 characters without `/`".into())
        }
        _ => {}
    }
    target
        .check()
        .map_err(|e| ServiceError::Invalid(e.to_string()))?;
    Ok(target)
}

/// Records a start request and publishes its command: the one path every
/// start takes, a user's or a schedule's. `Created` carries the profile
/// as dispatched; `Replayed` and `Duplicate` dispatch nothing.
pub(crate) async fn start(
    state: &AppState,
    valid: ValidStart,
    by: &StartedBy,
    idempotency_key: Option<String>,
) -> Result<Inserted, ServiceError> {
    let requested_by = by.subject.as_str();
    let id = Uuid::new_v4();
    let inserted = state
        .profiles
        .insert(&NewProfile {
            id,
            host: valid.host.clone(),
            service: valid.service.clone(),
            idempotency_key,
            target: valid.target.clone(),
            duration_ms: (valid.duration_secs * 1000) as i64,
            frequency_hz: valid.frequency_hz as i32,
            requested_by: requested_by.to_owned(),
            labels: valid.labels.clone(),
            mode: ProfileMode::of(valid.options.event),
            run_id: valid.run_id,
            options: valid.options.clone(),
        })
        .await?;
    match inserted {
        Inserted::Created(_) => {}
        other => return Ok(other),
    }
    if by.may_deploy {
        deploy_if_absent(state, &valid.host, requested_by).await;
    }
    let action = CommandAction::Start(StartProfile {
        profile_id: id,
        target: valid.target,
        duration_ms: valid.duration_secs * 1000,
        frequency_hz: valid.frequency_hz,
        window_ms: valid.window_secs.map(|s| s * 1000),
        options: valid.options,
    });
    let sent = state.dispatcher.send(&valid.host, action).await;
    if let Err(e) = sent {
        state
            .profiles
            .transition(
                id,
                ProfileStatus::Failed,
                Some("command could not be published"),
            )
            .await?;
        return Err(e);
    }
    state
        .profiles
        .transition(id, ProfileStatus::Dispatched, None)
        .await?;
    tracing::info!(profile_id = %id, host = %valid.host, by = %requested_by, "profile requested");
    Ok(Inserted::Created(get(&state.profiles, id).await?))
}

/// For a caller who may deploy, `start` implies `deploy`: with a deployer
/// configured and no live agent
/// on the host, one is deployed while the start command waits in Kafka
/// for it (until the command expires). The deploy is a request of its
/// own; its failure shows there, and the start then expires.
async fn deploy_if_absent(state: &AppState, host: &str, requested_by: &str) {
    if state.control.deployer_name().is_none() {
        return;
    }
    match state.control.host_is_live(host).await {
        Ok(true) => {}
        Ok(false) => match state.control.deploy(host, requested_by).await {
            Ok(_) => tracing::info!(%host, "no live agent: deploying one for the start"),
            Err(e) => tracing::warn!(%host, error = %e, "deploying for a start failed"),
        },
        Err(e) => tracing::warn!(%host, error = %e, "checking the host's agent failed"),
    }
}

/// What a start answers with: the profile (created now, or by an earlier
/// request with the same idempotency key), or the live profile of the same
/// target it would duplicate.
pub(crate) enum StartAnswer {
    Accepted(Profile),
    Duplicate(DuplicateStart),
}

impl From<Inserted> for StartAnswer {
    fn from(inserted: Inserted) -> StartAnswer {
        match inserted {
            Inserted::Created(row) | Inserted::Replayed(row) => {
                StartAnswer::Accepted(views::profile(row))
            }
            Inserted::Duplicate(row) => StartAnswer::Duplicate(duplicate(row)),
        }
    }
}

/// Names the live profile the client can follow instead.
fn duplicate(row: ProfileRow) -> DuplicateStart {
    let message = format!(
        "{} already has a live profile on {}: {}",
        row.service, row.host, row.id
    );
    DuplicateStart {
        error: ErrorDetail {
            code: ErrorCode::Conflict,
            message,
        },
        profile: views::profile(row),
    }
}

/// A profile by id; 404 when there is none.
pub(crate) async fn get(profiles: &Profiles, id: Uuid) -> Result<ProfileRow, ServiceError> {
    profiles
        .get(id)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no profile {id}")))
}

/// Asks the profile's agent to stop it early (the last partial window
/// is flushed); 409 when it has ended already.
pub(crate) async fn stop(
    state: &AppState,
    row: &ProfileRow,
    requested_by: &str,
) -> Result<(), ServiceError> {
    let id = row.id;
    if row.status.is_terminal() {
        return Err(ServiceError::Conflict(format!(
            "profile {id} is already {}",
            row.status
        )));
    }
    let new = NewRequest {
        kind: RequestKind::Stop,
        host: row.host.clone(),
        profile_id: Some(id),
        mode: None,
        requested_by: requested_by.to_owned(),
    };
    let send = state
        .dispatcher
        .send(&row.host, CommandAction::Stop { profile_id: id });
    state.control.record_command(new, send).await?;
    tracing::info!(profile_id = %id, by = %requested_by, "stop requested");
    Ok(())
}

/// A profile with what its agent reported about the target.
pub(crate) async fn describe(state: &AppState, id: Uuid) -> Result<Profile, ServiceError> {
    let profile = get(&state.profiles, id).await?;
    let runtime = profile_runtime(&state.pool, id).await?;
    let coverage = read_coverage(&state.pool, &Read::profile(id)).await?;
    Ok(Profile {
        runtime,
        coverage: Some(coverage.of(profile.event)),
        ..views::profile(profile)
    })
}

/// Stores `snapshot`, parsed from another tool's file in `format`, as a
/// finished profile of `service` that `requested_by` imported.
pub(crate) async fn import(
    state: &AppState,
    snapshot: &Snapshot,
    service: &str,
    format: &str,
    requested_by: &str,
) -> Result<Profile, ServiceError> {
    let row =
        odp_store::import_profile(&state.pool, snapshot, service, format, requested_by).await?;
    Ok(views::profile(row))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: serde_json::Value) -> Result<ValidStart, ServiceError> {
        ValidStart::try_from(serde_json::from_value::<StartRequest>(json).unwrap())
    }

    #[test]
    fn accepts_a_pid_or_a_process_name() {
        let v =
            request(serde_json::json!({"host": "h-1", "pid": 42, "duration_secs": 10})).unwrap();
        assert_eq!(v.target, Target::Pid(42));
        assert_eq!(
            v.service, "h-1",
            "pid targets default to the host as service"
        );
        assert_eq!(v.frequency_hz, DEFAULT_FREQUENCY_HZ);
        let v = request(serde_json::json!({"host": "h", "process_name": "demo", "duration_secs": 1, "frequency_hz": 999})).unwrap();
        assert_eq!(v.target, Target::ProcessName("demo".into()));
        assert_eq!(v.service, "demo");
        let v = request(
            serde_json::json!({"host": "h", "pid": 7, "service": "checkout", "duration_secs": 1}),
        )
        .unwrap();
        assert_eq!(v.service, "checkout");
    }

    #[test]
    fn accepts_a_cmdline_regex_or_a_cgroup_with_a_service() {
        let v = request(
            serde_json::json!({"host": "h", "cmdline": "java .*checkout",
            "service": "checkout", "duration_secs": 1}),
        )
        .unwrap();
        assert_eq!(v.target, Target::CommandLine("java .*checkout".into()));
        for cgroup in ["/system.slice/docker-abc.scope", "4f1d2c3b4a5e"] {
            let v = request(serde_json::json!({"host": "h", "cgroup": cgroup,
                "service": "s", "duration_secs": 1}))
            .unwrap();
            assert_eq!(v.target, Target::Cgroup(cgroup.into()));
        }
    }

    #[test]
    fn children_are_followed_for_a_pid_only() {
        let v = request(
            serde_json::json!({"host": "h", "pid": 42, "duration_secs": 5,
            "options": {"include_children": true}}),
        )
        .unwrap();
        assert!(v.options.include_children);
        let err = request(serde_json::json!({"host": "h", "process_name": "sh",
            "duration_secs": 5, "options": {"include_children": true}}))
        .unwrap_err();
        let ServiceError::Invalid(message) = err else {
            panic!("{err:?}")
        };
        assert!(
            message.starts_with("options: include_children applies to pid targets only"),
            "{message}"
        );
        let v = request(serde_json::json!({"host": "h", "process_name": "sh",
            "duration_secs": 5, "options": {"include_children": false}}))
        .unwrap();
        assert!(!v.options.include_children);
    }

    #[test]
    fn explains_a_regex_that_does_not_compile() {
        let err = request(serde_json::json!({"host": "h", "cmdline": "java (",
            "service": "s", "duration_secs": 1}))
        .unwrap_err();
        let ServiceError::Invalid(message) = err else {
            panic!("{err:?}")
        };
        assert!(
            message.contains("cmdline") && message.contains("unclosed"),
            "{message}"
        );
    }

    #[test]
    fn refuses_out_of_range_and_ambiguous_requests() {
        for bad in [
            serde_json::json!({"host": "h", "duration_secs": 10}),
            serde_json::json!({"host": "h", "pid": 1, "process_name": "x", "duration_secs": 10}),
            serde_json::json!({"host": "h", "pid": 0, "duration_secs": 10}),
            serde_json::json!({"host": "", "pid": 1, "duration_secs": 10}),
            serde_json::json!({"host": "a b", "pid": 1, "duration_secs": 10}),
            serde_json::json!({"host": "h", "pid": 1, "duration_secs": 0}),
            serde_json::json!({"host": "h", "pid": 1, "duration_secs": 3601}),
            serde_json::json!({"host": "h", "pid": 1, "duration_secs": 5, "frequency_hz": 0}),
            serde_json::json!({"host": "h", "pid": 1, "duration_secs": 5, "frequency_hz": 10001}),
            serde_json::json!({"host": "h", "process_name": "a/b", "duration_secs": 5}),
            serde_json::json!({"host": "h", "pid": 1, "duration_secs": 5, "window_secs": 0}),
            serde_json::json!({"host": "h", "pid": 1, "duration_secs": 5, "service": "a b"}),
            serde_json::json!({"host": "h", "pid": 1, "cmdline": "x", "service": "s", "duration_secs": 5}),
            serde_json::json!({"host": "h", "cmdline": "x", "cgroup": "/a", "service": "s", "duration_secs": 5}),
            serde_json::json!({"host": "h", "cmdline": "x", "duration_secs": 5}),
            serde_json::json!({"host": "h", "cgroup": "/a", "duration_secs": 5}),
            serde_json::json!({"host": "h", "cmdline": "", "service": "s", "duration_secs": 5}),
            serde_json::json!({"host": "h", "cmdline": "a".repeat(1001), "service": "s", "duration_secs": 5}),
            serde_json::json!({"host": "h", "cgroup": "system.slice", "service": "s", "duration_secs": 5}),
            serde_json::json!({"host": "h", "cgroup": "abc123", "service": "s", "duration_secs": 5}),
            serde_json::json!({"host": "h", "cgroup": "/a/../b", "service": "s", "duration_secs": 5}),
        ] {
            assert!(
                matches!(request(bad.clone()), Err(ServiceError::Invalid(_))),
                "{bad}"
            );
        }
    }
}
