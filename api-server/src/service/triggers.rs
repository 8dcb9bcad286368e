//! Triggers ([`odp_core::trigger`]): requests checked into triggers, kept
//! in the store and synced to agents with the services
//! ([`crate::control::services_sync`]); and what the api-server does with
//! an agent's signed report that one fired ([`fire`]): claim it in the
//! ledger, and start the profile the cooldown and the cap allow, as an
//! ordinary profile labelled with the trigger and the observed value.

use odp_api_types::{
    CreateTriggerRequest, FiringOutcome, ProfileOptions, Trigger, TriggerFiring,
    UpdateTriggerRequest,
};
use odp_core::cost::StartOptions;
use odp_core::trigger::{TriggerCondition, MAX_COOLDOWN_SECS, MIN_COOLDOWN_SECS};
use odp_core::EventKind;
use odp_store::{
    Claim, Configuration as _, Database, FiringReport, FiringRow, Inserted, NewTrigger, Services,
    Settled, TriggerPatch, TriggerRow, Triggers,
};
use uuid::Uuid;

use crate::service::continuous::hosts;
use crate::service::profiles::{self, StartedBy, ValidStart, MAX_FREQUENCY_HZ};
use crate::service::start_options::start_options;
use crate::service_error::ServiceError;
use crate::validate::validate_name;
use crate::AppState;

/// Longest profile a trigger may start: it answers "what is it doing
/// now", and the next firing can take another.
pub(crate) const MAX_DURATION_SECS: u32 = 600;
/// Most profiles of one trigger running at once that may be asked for.
pub(crate) const MAX_CONCURRENT: u32 = 1000;
const DEFAULT_DURATION_SECS: u32 = 30;
const DEFAULT_FREQUENCY_HZ: u32 = 99;
const DEFAULT_COOLDOWN_SECS: u32 = 600;
const DEFAULT_MAX_CONCURRENT: u32 = 3;
/// The labels of a triggered profile.
pub(crate) const TRIGGER_LABEL: &str = "trigger";
pub(crate) const OBSERVED_LABEL: &str = "trigger_observed";

fn unprocessable(message: String) -> ServiceError {
    ServiceError::Invalid(message)
}

fn in_range(field: &str, value: u32, low: u32, high: u32) -> Result<u32, ServiceError> {
    if (low..=high).contains(&value) {
        Ok(value)
    } else {
        Err(unprocessable(format!(
            "`{field}` {value} is outside {low}..={high}"
        )))
    }
}

fn condition(condition: TriggerCondition) -> Result<TriggerCondition, ServiceError> {
    condition
        .check()
        .map(|()| condition)
        .map_err(|m| unprocessable(format!("`condition`: {m}")))
}

fn duration(secs: u64) -> Result<u32, ServiceError> {
    let secs = u32::try_from(secs).unwrap_or(u32::MAX);
    in_range("duration_secs", secs, 1, MAX_DURATION_SECS)
}

/// The event and rate a triggered profile starts with, checked as any
/// start's options are.
fn profile_event(event: EventKind, frequency_hz: u32) -> Result<(EventKind, u32), ServiceError> {
    let frequency_hz = in_range("frequency_hz", frequency_hz, 1, MAX_FREQUENCY_HZ)?;
    triggered_options(event, frequency_hz)?;
    Ok((event, frequency_hz))
}

/// A triggered profile's start options: its event, checked with its rate
/// as any start's options are.
fn triggered_options(event: EventKind, frequency_hz: u32) -> Result<StartOptions, ServiceError> {
    start_options(
        ProfileOptions {
            event: Some(event.as_str().to_owned()),
            ..ProfileOptions::default()
        },
        frequency_hz,
    )
}

fn new_trigger(
    request: CreateTriggerRequest,
    created_by: &str,
) -> Result<NewTrigger, ServiceError> {
    validate_name("service", &request.service)?;
    let (event, frequency_hz) = profile_event(
        request.event.unwrap_or(EventKind::CpuClock),
        request.frequency_hz.unwrap_or(DEFAULT_FREQUENCY_HZ),
    )?;
    Ok(NewTrigger {
        condition: condition(request.condition)?,
        duration_secs: duration(
            request
                .duration_secs
                .unwrap_or(DEFAULT_DURATION_SECS.into()),
        )?,
        event,
        frequency_hz,
        cooldown_secs: in_range(
            "cooldown_secs",
            request.cooldown_secs.unwrap_or(DEFAULT_COOLDOWN_SECS),
            MIN_COOLDOWN_SECS,
            MAX_COOLDOWN_SECS,
        )?,
        max_concurrent: in_range(
            "max_concurrent",
            request.max_concurrent.unwrap_or(DEFAULT_MAX_CONCURRENT),
            1,
            MAX_CONCURRENT,
        )?,
        hosts: hosts(request.hosts.unwrap_or_default())?,
        service: request.service,
        created_by: created_by.to_owned(),
    })
}

/// A change checked; an event or rate is checked against the trigger's
/// other one as it will be.
fn patch(
    request: UpdateTriggerRequest,
    current: &TriggerRow,
) -> Result<TriggerPatch, ServiceError> {
    let (event, frequency_hz) = match (request.event, request.frequency_hz) {
        (None, None) => (None, None),
        (event, hz) => {
            let (event, hz) = profile_event(
                event.unwrap_or(current.event),
                hz.unwrap_or(current.frequency_hz.unsigned_abs()),
            )?;
            (Some(event), Some(hz))
        }
    };
    Ok(TriggerPatch {
        condition: request.condition.map(condition).transpose()?,
        duration_secs: request.duration_secs.map(duration).transpose()?,
        event,
        frequency_hz,
        cooldown_secs: request
            .cooldown_secs
            .map(|s| in_range("cooldown_secs", s, MIN_COOLDOWN_SECS, MAX_COOLDOWN_SECS))
            .transpose()?,
        max_concurrent: request
            .max_concurrent
            .map(|n| in_range("max_concurrent", n, 1, MAX_CONCURRENT))
            .transpose()?,
        hosts: request.hosts.map(hosts).transpose()?,
        enabled: request.enabled,
    })
}

fn view(row: TriggerRow) -> Trigger {
    Trigger {
        id: row.id,
        service: row.service,
        condition: row.condition,
        duration_secs: row.duration_secs.unsigned_abs().into(),
        event: row.event,
        frequency_hz: row.frequency_hz.unsigned_abs(),
        cooldown_secs: row.cooldown_secs.unsigned_abs(),
        max_concurrent: row.max_concurrent.unsigned_abs(),
        hosts: row.hosts,
        enabled: row.enabled,
        fired: row.fired.unsigned_abs(),
        held_back: row.held_back.unsigned_abs(),
        last_fired_at: row.last_fired_at,
        held_back_since: row.held_back_since,
        held_back_reason: row.held_back_reason,
        created_by: row.created_by,
        updated_by: row.updated_by,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

fn firing_view(row: FiringRow, unit: &str) -> TriggerFiring {
    let outcome = match row.outcome.as_str() {
        "started" => FiringOutcome::Started,
        "cooldown" => FiringOutcome::Cooldown,
        "capped" => FiringOutcome::Capped,
        "busy" => FiringOutcome::Busy,
        _ => FiringOutcome::Failed,
    };
    TriggerFiring {
        id: row.id,
        host: row.host,
        observed: row.observed,
        unit: unit.to_owned(),
        held_since: chrono::DateTime::from_timestamp_millis(row.held_since_ms)
            .unwrap_or(row.fired_at),
        fired_at: row.fired_at,
        outcome,
        reason: row.reason,
        profile_id: row.profile_id,
    }
}

fn not_found(id: Uuid) -> ServiceError {
    ServiceError::NotFound(format!("no trigger {id}"))
}

async fn row(db: &Database, id: Uuid) -> Result<TriggerRow, ServiceError> {
    Triggers::new(db.clone())
        .get(id)
        .await?
        .ok_or_else(|| not_found(id))
}

pub(crate) async fn create(
    db: &Database,
    request: CreateTriggerRequest,
    created_by: &str,
) -> Result<Trigger, ServiceError> {
    let new = new_trigger(request, created_by)?;
    if Services::new(db.clone()).get(&new.service).await?.is_none() {
        return Err(unprocessable(format!(
            "no service {:?}: define it first (POST /api/v1/services)",
            new.service
        )));
    }
    Ok(view(Triggers::new(db.clone()).create(&new).await?))
}

pub(crate) async fn list(db: &Database) -> Result<Vec<Trigger>, ServiceError> {
    Ok(Triggers::new(db.clone())
        .list()
        .await?
        .into_iter()
        .map(view)
        .collect())
}

pub(crate) async fn get(db: &Database, id: Uuid) -> Result<Trigger, ServiceError> {
    row(db, id).await.map(view)
}

pub(crate) async fn update(
    db: &Database,
    id: Uuid,
    request: UpdateTriggerRequest,
    updated_by: &str,
) -> Result<Trigger, ServiceError> {
    let patch = patch(request, &row(db, id).await?)?;
    Triggers::new(db.clone())
        .update(id, &patch, updated_by)
        .await?
        .map(view)
        .ok_or_else(|| not_found(id))
}

pub(crate) async fn delete(db: &Database, id: Uuid) -> Result<(), ServiceError> {
    if Triggers::new(db.clone()).delete(id).await? {
        Ok(())
    } else {
        Err(not_found(id))
    }
}

/// The latest firings of a trigger, newest first.
pub(crate) async fn firings(
    db: &Database,
    id: Uuid,
    limit: u32,
) -> Result<Vec<TriggerFiring>, ServiceError> {
    let trigger = row(db, id).await?;
    let unit = trigger.condition.unit();
    Ok(Triggers::new(db.clone())
        .firings(id, i64::from(limit.clamp(1, 1000)))
        .await?
        .into_iter()
        .map(|f| firing_view(f, unit))
        .collect())
}

/// Acts on a verified report that `report.trigger_id` fired on
/// `report.host`: claims it, and starts the profile the cooldown and the
/// cap allow. Returns the profile started, if any.
pub(crate) async fn fire(
    state: &AppState,
    report: &FiringReport,
) -> Result<Option<Uuid>, ServiceError> {
    let triggers = Triggers::new(state.pool.clone());
    let (firing, trigger) = match triggers.claim(report).await? {
        Claim::Start { firing, trigger } => (firing, trigger),
        Claim::HeldBack { why, first, .. } => {
            if first {
                tracing::warn!(trigger_id = %report.trigger_id, host = %report.host,
                    reason = why.as_str(),
                    "a trigger fired but started no profile; further firings held back are \
                     counted on the trigger, not logged");
            }
            return Ok(None);
        }
        Claim::Seen | Claim::Unknown | Claim::Disabled => return Ok(None),
    };
    if !trigger.assignment().covers(&report.host) {
        let settled = Settled::Failed("the host does not watch this trigger");
        triggers.settle(firing, settled).await?;
        return Ok(None);
    }
    let outcome = start_triggered(state, &trigger, report, firing).await;
    let (busy, failed);
    let settled = match &outcome {
        Ok(Inserted::Created(row) | Inserted::Replayed(row)) => Settled::Started(row.id),
        Ok(Inserted::Duplicate(row)) => {
            busy = format!("the target was being profiled already ({})", row.id);
            Settled::Busy {
                profile: row.id,
                reason: &busy,
            }
        }
        Err(e) => {
            failed = e.to_string();
            Settled::Failed(&failed)
        }
    };
    triggers.settle(firing, settled).await?;
    tracing::info!(trigger_id = %trigger.id, service = %trigger.service, host = %report.host,
        observed = report.observed, unit = trigger.condition.unit(), outcome = ?settled,
        "trigger fired");
    Ok(match settled {
        Settled::Started(profile) => Some(profile),
        _ => None,
    })
}

/// Starts the triggered profile through the one start path, with the
/// firing as its idempotency key (a retried firing starts nothing twice).
async fn start_triggered(
    state: &AppState,
    trigger: &TriggerRow,
    report: &FiringReport,
    firing: Uuid,
) -> Result<Inserted, ServiceError> {
    let target = Services::new(state.pool.clone())
        .get(&trigger.service)
        .await?
        .ok_or_else(|| unprocessable(format!("service {:?} is gone", trigger.service)))?
        .service
        .target;
    let mut labels = odp_store::Labels::new();
    labels.insert(TRIGGER_LABEL.to_owned(), trigger.id.to_string());
    labels.insert(
        OBSERVED_LABEL.to_owned(),
        format!("{:.1} {}", report.observed, trigger.condition.unit()),
    );
    let frequency_hz = trigger.frequency_hz.unsigned_abs();
    let valid = ValidStart {
        host: report.host.clone(),
        service: trigger.service.clone(),
        target,
        duration_secs: trigger.duration_secs.unsigned_abs().into(),
        frequency_hz,
        window_secs: None,
        labels,
        options: triggered_options(trigger.event, frequency_hz)?,
        run_id: None,
    };
    let by = StartedBy {
        subject: format!("trigger {}", trigger.id),
        may_deploy: false,
    };
    profiles::start(state, valid, &by, Some(format!("trigger-firing-{firing}"))).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(json: serde_json::Value) -> Result<NewTrigger, ServiceError> {
        new_trigger(serde_json::from_value(json).unwrap(), "alice")
    }

    fn refusal(result: Result<NewTrigger, ServiceError>) -> String {
        match result {
            Err(ServiceError::Invalid(message)) => message,
            other => panic!("not a 422: {other:?}"),
        }
    }

    const HOT: &str = r#"{"kind": "cpu_above", "percent": 80, "for_secs": 30}"#;

    fn hot() -> serde_json::Value {
        serde_json::from_str(HOT).unwrap()
    }

    #[test]
    fn defaults_are_a_30_s_cpu_profile_ten_minutes_apart_three_at_once() {
        let new = create(serde_json::json!({"service": "checkout", "condition": hot()})).unwrap();
        assert_eq!(
            (
                new.duration_secs,
                new.event,
                new.frequency_hz,
                new.cooldown_secs,
                new.max_concurrent,
                new.hosts
            ),
            (30, EventKind::CpuClock, 99, 600, 3, None)
        );
    }

    #[test]
    fn each_bad_value_is_named() {
        let cases = [
            (
                serde_json::json!({"service": "s", "condition": {"kind": "cpu_above", "percent": 0, "for_secs": 30}}),
                "threshold",
            ),
            (
                serde_json::json!({"service": "s", "condition": {"kind": "cpu_above", "percent": 80, "for_secs": 0}}),
                "for_secs",
            ),
            (
                serde_json::json!({"service": "s", "condition": hot(), "cooldown_secs": 1}),
                "cooldown_secs",
            ),
            (
                serde_json::json!({"service": "s", "condition": hot(), "max_concurrent": 0}),
                "max_concurrent",
            ),
            (
                serde_json::json!({"service": "s", "condition": hot(), "duration_secs": 601}),
                "duration_secs",
            ),
            (
                serde_json::json!({"service": "s", "condition": hot(), "frequency_hz": 0}),
                "frequency_hz",
            ),
            (
                serde_json::json!({"service": "s", "condition": hot(), "hosts": ["a b"]}),
                "hosts",
            ),
            (
                serde_json::json!({"service": "no such/service", "condition": hot()}),
                "service",
            ),
        ];
        for (json, field) in cases {
            let message = refusal(create(json.clone()));
            assert!(message.contains(field), "{json}: {message}");
        }
    }
}
