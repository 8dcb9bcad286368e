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
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath};
use crate::openapi::{CommonErrors, NotFound};
use crate::service::rules;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create))
        .routes(routes!(describe, replace, change))
        .routes(routes!(latest_reanalysis))
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
    let rule = rules::create(&state.pool, body, &caller.subject).await?;
    Ok((StatusCode::CREATED, Json(rule)))
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
    Ok(Json(rules::describe(&state.pool, &id).await?))
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
    Ok(Json(
        rules::replace(&state.pool, id, body, &caller.subject).await?,
    ))
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
    Ok(Json(
        rules::change(&state.pool, &id, patch, &caller.subject).await?,
    ))
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
    Ok(Json(rules::latest_reanalysis(&state.pool, &id).await?))
}
