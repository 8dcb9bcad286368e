//! Profiling schedules: admins create, change and delete them; viewers
//! list and read them with their recent runs.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use chrono::{DateTime, Utc};
use odp_store::{mode_of, NewSchedule, SchedulePatch, ScheduleRow, ScheduleRunRow, Schedules};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::cron_schedule::CronSchedule;
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath};
use crate::openapi::{schemas, CommonErrors, NotFound};
use crate::service::profiles::{StartRequest, MAX_DURATION_SECS, MAX_FREQUENCY_HZ};
use crate::service::start_options::ProfileOptions;
use crate::validate::validate_name;
use crate::AppState;

/// How many runs `GET /api/v1/schedules/{id}` shows, newest first.
const RUNS_SHOWN: i64 = 50;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(describe, update, remove))
}

/// `POST /api/v1/schedules`: the target as for a start (one of `pid`,
/// `process_name`, `cmdline` or `cgroup`), and when to profile it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateScheduleRequest {
    #[schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    pub name: String,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    pub service: Option<String>,
    #[schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    pub host: String,
    #[serde(default)]
    #[schema(minimum = 1)]
    pub pid: Option<u32>,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 255)]
    pub process_name: Option<String>,
    /// A regex over the full command line (see the start request).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 1000)]
    pub cmdline: Option<String>,
    /// A cgroup path or container id (see the start request).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 4096)]
    pub cgroup: Option<String>,
    #[schema(minimum = 1, maximum = 3600)]
    pub duration_secs: u64,
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10000)]
    pub frequency_hz: Option<u32>,
    #[serde(default)]
    #[schema(minimum = 1, maximum = 300)]
    pub window_secs: Option<u64>,
    /// Five fields (minute hour day-of-month month day-of-week), or six
    /// with seconds first.
    pub cron: String,
    /// An IANA time zone the cron expression is read in; UTC when absent.
    #[serde(default = "utc")]
    pub timezone: String,
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// Plugin, event and cost control of every run (see the start request).
    #[serde(default)]
    pub options: Option<ProfileOptions>,
}

fn utc() -> String {
    "UTC".into()
}

fn enabled() -> bool {
    true
}

/// `PATCH /api/v1/schedules/{id}`: absent fields stay as they are.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateScheduleRequest {
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub cron: Option<String>,
    #[serde(default)]
    pub timezone: Option<String>,
    #[serde(default)]
    #[schema(minimum = 1, maximum = 3600)]
    pub duration_secs: Option<u64>,
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10000)]
    pub frequency_hz: Option<u32>,
}

/// A schedule with its latest runs.
#[derive(Debug, Serialize)]
pub(crate) struct ScheduleDetail {
    #[serde(flatten)]
    pub schedule: ScheduleRow,
    pub runs: Vec<RunView>,
}

#[derive(Debug, Serialize, ToSchema)]
struct SchedulesResponse {
    #[schema(value_type = Vec<schemas::Schedule>)]
    schedules: Vec<ScheduleRow>,
}

/// One firing of a schedule.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RunView {
    pub scheduled_for: DateTime<Utc>,
    pub fired_at: DateTime<Utc>,
    pub outcome: String,
    pub profile_id: Option<Uuid>,
    pub detail: Option<String>,
}

impl From<ScheduleRunRow> for RunView {
    fn from(run: ScheduleRunRow) -> Self {
        RunView {
            scheduled_for: run.scheduled_for,
            fired_at: run.fired_at,
            outcome: run.outcome,
            profile_id: run.profile_id,
            detail: run.detail,
        }
    }
}

fn unprocessable(message: String) -> ApiError {
    ApiError::Unprocessable(message)
}

/// The next occurrence after `now` of an enabled schedule; a schedule that
/// never fires again is refused.
fn next_run(
    spec: &CronSchedule,
    enabled: bool,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, ApiError> {
    let next = spec
        .next_after(now)
        .ok_or_else(|| unprocessable("`cron` never fires again".into()))?;
    Ok(enabled.then_some(next))
}

impl CreateScheduleRequest {
    fn validate(self, created_by: &str, now: DateTime<Utc>) -> Result<NewSchedule, ApiError> {
        validate_name("name", &self.name)?;
        let start = StartRequest {
            host: self.host,
            service: self.service,
            pid: self.pid,
            process_name: self.process_name,
            cmdline: self.cmdline,
            cgroup: self.cgroup,
            duration_secs: self.duration_secs,
            frequency_hz: self.frequency_hz,
            window_secs: self.window_secs,
            // Each run is labelled with the schedule's name when it fires.
            labels: Default::default(),
            options: self.options,
        }
        .validate()?;
        let spec = CronSchedule::parse(&self.cron, &self.timezone, false).map_err(unprocessable)?;
        Ok(NewSchedule {
            id: Uuid::new_v4(),
            name: self.name,
            service: start.service,
            host: start.host,
            target: start.target,
            duration_secs: start.duration_secs as i32,
            frequency_hz: start.frequency_hz as i32,
            window_secs: start.window_secs.map(|s| s as i32),
            next_run_at: next_run(&spec, self.enabled, now)?,
            cron: self.cron.split_whitespace().collect::<Vec<_>>().join(" "),
            timezone: self.timezone,
            enabled: self.enabled,
            created_by: created_by.to_owned(),
            mode: mode_of(start.options.event).to_owned(),
            options: start.options,
        })
    }
}

impl UpdateScheduleRequest {
    /// The patch and the schedule's next run once it applies to `current`.
    fn validate(
        self,
        current: &ScheduleRow,
        now: DateTime<Utc>,
    ) -> Result<(SchedulePatch, Option<DateTime<Utc>>), ApiError> {
        if let Some(d) = self.duration_secs {
            if !(1..=MAX_DURATION_SECS).contains(&d) {
                return Err(unprocessable(format!(
                    "`duration_secs` must be between 1 and {MAX_DURATION_SECS}"
                )));
            }
        }
        if let Some(f) = self.frequency_hz {
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
        let cron = self
            .cron
            .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "));
        let spec = CronSchedule::parse(
            cron.as_deref().unwrap_or(&current.cron),
            self.timezone.as_deref().unwrap_or(&current.timezone),
            // An unchanged stored expression stays acceptable.
            cron.is_none() && self.timezone.is_none(),
        )
        .map_err(unprocessable)?;
        let next = next_run(&spec, self.enabled.unwrap_or(current.enabled), now)?;
        let patch = SchedulePatch {
            enabled: self.enabled,
            cron,
            timezone: self.timezone,
            duration_secs: self.duration_secs.map(|d| d as i32),
            frequency_hz: self.frequency_hz.map(|f| f as i32),
        };
        Ok((patch, next))
    }
}

/// Create a schedule (admin).
#[utoipa::path(
    post,
    path = "/api/v1/schedules",
    operation_id = "create_schedule",
    tag = "schedules",
    request_body = CreateScheduleRequest,
    responses(
        (status = 201, description = "Created", body = schemas::Schedule,
            links(
                ("describe" = (operation_id = "describe_schedule", parameters(("id" = "$response.body#/id")))),
                ("update" = (operation_id = "update_schedule", parameters(("id" = "$response.body#/id")))),
                ("delete" = (operation_id = "delete_schedule", parameters(("id" = "$response.body#/id")))),
            ),
        ),
        (status = 409, description = "A schedule of that name exists", body = crate::openapi::ErrorBody),
        CommonErrors,
    ),
)]
async fn create(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppJson(request): AppJson<CreateScheduleRequest>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    let new = request.validate(&caller.subject, Utc::now())?;
    let row = Schedules::new(state.pool.clone()).create(&new).await?;
    tracing::info!(schedule = %row.id, name = %row.name, by = %caller.subject, "schedule created");
    Ok((StatusCode::CREATED, Json(row)))
}

/// Every schedule.
#[utoipa::path(
    get,
    path = "/api/v1/schedules",
    operation_id = "list_schedules",
    tag = "schedules",
    responses(
        (status = 200, description = "The schedules", body = SchedulesResponse),
        CommonErrors,
    ),
)]
async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
) -> Result<Json<SchedulesResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    let schedules = Schedules::new(state.pool.clone()).list().await?;
    Ok(Json(SchedulesResponse { schedules }))
}

/// A schedule with its latest runs.
#[utoipa::path(
    get,
    path = "/api/v1/schedules/{id}",
    operation_id = "describe_schedule",
    tag = "schedules",
    params(("id" = Uuid, Path, description = "Schedule id")),
    responses(
        (status = 200, description = "The schedule", body = schemas::ScheduleWithRuns),
        NotFound,
        CommonErrors,
    ),
)]
async fn describe(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<ScheduleDetail>, ApiError> {
    caller.require(Role::Viewer)?;
    let schedules = Schedules::new(state.pool.clone());
    let schedule = schedules.get(id).await?.ok_or_else(|| no_schedule(id))?;
    let runs = schedules.runs(id, RUNS_SHOWN).await?;
    Ok(Json(ScheduleDetail {
        schedule,
        runs: runs.into_iter().map(RunView::from).collect(),
    }))
}

/// Change a schedule (admin); absent fields stay as they are.
#[utoipa::path(
    patch,
    path = "/api/v1/schedules/{id}",
    operation_id = "update_schedule",
    tag = "schedules",
    params(("id" = Uuid, Path, description = "Schedule id")),
    request_body = UpdateScheduleRequest,
    responses(
        (status = 200, description = "The changed schedule", body = schemas::Schedule),
        NotFound,
        CommonErrors,
    ),
)]
async fn update(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppJson(request): AppJson<UpdateScheduleRequest>,
) -> Result<Json<ScheduleRow>, ApiError> {
    caller.require(Role::Admin)?;
    let schedules = Schedules::new(state.pool.clone());
    let current = schedules.get(id).await?.ok_or_else(|| no_schedule(id))?;
    let (patch, next_run_at) = request.validate(&current, Utc::now())?;
    let row = schedules
        .update(id, &patch, next_run_at)
        .await?
        .ok_or_else(|| no_schedule(id))?;
    tracing::info!(schedule = %id, by = %caller.subject, "schedule changed");
    Ok(Json(row))
}

/// Delete a schedule (admin).
#[utoipa::path(
    delete,
    path = "/api/v1/schedules/{id}",
    operation_id = "delete_schedule",
    tag = "schedules",
    params(("id" = Uuid, Path, description = "Schedule id")),
    responses(
        (status = 204, description = "Deleted"),
        NotFound,
        CommonErrors,
    ),
)]
async fn remove(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<StatusCode, ApiError> {
    caller.require(Role::Admin)?;
    if !Schedules::new(state.pool.clone()).delete(id).await? {
        return Err(no_schedule(id));
    }
    tracing::info!(schedule = %id, by = %caller.subject, "schedule deleted");
    Ok(StatusCode::NO_CONTENT)
}

fn no_schedule(id: Uuid) -> ApiError {
    ApiError::NotFound(format!("no schedule {id}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use odp_core::Target;

    fn create(json: serde_json::Value) -> Result<NewSchedule, ApiError> {
        serde_json::from_value::<CreateScheduleRequest>(json)
            .unwrap()
            .validate("admin", Utc::now())
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
                matches!(create(body), Err(ApiError::Unprocessable(_))),
                "{field} = {value}"
            );
        }
    }
}
