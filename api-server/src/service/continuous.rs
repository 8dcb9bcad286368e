//! Continuous profiles: requests checked against the operator's limits
//! into configurations, kept in the store; the agents learn of them from
//! the service sync ([`crate::control::services_sync`]).

use odp_api_types::{ContinuousProfile, CreateContinuousRequest, UpdateContinuousRequest};
use odp_core::continuous::{
    DEFAULT_CPU_BUDGET_PPM, DEFAULT_FREQUENCY_HZ, MAX_ASSIGNED_HOSTS, PPM, SEGMENT_SECS,
};
use odp_core::EventKind;
use odp_store::{
    ContinuousPatch, ContinuousProfiles, ContinuousRow, Database, NewContinuous, Services,
};
use uuid::Uuid;

use crate::service_error::ServiceError;
use crate::validate::validate_name;

/// The operator's bounds on continuous profiles (`serve` flags).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct ContinuousLimits {
    /// Highest rate a continuous profile may ask for.
    #[arg(long = "continuous-max-hz", env = "ODP_CONTINUOUS_MAX_HZ", default_value_t = 100,
        value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_hz: u32,
    /// Most CPU a continuous profile may let each host's agent spend, in
    /// percent of one core.
    #[arg(
        long = "continuous-max-budget-percent",
        env = "ODP_CONTINUOUS_MAX_BUDGET_PERCENT",
        default_value_t = 2.0
    )]
    pub max_budget_percent: f64,
}

impl Default for ContinuousLimits {
    fn default() -> Self {
        ContinuousLimits {
            max_hz: 100,
            max_budget_percent: 2.0,
        }
    }
}

impl ContinuousLimits {
    fn frequency(&self, hz: u32) -> Result<u32, ServiceError> {
        if (1..=self.max_hz).contains(&hz) {
            Ok(hz)
        } else {
            Err(ServiceError::Invalid(format!(
                "`frequency_hz` {hz} is outside this server's limits for continuous profiles: \
                 1 to {} Hz",
                self.max_hz
            )))
        }
    }

    /// A budget in percent as millionths of a core.
    fn budget(&self, percent: f64) -> Result<u32, ServiceError> {
        let ppm = (percent * f64::from(PPM) / 100.0).round();
        if percent.is_finite() && percent > 0.0 && percent <= self.max_budget_percent && ppm >= 1.0
        {
            Ok(ppm as u32)
        } else {
            Err(ServiceError::Invalid(format!(
                "`cpu_budget_percent` {percent} is outside this server's limits for continuous \
                 profiles: above 0 and at most {} % of one core",
                self.max_budget_percent
            )))
        }
    }
}

/// The events whose cost the budget bounds by lowering the rate.
fn event(event: EventKind) -> Result<EventKind, ServiceError> {
    match event {
        EventKind::CpuClock | EventKind::Wall => Ok(event),
        other => Err(ServiceError::Invalid(format!(
            "`event` {other} cannot be profiled continuously: use `cpu-clock` or `wall`"
        ))),
    }
}

/// A host list checked, sorted and without repeats; empty is every host.
pub(crate) fn hosts(hosts: Vec<String>) -> Result<Option<Vec<String>>, ServiceError> {
    if hosts.len() > MAX_ASSIGNED_HOSTS {
        return Err(ServiceError::Invalid(format!(
            "`hosts` names {} hosts, at most {MAX_ASSIGNED_HOSTS}",
            hosts.len()
        )));
    }
    for host in &hosts {
        validate_name("hosts", host)?;
    }
    let mut hosts = hosts;
    hosts.sort_unstable();
    hosts.dedup();
    Ok((!hosts.is_empty()).then_some(hosts))
}

fn new_continuous(
    request: CreateContinuousRequest,
    limits: &ContinuousLimits,
    created_by: &str,
) -> Result<NewContinuous, ServiceError> {
    validate_name("service", &request.service)?;
    let default_percent = f64::from(DEFAULT_CPU_BUDGET_PPM) * 100.0 / f64::from(PPM);
    Ok(NewContinuous {
        event: event(request.event.unwrap_or(EventKind::CpuClock))?,
        frequency_hz: limits.frequency(request.frequency_hz.unwrap_or(DEFAULT_FREQUENCY_HZ))?,
        cpu_budget_ppm: limits.budget(request.cpu_budget_percent.unwrap_or(default_percent))?,
        hosts: hosts(request.hosts.unwrap_or_default())?,
        service: request.service,
        created_by: created_by.to_owned(),
    })
}

fn patch(
    request: UpdateContinuousRequest,
    limits: &ContinuousLimits,
) -> Result<ContinuousPatch, ServiceError> {
    Ok(ContinuousPatch {
        event: request.event.map(event).transpose()?,
        frequency_hz: request
            .frequency_hz
            .map(|hz| limits.frequency(hz))
            .transpose()?,
        cpu_budget_ppm: request
            .cpu_budget_percent
            .map(|percent| limits.budget(percent))
            .transpose()?,
        hosts: request.hosts.map(hosts).transpose()?,
        enabled: request.enabled,
    })
}

fn view(row: ContinuousRow) -> ContinuousProfile {
    ContinuousProfile {
        id: row.id,
        service: row.service,
        event: row.event,
        frequency_hz: row.frequency_hz.unsigned_abs(),
        cpu_budget_percent: f64::from(row.cpu_budget_ppm) * 100.0 / f64::from(PPM),
        hosts: row.hosts,
        enabled: row.enabled,
        segment_secs: SEGMENT_SECS,
        created_by: row.created_by,
        updated_by: row.updated_by,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

fn not_found(id: Uuid) -> ServiceError {
    ServiceError::NotFound(format!("no continuous profile {id}"))
}

/// Refuses a second continuous profile of the same processes: the
/// service's, or another service's with the same target.
async fn check_target_free(db: &Database, service: &str) -> Result<(), ServiceError> {
    let targets: std::collections::HashMap<String, odp_core::Target> = Services::new(db.clone())
        .list()
        .await?
        .into_iter()
        .map(|s| (s.service.name, s.service.target))
        .collect();
    let target = targets.get(service).ok_or_else(|| {
        ServiceError::Invalid(format!(
            "no service {service:?}: define it first (POST /api/v1/services)"
        ))
    })?;
    for other in ContinuousProfiles::new(db.clone()).list().await? {
        if other.service == service {
            return Err(ServiceError::Conflict(format!(
                "service {service:?} is already profiled continuously ({}); change that one \
                 instead",
                other.id
            )));
        }
        if targets.get(&other.service) == Some(target) {
            return Err(ServiceError::Conflict(format!(
                "service {:?} profiles the same processes ({target}) continuously ({})",
                other.service, other.id
            )));
        }
    }
    Ok(())
}

pub(crate) async fn create(
    db: &Database,
    request: CreateContinuousRequest,
    limits: &ContinuousLimits,
    created_by: &str,
) -> Result<ContinuousProfile, ServiceError> {
    let new = new_continuous(request, limits, created_by)?;
    check_target_free(db, &new.service).await?;
    Ok(view(
        ContinuousProfiles::new(db.clone()).create(&new).await?,
    ))
}

pub(crate) async fn list(db: &Database) -> Result<Vec<ContinuousProfile>, ServiceError> {
    Ok(ContinuousProfiles::new(db.clone())
        .list()
        .await?
        .into_iter()
        .map(view)
        .collect())
}

pub(crate) async fn get(db: &Database, id: Uuid) -> Result<ContinuousProfile, ServiceError> {
    ContinuousProfiles::new(db.clone())
        .get(id)
        .await?
        .map(view)
        .ok_or_else(|| not_found(id))
}

pub(crate) async fn update(
    db: &Database,
    id: Uuid,
    request: UpdateContinuousRequest,
    limits: &ContinuousLimits,
    updated_by: &str,
) -> Result<ContinuousProfile, ServiceError> {
    let patch = patch(request, limits)?;
    ContinuousProfiles::new(db.clone())
        .update(id, &patch, updated_by)
        .await?
        .map(view)
        .ok_or_else(|| not_found(id))
}

pub(crate) async fn delete(db: &Database, id: Uuid) -> Result<(), ServiceError> {
    if ContinuousProfiles::new(db.clone()).delete(id).await? {
        Ok(())
    } else {
        Err(not_found(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(json: serde_json::Value) -> Result<NewContinuous, ServiceError> {
        new_continuous(
            serde_json::from_value(json).unwrap(),
            &ContinuousLimits::default(),
            "alice",
        )
    }

    fn refusal(result: Result<NewContinuous, ServiceError>) -> String {
        match result {
            Err(ServiceError::Invalid(message)) => message,
            other => panic!("not a 422: {other:?}"),
        }
    }

    #[test]
    fn defaults_are_cpu_at_19_hz_within_half_a_percent_of_a_core() {
        let new = create(serde_json::json!({"service": "checkout"})).unwrap();
        assert_eq!(
            (new.event, new.frequency_hz, new.cpu_budget_ppm, new.hosts),
            (EventKind::CpuClock, 19, 5_000, None)
        );
    }

    #[test]
    fn hosts_are_sorted_once_each_and_an_empty_list_is_every_host() {
        let new = create(serde_json::json!({"service": "s", "hosts": ["web-2", "web-1", "web-2"]}))
            .unwrap();
        assert_eq!(new.hosts, Some(vec!["web-1".into(), "web-2".into()]));
        let all = create(serde_json::json!({"service": "s", "hosts": []})).unwrap();
        assert_eq!(all.hosts, None);
        let bad = refusal(create(
            serde_json::json!({"service": "s", "hosts": ["a b"]}),
        ));
        assert!(bad.contains("hosts"), "{bad}");
    }

    #[test]
    fn limits_are_named_in_the_refusal() {
        let fast = refusal(create(
            serde_json::json!({"service": "s", "frequency_hz": 1000}),
        ));
        assert!(fast.contains("1 to 100 Hz"), "{fast}");
        for percent in [0.0, -1.0, 2.5] {
            let greedy = refusal(create(
                serde_json::json!({"service": "s", "cpu_budget_percent": percent}),
            ));
            assert!(greedy.contains("at most 2 %"), "{greedy}");
        }
        let event = refusal(create(
            serde_json::json!({"service": "s", "event": "off-cpu"}),
        ));
        assert!(event.contains("cpu-clock"), "{event}");
        let name = refusal(create(serde_json::json!({"service": "no such/service"})));
        assert!(name.contains("service"), "{name}");
    }

    #[test]
    fn a_percent_reads_back_as_given() {
        let new = create(serde_json::json!({"service": "s", "cpu_budget_percent": 0.25})).unwrap();
        assert_eq!(new.cpu_budget_ppm, 2_500);
        let limits = ContinuousLimits::default();
        let patched = patch(
            UpdateContinuousRequest {
                cpu_budget_percent: Some(1.5),
                frequency_hz: Some(49),
                hosts: Some(Vec::new()),
                ..UpdateContinuousRequest::default()
            },
            &limits,
        )
        .unwrap();
        assert_eq!(
            (patched.cpu_budget_ppm, patched.frequency_hz, patched.hosts),
            (Some(15_000), Some(49), Some(None))
        );
    }
}
