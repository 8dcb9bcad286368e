//! Schedules: a create request checked into the schedule to store (its
//! target checked as a start's, its cron expression and zone parsed, its
//! first run computed), a change checked against the stored schedule, and
//! the stored schedules as the API shows them.

use chrono::{DateTime, Utc};
use odp_api_types::{
    CreateRunRequest, CreateRunScheduleRequest, CreateScheduleRequest, NewScheduleRequest,
    Schedule, ScheduleWithRuns, StartRequest, UpdateScheduleRequest,
};
use odp_core::run::{select_hosts, SelectionError, SelectionRequest};
use odp_core::Target;
use odp_store::{Database, NewSchedule, ProfileMode, SchedulePatch, Schedules};
use uuid::Uuid;

use crate::cron_schedule::CronSchedule;
use crate::service::profiles::{ValidStart, MAX_DURATION_SECS, MAX_FREQUENCY_HZ};
use crate::service::runs::defined_service;
use crate::service_error::ServiceError;
use crate::validate::validate_name;
use crate::views;

/// How many runs [`describe`] shows, newest first.
const RUNS_SHOWN: i64 = 50;

/// Stores the schedule `body` asks for, created `by` an admin: of one
/// host's target, or of a run of a defined service.
pub(crate) async fn create(
    db: &Database,
    body: serde_json::Value,
    by: &str,
) -> Result<Schedule, ServiceError> {
    let new = match parse_create(body)? {
        NewScheduleRequest::Host(request) => new_schedule(request, by, Utc::now())?,
        NewScheduleRequest::Run(request) => {
            validate_name("service", &request.service)?;
            let service = defined_service(db, &request.service).await?;
            new_run_schedule(request, &service.target, by, Utc::now())?
        }
    };
    let row = Schedules::new(db.clone()).create(&new).await?;
    Ok(views::schedule(row))
}

/// Every schedule.
pub(crate) async fn list(db: &Database) -> Result<Vec<Schedule>, ServiceError> {
    let schedules = Schedules::new(db.clone()).list().await?;
    Ok(schedules.into_iter().map(views::schedule).collect())
}

/// Schedule `id` with its latest runs.
pub(crate) async fn describe(db: &Database, id: Uuid) -> Result<ScheduleWithRuns, ServiceError> {
    let schedules = Schedules::new(db.clone());
    let schedule = schedules.get(id).await?.ok_or_else(|| no_schedule(id))?;
    let runs = schedules.runs(id, RUNS_SHOWN).await?;
    Ok(ScheduleWithRuns {
        schedule: views::schedule(schedule),
        runs: runs.into_iter().map(views::schedule_run).collect(),
    })
}

/// Schedule `id` changed as `request` asks; absent fields stay as they are.
pub(crate) async fn update(
    db: &Database,
    id: Uuid,
    request: UpdateScheduleRequest,
) -> Result<Schedule, ServiceError> {
    let schedules = Schedules::new(db.clone());
    let current = schedules.get(id).await?.ok_or_else(|| no_schedule(id))?;
    let (patch, next_run_at) = schedule_patch(request, &current.schedule, Utc::now())?;
    let row = schedules
        .update(id, &patch, next_run_at)
        .await?
        .ok_or_else(|| no_schedule(id))?;
    Ok(views::schedule(row))
}

/// Deletes schedule `id`.
pub(crate) async fn delete(db: &Database, id: Uuid) -> Result<(), ServiceError> {
    if !Schedules::new(db.clone()).delete(id).await? {
        return Err(no_schedule(id));
    }
    Ok(())
}

fn no_schedule(id: Uuid) -> ServiceError {
    ServiceError::NotFound(format!("no schedule {id}"))
}

fn unprocessable(message: String) -> ServiceError {
    ServiceError::Invalid(message)
}

/// The next occurrence after `now` of an enabled schedule; a schedule that
/// never fires again is refused.
fn next_run(
    spec: &CronSchedule,
    enabled: bool,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, ServiceError> {
    let next = spec
        .next_after(now)
        .ok_or_else(|| unprocessable("`cron` never fires again".into()))?;
    Ok(enabled.then_some(next))
}

/// A create request checked into the schedule to store.
fn new_schedule(
    request: CreateScheduleRequest,
    created_by: &str,
    now: DateTime<Utc>,
) -> Result<NewSchedule, ServiceError> {
    validate_name("name", &request.name)?;
    let start = ValidStart::try_from(StartRequest {
        host: request.host,
        service: request.service,
        pid: request.pid,
        process_name: request.process_name,
        cmdline: request.cmdline,
        cgroup: request.cgroup,
        duration_secs: request.duration_secs,
        frequency_hz: request.frequency_hz,
        window_secs: request.window_secs,
        // Each run is labelled with the schedule's name when it fires.
        labels: Default::default(),
        options: request.options,
    })?;
    let spec = CronSchedule::parse(&request.cron, &request.timezone, false)
        .map_err(|e| unprocessable(e.to_string()))?;
    Ok(NewSchedule {
        id: Uuid::new_v4(),
        name: request.name,
        service: start.service,
        host: start.host,
        target: start.target,
        duration_secs: start.duration_secs as i32,
        frequency_hz: start.frequency_hz as i32,
        window_secs: start.window_secs.map(|s| s as i32),
        next_run_at: next_run(&spec, request.enabled, now)?,
        cron: request
            .cron
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        timezone: request.timezone,
        enabled: request.enabled,
        created_by: created_by.to_owned(),
        mode: ProfileMode::of(start.options.event),
        options: start.options,
        run_spec: None,
    })
}

/// A create body read as a host schedule, or, with `run`, a run schedule:
/// each with its own unknown-field errors.
fn parse_create(body: serde_json::Value) -> Result<NewScheduleRequest, ServiceError> {
    let invalid = |e: serde_json::Error| unprocessable(format!("invalid request body: {e}"));
    if body.get("run").is_some() {
        serde_json::from_value(body)
            .map(NewScheduleRequest::Run)
            .map_err(invalid)
    } else {
        serde_json::from_value(body)
            .map(NewScheduleRequest::Host)
            .map_err(invalid)
    }
}

/// The most labels a run stratifies by.
const MAX_STRATIFY_BY: usize = 4;

/// A run schedule's request checked into the schedule to store, its
/// members checked as a run's of the service (whose target is
/// `service_target` now): `host` is `*`, the run chooses its hosts each
/// time it fires.
fn new_run_schedule(
    request: CreateRunScheduleRequest,
    service_target: &Target,
    created_by: &str,
    now: DateTime<Utc>,
) -> Result<NewSchedule, ServiceError> {
    validate_name("name", &request.name)?;
    validate_name("service", &request.service)?;
    let run = &request.run;
    if let Some(rule) = &run.stop_when {
        rule.validate()
            .map_err(|e| unprocessable(format!("run.stop_when: {e}")))?;
    }
    if run.stratify_by.len() > MAX_STRATIFY_BY {
        return Err(unprocessable(format!(
            "`run.stratify_by` names at most {MAX_STRATIFY_BY} labels"
        )));
    }
    for (i, label) in run.stratify_by.iter().enumerate() {
        validate_name("run.stratify_by", label)?;
        if run.stratify_by[..i].contains(label) {
            return Err(unprocessable(format!(
                "`run.stratify_by` names the label `{label}` more than once"
            )));
        }
    }
    // The selection's own bounds (a count of 0, a percent outside
    // (0, 100]); which hosts are live is known only when it fires.
    let asked = SelectionRequest {
        selection: run.hosts,
        stratify_by: vec![],
        seed: 0,
        strict: run.strict,
    };
    match select_hosts(&[], &asked) {
        Err(SelectionError::NoHosts) | Ok(_) => {}
        Err(e) => return Err(unprocessable(format!("run.hosts: {e}"))),
    }
    let member = crate::service::runs::member_start(
        &CreateRunRequest {
            service: request.service.clone(),
            hosts: run.hosts,
            stratify_by: run.stratify_by.clone(),
            seed: run.seed,
            strict: run.strict,
            duration_secs: request.duration_secs,
            frequency_hz: request.frequency_hz,
            window_secs: request.window_secs,
            stop_when: run.stop_when,
            options: request.options,
        },
        service_target,
        Uuid::nil(),
    )?;
    let spec = CronSchedule::parse(&request.cron, &request.timezone, false)
        .map_err(|e| unprocessable(e.to_string()))?;
    Ok(NewSchedule {
        id: Uuid::new_v4(),
        name: request.name,
        service: member.service,
        host: "*".into(),
        target: member.target,
        duration_secs: member.duration_secs as i32,
        frequency_hz: member.frequency_hz as i32,
        window_secs: member.window_secs.map(|s| s as i32),
        next_run_at: next_run(&spec, request.enabled, now)?,
        cron: request
            .cron
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        timezone: request.timezone,
        enabled: request.enabled,
        created_by: created_by.to_owned(),
        mode: ProfileMode::of(member.options.event),
        options: member.options,
        run_spec: Some(request.run),
    })
}

/// The patch and the schedule's next run once it applies to `current`.
fn schedule_patch(
    request: UpdateScheduleRequest,
    current: &NewSchedule,
    now: DateTime<Utc>,
) -> Result<(SchedulePatch, Option<DateTime<Utc>>), ServiceError> {
    if let Some(d) = request.duration_secs {
        if !(1..=MAX_DURATION_SECS).contains(&d) {
            return Err(unprocessable(format!(
                "`duration_secs` must be between 1 and {MAX_DURATION_SECS}"
            )));
        }
    }
    if let Some(f) = request.frequency_hz {
        if !(1..=MAX_FREQUENCY_HZ).contains(&f) {
            return Err(unprocessable(format!(
                "`frequency_hz` must be between 1 and {MAX_FREQUENCY_HZ}"
            )));
        }
        // FDA's bounds are checked against the frequency.
        current
            .options
            .check(f)
            .map_err(|e| unprocessable(format!("options: {e}")))?;
    }
    let cron = request
        .cron
        .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "));
    let spec = CronSchedule::parse(
        cron.as_deref().unwrap_or(&current.cron),
        request.timezone.as_deref().unwrap_or(&current.timezone),
        // An unchanged stored expression stays acceptable.
        cron.is_none() && request.timezone.is_none(),
    )
    .map_err(|e| unprocessable(e.to_string()))?;
    let next = next_run(&spec, request.enabled.unwrap_or(current.enabled), now)?;
    let patch = SchedulePatch {
        enabled: request.enabled,
        cron,
        timezone: request.timezone,
        duration_secs: request.duration_secs.map(|d| d as i32),
        frequency_hz: request.frequency_hz.map(|f| f as i32),
    };
    Ok((patch, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(json: serde_json::Value) -> Result<NewSchedule, ServiceError> {
        new_schedule(
            serde_json::from_value::<CreateScheduleRequest>(json).unwrap(),
            "admin",
            Utc::now(),
        )
    }

    #[test]
    fn a_valid_schedule_gets_defaults_and_its_next_run() {
        let now = Utc::now();
        let s = create(serde_json::json!({
            "name": "nightly-demo", "host": "h1", "process_name": "demo",
            "duration_secs": 30, "cron": "0  3 * * *"
        }))
        .unwrap();
        assert_eq!(s.timezone, "UTC");
        assert!(s.enabled);
        assert_eq!(s.cron, "0 3 * * *");
        assert_eq!(s.service, "demo");
        assert_eq!(s.target, Target::ProcessName("demo".into()));
        let next = s.next_run_at.unwrap();
        assert!(next > now && next - now <= chrono::Duration::days(1));
        let disabled = create(serde_json::json!({
            "name": "off", "host": "h1", "pid": 3, "duration_secs": 30,
            "cron": "0 3 * * *", "enabled": false
        }))
        .unwrap();
        assert_eq!(disabled.next_run_at, None);
        let by_cgroup = create(serde_json::json!({
            "name": "pods", "host": "h1", "cgroup": "/kubepods/burstable", "service": "k",
            "duration_secs": 30, "cron": "0 3 * * *"
        }))
        .unwrap();
        assert_eq!(
            by_cgroup.target,
            Target::Cgroup("/kubepods/burstable".into())
        );
    }

    #[test]
    fn bad_schedules_are_unprocessable() {
        let base = serde_json::json!({
            "name": "n", "host": "h1", "process_name": "demo", "duration_secs": 30,
            "cron": "*/5 * * * *", "timezone": "Europe/Paris"
        });
        assert!(create(base.clone()).is_ok());
        for (field, value) in [
            ("name", serde_json::json!("")),
            ("name", serde_json::json!("has space")),
            ("cron", serde_json::json!("* * *")),
            ("cron", serde_json::json!("*/5 * * * * *")),
            ("cron", serde_json::json!("0 0 0 1 1 * 2001")),
            ("timezone", serde_json::json!("Nowhere/Special")),
            ("duration_secs", serde_json::json!(0)),
            ("frequency_hz", serde_json::json!(20_000)),
            ("host", serde_json::json!("")),
            // A second target besides `process_name`.
            ("cmdline", serde_json::json!("demo")),
        ] {
            let mut body = base.clone();
            body[field] = value.clone();
            assert!(
                matches!(create(body), Err(ServiceError::Invalid(_))),
                "{field} = {value}"
            );
        }
    }

    fn create_run(json: serde_json::Value) -> Result<NewSchedule, ServiceError> {
        let NewScheduleRequest::Run(request) = parse_create(json)? else {
            panic!("a run schedule")
        };
        new_run_schedule(
            request,
            &Target::ProcessName("cpu-split".into()),
            "admin",
            Utc::now(),
        )
    }

    #[test]
    fn a_run_schedule_keeps_its_run_and_profiles_the_service() {
        let s = create_run(serde_json::json!({
            "name": "hourly-demo", "service": "demo", "duration_secs": 30,
            "cron": "0 * * * *",
            "run": {"hosts": {"count": 2}, "stratify_by": ["zone"],
                    "stop_when": {"top": 3, "max_stderr": 0.02}}
        }))
        .unwrap();
        assert_eq!((s.host.as_str(), s.service.as_str()), ("*", "demo"));
        assert_eq!(s.target, Target::ProcessName("cpu-split".into()));
        let run = s.run_spec.unwrap();
        assert_eq!(run.hosts, odp_core::run::HostSelection::Count(2));
        assert_eq!(run.stratify_by, ["zone"]);
        assert_eq!(run.stop_when.unwrap().top, 3);
        assert!(s.next_run_at.is_some());
        // Without `run`, a body is a host schedule's.
        assert!(matches!(
            parse_create(serde_json::json!({
                "name": "n", "host": "h1", "process_name": "demo",
                "duration_secs": 30, "cron": "0 3 * * *"
            })),
            Ok(NewScheduleRequest::Host(_))
        ));
    }

    #[test]
    fn bad_run_schedules_are_unprocessable() {
        let base = serde_json::json!({
            "name": "n", "service": "demo", "duration_secs": 30, "cron": "0 * * * *",
            "run": {"hosts": "all"}
        });
        assert!(create_run(base.clone()).is_ok());
        for (path, value) in [
            (&["run", "hosts"][..], serde_json::json!({"count": 0})),
            (&["run", "hosts"], serde_json::json!({"percent": 0})),
            (&["run", "hosts"], serde_json::json!({"percent": 101})),
            (
                &["run", "stop_when"],
                serde_json::json!({"top": 0, "max_stderr": 0.01}),
            ),
            (
                &["run", "stop_when"],
                serde_json::json!({"top": 3, "max_stderr": 0}),
            ),
            (&["run", "stratify_by"], serde_json::json!(["zone", "zone"])),
            (
                &["run", "stratify_by"],
                serde_json::json!(["a", "b", "c", "d", "e"]),
            ),
            (&["run", "surprise"], serde_json::json!(1)),
            (&["host"], serde_json::json!("h1")),
            (&["process_name"], serde_json::json!("demo")),
            (&["service"], serde_json::json!("")),
            (&["name"], serde_json::json!("two words")),
            (&["duration_secs"], serde_json::json!(0)),
            (&["frequency_hz"], serde_json::json!(20_000)),
            (&["cron"], serde_json::json!("* * * * * *")),
            (&["timezone"], serde_json::json!("Nowhere/Special")),
        ] {
            let mut body = base.clone();
            match path {
                [field] => body[*field] = value.clone(),
                [outer, inner] => body[*outer][*inner] = value.clone(),
                _ => unreachable!(),
            }
            assert!(
                matches!(create_run(body), Err(ServiceError::Invalid(_))),
                "{path:?} = {value}"
            );
        }
    }
}
