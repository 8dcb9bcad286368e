//! Managing the detection rules: admins create, replace, change and
//! disable them; everyone reads them. Every change queues a re-analysis
//! that the pipeline runs over the profiles stored before it, and a rule's
//! latest re-analysis shows its progress.
//!
//! (`GET /api/v1/rules`, the list, is with the issues in `issues.rs`.)

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use odp_api_types::{Reanalysis, RuleBody, RulePatch, RuleView};
use odp_rules::RuleDef;
use odp_store::RuleRow;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath};
use crate::openapi::{CommonErrors, NotFound};
use crate::validate::validate_name;
use crate::AppState;

/// Most per-service threshold overrides on one rule.
const MAX_SERVICE_THRESHOLDS: usize = 256;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create))
        .routes(routes!(describe, replace, change))
        .routes(routes!(latest_reanalysis))
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::Unprocessable(message.into())
}

fn check_text(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.trim().is_empty() || value.chars().count() > max {
        return Err(invalid(format!("{field} must be 1 to {max} characters")));
    }
    Ok(())
}

fn check_id(id: &str) -> Result<(), ApiError> {
    let valid = (1..=63).contains(&id.len())
        && id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '_'));
    if !valid {
        return Err(invalid(
            "id must be 1 to 63 lower-case letters, digits, `.`, `-` or `_`",
        ));
    }
    Ok(())
}

/// Checks what the store cannot: texts, the link, service names, and (by
/// compiling it as the pipeline will) the kind, spec and thresholds.
fn validated(id: String, body: RuleBody) -> Result<RuleDef, ApiError> {
    check_id(&id)?;
    check_text("title", &body.title, 200)?;
    check_text("explanation", &body.explanation, 4000)?;
    check_text("fix", &body.fix, 4000)?;
    check_text("link", &body.link, 2000)?;
    if !(body.link.starts_with("https://") || body.link.starts_with("http://")) {
        return Err(invalid("link must be an http or https URL"));
    }
    if body.service_thresholds.len() > MAX_SERVICE_THRESHOLDS {
        return Err(invalid(format!(
            "at most {MAX_SERVICE_THRESHOLDS} service thresholds"
        )));
    }
    for service in body.service_thresholds.keys() {
        validate_name("service", service)?;
    }
    let rule = RuleDef {
        id,
        title: body.title,
        explanation: body.explanation,
        fix: body.fix,
        link: body.link,
        kind: body.kind,
        spec: body.spec,
        threshold_pct: body.threshold_pct,
        service_thresholds: body.service_thresholds,
        enabled: body.enabled,
    };
    odp_rules::validate(&rule).map_err(|e| invalid(e.to_string()))?;
    Ok(rule)
}

/// Creates a rule and queues its re-analysis of past profiles.
#[utoipa::path(
    post,
    path = "/api/v1/rules",
    tag = "rules",
    request_body = RuleBody,
    responses(
        (status = 201, description = "The rule, its re-analysis queued", body = RuleView),
        (status = 409, description = "A rule with this id exists", body = crate::openapi::ErrorBody),
        CommonErrors,
    ),
)]
async fn create(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppJson(body): AppJson<RuleBody>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    let id = body.id.clone().ok_or_else(|| invalid("id is required"))?;
    let rule = validated(id, body)?;
    let (rule, job) = odp_store::create_user_rule(&state.pool, &rule, &caller.subject)
        .await?
        .ok_or_else(|| ApiError::Conflict(format!("rule {} exists", rule.id)))?;
    Ok((StatusCode::CREATED, Json(view(rule, Some(job)))))
}

/// One rule and its latest re-analysis.
#[utoipa::path(
    get,
    path = "/api/v1/rules/{id}",
    tag = "rules",
    params(("id" = String, Path, description = "Rule id")),
    responses(
        (status = 200, description = "The rule", body = RuleView),
        NotFound,
        CommonErrors,
    ),
)]
async fn describe(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<String>,
) -> Result<Json<RuleView>, ApiError> {
    caller.require(Role::Viewer)?;
    let rule = load(&state, &id).await?;
    let reanalysis = odp_store::latest_reanalysis(&state.pool, &id).await?;
    Ok(Json(view(rule, reanalysis)))
}

/// Replaces a rule (a seed rule becomes the admin's, never reset by the
/// shipped pack) and queues its re-analysis.
#[utoipa::path(
    put,
    path = "/api/v1/rules/{id}",
    tag = "rules",
    params(("id" = String, Path, description = "Rule id")),
    request_body = RuleBody,
    responses(
        (status = 200, description = "The rule, its re-analysis queued", body = RuleView),
        NotFound,
        CommonErrors,
    ),
)]
async fn replace(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<String>,
    AppJson(body): AppJson<RuleBody>,
) -> Result<Json<RuleView>, ApiError> {
    caller.require(Role::Admin)?;
    if body.id.as_ref().is_some_and(|body_id| *body_id != id) {
        return Err(invalid("the body's id differs from the path's"));
    }
    save(&state, &caller, validated(id, body)?).await
}

/// Changes some of a rule's settings (e.g. `{"enabled": false}`) and
/// queues its re-analysis.
#[utoipa::path(
    patch,
    path = "/api/v1/rules/{id}",
    tag = "rules",
    params(("id" = String, Path, description = "Rule id")),
    request_body = RulePatch,
    responses(
        (status = 200, description = "The rule, its re-analysis queued", body = RuleView),
        NotFound,
        CommonErrors,
    ),
)]
async fn change(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<String>,
    AppJson(patch): AppJson<RulePatch>,
) -> Result<Json<RuleView>, ApiError> {
    caller.require(Role::Admin)?;
    let current = load(&state, &id).await?.rule;
    let body = RuleBody {
        id: None,
        title: current.title,
        explanation: current.explanation,
        fix: current.fix,
        link: current.link,
        kind: current.kind,
        spec: patch.spec.unwrap_or(current.spec),
        threshold_pct: patch.threshold_pct.unwrap_or(current.threshold_pct),
        service_thresholds: patch
            .service_thresholds
            .unwrap_or(current.service_thresholds),
        enabled: patch.enabled.unwrap_or(current.enabled),
    };
    save(&state, &caller, validated(id, body)?).await
}

/// The latest re-analysis of a rule's changes over past profiles.
#[utoipa::path(
    get,
    path = "/api/v1/rules/{id}/reanalysis",
    tag = "rules",
    params(("id" = String, Path, description = "Rule id")),
    responses(
        (status = 200, description = "Its progress", body = Reanalysis),
        NotFound,
        CommonErrors,
    ),
)]
async fn latest_reanalysis(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<String>,
) -> Result<Json<Reanalysis>, ApiError> {
    caller.require(Role::Viewer)?;
    load(&state, &id).await?;
    odp_store::latest_reanalysis(&state.pool, &id)
        .await?
        .map(|job| Json(job.into()))
        .ok_or_else(|| ApiError::NotFound(format!("rule {id} was never re-analysed")))
}

async fn load(state: &AppState, id: &str) -> Result<RuleRow, ApiError> {
    odp_store::get_rule(&state.pool, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no rule {id}")))
}

async fn save(
    state: &AppState,
    caller: &Caller,
    rule: RuleDef,
) -> Result<Json<RuleView>, ApiError> {
    let (rule, job) = odp_store::update_user_rule(&state.pool, &rule, &caller.subject)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no rule {}", rule.id)))?;
    Ok(Json(view(rule, Some(job))))
}

/// The rule with its latest re-analysis, as the API shows them.
fn view(rule: RuleRow, reanalysis: Option<odp_store::Reanalysis>) -> RuleView {
    RuleView {
        rule: rule.into(),
        reanalysis: reanalysis.map(Reanalysis::from),
    }
}
