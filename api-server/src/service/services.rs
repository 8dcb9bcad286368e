//! Services: requests checked into definitions, the definitions kept in
//! the store, and the live hosts that run each. Routes call these and
//! nothing else of the store.

use std::time::Duration;

use odp_api_types::{
    CreateServiceRequest, Service, ServiceHost, ServiceHostsResponse, UpdateServiceRequest,
};
use odp_core::Target;
use odp_store::{Database, NewService, ServicePatch, ServiceRow, Services};

use crate::service::profiles::one_target;
use crate::service_error::ServiceError;
use crate::validate::validate_name;

/// The fields a service's target may come from: a pid names one process
/// on one host, never a service.
const TARGET_FIELDS: &str = "`process_name`, `cmdline` or `cgroup`";

/// The target among a request's fields, checked; `None` when none is given.
fn target_of(
    process_name: Option<String>,
    cmdline: Option<String>,
    cgroup: Option<String>,
) -> Result<Option<Target>, ServiceError> {
    let given: Vec<Target> = [
        process_name.map(Target::ProcessName),
        cmdline.map(Target::CommandLine),
        cgroup.map(Target::Cgroup),
    ]
    .into_iter()
    .flatten()
    .collect();
    if given.is_empty() {
        return Ok(None);
    }
    one_target(given.into_iter(), TARGET_FIELDS).map(Some)
}

/// Free text of at most `max` characters; empty means none.
fn optional_text(
    what: &str,
    value: Option<String>,
    max: usize,
) -> Result<Option<String>, ServiceError> {
    match value {
        Some(text) if text.chars().count() > max => Err(ServiceError::Invalid(format!(
            "`{what}` must be at most {max} characters"
        ))),
        Some(text) if text.trim().is_empty() => Ok(None),
        other => Ok(other),
    }
}

/// A create request checked into the service to define.
fn new_service(
    request: CreateServiceRequest,
    created_by: &str,
) -> Result<NewService, ServiceError> {
    validate_name("name", &request.name)?;
    let target =
        target_of(request.process_name, request.cmdline, request.cgroup)?.ok_or_else(|| {
            ServiceError::Invalid(format!("give exactly one target: {TARGET_FIELDS}"))
        })?;
    Ok(NewService {
        name: request.name,
        target,
        owner_team: optional_text("owner_team", request.owner_team, 255)?,
        description: optional_text("description", request.description, 1000)?,
        created_by: created_by.to_owned(),
    })
}

/// A change request checked into the patch to apply.
fn service_patch(request: UpdateServiceRequest) -> Result<ServicePatch, ServiceError> {
    let clear_or_set = |what, value: Option<String>, max| {
        value
            .map(|text| optional_text(what, Some(text), max))
            .transpose()
    };
    Ok(ServicePatch {
        target: target_of(request.process_name, request.cmdline, request.cgroup)?,
        owner_team: clear_or_set("owner_team", request.owner_team, 255)?,
        description: clear_or_set("description", request.description, 1000)?,
    })
}

fn view(row: ServiceRow) -> Service {
    let service = row.service;
    Service {
        name: service.name,
        target: service.target,
        owner_team: service.owner_team,
        description: service.description,
        created_by: service.created_by,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

fn no_service(name: &str) -> ServiceError {
    ServiceError::NotFound(format!("no service {name:?}"))
}

/// Defines the service `request` asks for.
pub(crate) async fn create(
    db: &Database,
    request: CreateServiceRequest,
    created_by: &str,
) -> Result<Service, ServiceError> {
    let new = new_service(request, created_by)?;
    Ok(view(Services::new(db).create(&new).await?))
}

/// Every service, by name.
pub(crate) async fn list(db: &Database) -> Result<Vec<Service>, ServiceError> {
    Ok(Services::new(db)
        .list()
        .await?
        .into_iter()
        .map(view)
        .collect())
}

/// Applies the change `request` asks for to `name`.
pub(crate) async fn update(
    db: &Database,
    name: &str,
    request: UpdateServiceRequest,
) -> Result<Service, ServiceError> {
    let patch = service_patch(request)?;
    let row = Services::new(db).update(name, &patch).await?;
    row.map(view).ok_or_else(|| no_service(name))
}

/// Deletes `name`.
pub(crate) async fn delete(db: &Database, name: &str) -> Result<(), ServiceError> {
    if Services::new(db).delete(name).await? {
        Ok(())
    } else {
        Err(no_service(name))
    }
}

/// The service `name`, or 404.
pub(crate) async fn get(db: &Database, name: &str) -> Result<Service, ServiceError> {
    get_row(db, name).await.map(view)
}

async fn get_row(db: &Database, name: &str) -> Result<ServiceRow, ServiceError> {
    Services::new(db)
        .get(name)
        .await?
        .ok_or_else(|| no_service(name))
}

/// The live hosts running `name`: their agents heartbeated within
/// `live_within` and reported a process of its target.
pub(crate) async fn hosts(
    db: &Database,
    name: &str,
    live_within: Duration,
) -> Result<ServiceHostsResponse, ServiceError> {
    let service = get_row(db, name).await?;
    let hosts = Services::new(db)
        .hosts_running(name, live_within)
        .await?
        .into_iter()
        .map(|h| ServiceHost {
            host: h.host,
            agent_id: h.agent_id,
            labels: h.labels,
            last_seen: h.last_seen,
        })
        .collect();
    Ok(ServiceHostsResponse {
        service: service.service.name,
        target: service.service.target,
        live_within_secs: live_within.as_secs(),
        hosts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(json: serde_json::Value) -> Result<NewService, ServiceError> {
        new_service(serde_json::from_value(json).unwrap(), "alice")
    }

    #[test]
    fn a_service_has_a_name_and_one_target_that_is_not_a_pid() {
        let s = create(serde_json::json!({"name": "checkout", "process_name": "java"})).unwrap();
        assert_eq!(s.target, Target::ProcessName("java".into()));
        let none = create(serde_json::json!({"name": "checkout"})).unwrap_err();
        assert!(
            none.to_string()
                .contains("`process_name`, `cmdline` or `cgroup`"),
            "{none}"
        );
        let two = create(serde_json::json!({"name": "c", "process_name": "a", "cgroup": "/x"}));
        assert!(two.is_err());
        let pid: Result<CreateServiceRequest, _> =
            serde_json::from_value(serde_json::json!({"name": "c", "pid": 1}));
        assert!(pid.is_err(), "a pid is not a field of a service");
    }

    #[test]
    fn bad_names_regexes_and_long_texts_are_refused() {
        let name = create(serde_json::json!({"name": "a b", "process_name": "x"})).unwrap_err();
        assert!(name.to_string().contains("`name`"), "{name}");
        let regex = create(serde_json::json!({"name": "a", "cmdline": "("})).unwrap_err();
        assert!(matches!(regex, ServiceError::Invalid(_)), "{regex}");
        let long = "x".repeat(256);
        let team =
            create(serde_json::json!({"name": "a", "process_name": "x", "owner_team": long}))
                .unwrap_err();
        assert!(team.to_string().contains("`owner_team`"), "{team}");
    }

    #[test]
    fn a_patch_replaces_what_it_gives_and_an_empty_text_clears() {
        let patch = service_patch(
            serde_json::from_value(serde_json::json!({"cgroup": "/svc", "owner_team": ""}))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(patch.target, Some(Target::Cgroup("/svc".into())));
        assert_eq!(patch.owner_team, Some(None));
        assert_eq!(patch.description, None);
    }
}
