//! Starting, stopping and describing profiles.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use odp_api_types::{DuplicateStart, Profile, StartRequest};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath};
use crate::openapi::{CommonErrors, ErrorBody, NotFound};
use crate::service::profiles::{self, StartAnswer, StartedBy, ValidStart};
use crate::service::scope;
use crate::views;
use crate::AppState;

/// `start` and `list` share their path, so `routes::router` mounts them
/// together.
pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(describe))
        .routes(routes!(stop))
}

/// The `Idempotency-Key` header, if any: 1 to 200 visible ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .filter(|k| !k.is_empty() && k.len() <= 200 && k.chars().all(|c| c.is_ascii_graphic()))
        .ok_or_else(|| {
            ApiError::BadRequest("Idempotency-Key must be 1 to 200 visible ASCII characters".into())
        })?;
    Ok(Some(key.to_owned()))
}

/// Profile a process on a host: 202 once the command is dispatched.
#[utoipa::path(
    post,
    path = "/api/v1/profiles",
    operation_id = "start_profile",
    tag = "profiles",
    request_body = StartRequest,
    params(
        ("Idempotency-Key" = Option<String>, Header,
         description = "1 to 200 visible ASCII characters; a retry with the same key returns the same profile"),
    ),
    responses(
        (status = 202, description = "Requested and dispatched", body = Profile,
            links(
                ("describe" = (operation_id = "describe_profile", parameters(("id" = "$response.body#/id")))),
                ("stop" = (operation_id = "stop_profile", parameters(("id" = "$response.body#/id")))),
                ("flamegraph" = (operation_id = "flame_graph", parameters(("id" = "$response.body#/id")))),
                ("top" = (operation_id = "top_functions", parameters(("id" = "$response.body#/id")))),
                ("issues" = (operation_id = "profile_issues", parameters(("id" = "$response.body#/id")))),
                ("timeline" = (operation_id = "timeline", parameters(("id" = "$response.body#/id")))),
            ),
        ),
        (status = 409, description = "A live profile of the same target exists; the body's `profile` is it", body = DuplicateStart),
        CommonErrors,
    ),
)]
pub(crate) async fn start(
    state: axum::extract::State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    AppJson(request): AppJson<StartRequest>,
) -> Result<Response, ApiError> {
    let valid = ValidStart::try_from(request)?;
    scope::authorize_start(&state, &caller, &valid).await?;
    let idempotency_key = idempotency_key(&headers)?;
    let by = StartedBy::caller(&caller);
    let inserted = profiles::start(&state, valid, &by, idempotency_key).await?;
    Ok(match StartAnswer::from(inserted) {
        StartAnswer::Accepted(profile) => (StatusCode::ACCEPTED, Json(profile)).into_response(),
        // 409 naming the live profile the client can follow instead.
        StartAnswer::Duplicate(body) => (StatusCode::CONFLICT, Json(body)).into_response(),
    })
}

/// Stop a profile early; the last partial window is flushed.
#[utoipa::path(
    post,
    path = "/api/v1/profiles/{id}/stop",
    operation_id = "stop_profile",
    tag = "profiles",
    params(("id" = Uuid, Path, description = "Profile id")),
    responses(
        (status = 202, description = "Stop requested", body = Profile),
        (status = 409, description = "The profile has ended already", body = ErrorBody),
        NotFound,
        CommonErrors,
    ),
)]
async fn stop(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<impl IntoResponse, ApiError> {
    let row = profiles::get(&state.profiles, id).await?;
    caller.require_profiling(&row.service)?;
    profiles::stop(&state, &row, &caller.subject).await?;
    Ok((StatusCode::ACCEPTED, Json(views::profile(row))))
}

/// One profile and its status.
#[utoipa::path(
    get,
    path = "/api/v1/profiles/{id}",
    operation_id = "describe_profile",
    tag = "profiles",
    params(("id" = Uuid, Path, description = "Profile id")),
    responses(
        (status = 200, description = "The profile", body = Profile),
        NotFound,
        CommonErrors,
    ),
)]
async fn describe(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<Profile>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(profiles::describe(&state, id).await?))
}
