//! Triggers: admins create, change, turn off and delete them; viewers
//! list them and their firings. Each change is logged with who made it and
//! kept on the trigger (`updated_by`).

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use odp_api_types::{
    CreateTriggerRequest, Trigger, TriggerFiringsResponse, TriggersResponse, UpdateTriggerRequest,
};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath, AppQuery};
use crate::openapi::{CommonErrors, NotFound};
use crate::service::triggers;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(describe, update, remove))
        .routes(routes!(firings))
}

/// Profile a service's host when a condition holds there (admin): its
/// processes' CPU above a threshold, or their memory growing, for a period.
/// The host's agent watches it and reports; the api-server starts the
/// profile within the trigger's cooldown and cap.
#[utoipa::path(
    post,
    path = "/api/v1/triggers",
    operation_id = "create_trigger",
    tag = "triggers",
    request_body = CreateTriggerRequest,
    responses(
        (status = 201, description = "Created", body = Trigger,
            links(
                ("describe" = (operation_id = "describe_trigger", parameters(("id" = "$response.body#/id")))),
            ),
        ),
        CommonErrors,
    ),
)]
async fn create(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppJson(request): AppJson<CreateTriggerRequest>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    let created = triggers::create(&state.pool, request, &caller.subject).await?;
    tracing::info!(id = %created.id, service = %created.service, condition = ?created.condition,
        by = %caller.subject, "trigger created");
    Ok((StatusCode::CREATED, Json(created)))
}

/// Every trigger, by service.
#[utoipa::path(
    get,
    path = "/api/v1/triggers",
    operation_id = "list_triggers",
    tag = "triggers",
    responses(
        (status = 200, description = "The triggers", body = TriggersResponse),
        CommonErrors,
    ),
)]
async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
) -> Result<Json<TriggersResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(TriggersResponse {
        triggers: triggers::list(&state.pool).await?,
    }))
}

/// A trigger, with how often it fired and whether it is held back.
#[utoipa::path(
    get,
    path = "/api/v1/triggers/{id}",
    operation_id = "describe_trigger",
    tag = "triggers",
    params(("id" = Uuid, Path, description = "Trigger id")),
    responses(
        (status = 200, description = "The trigger", body = Trigger),
        NotFound,
        CommonErrors,
    ),
)]
async fn describe(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<Trigger>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(triggers::get(&state.pool, id).await?))
}

/// Change a trigger, or turn it off and on (admin); absent fields stay as
/// they are.
#[utoipa::path(
    patch,
    path = "/api/v1/triggers/{id}",
    operation_id = "update_trigger",
    tag = "triggers",
    params(("id" = Uuid, Path, description = "Trigger id")),
    request_body = UpdateTriggerRequest,
    responses(
        (status = 200, description = "The changed trigger", body = Trigger),
        NotFound,
        CommonErrors,
    ),
)]
async fn update(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppJson(request): AppJson<UpdateTriggerRequest>,
) -> Result<Json<Trigger>, ApiError> {
    caller.require(Role::Admin)?;
    let changed = triggers::update(&state.pool, id, request, &caller.subject).await?;
    tracing::info!(%id, service = %changed.service, enabled = changed.enabled,
        condition = ?changed.condition, by = %caller.subject, "trigger changed");
    Ok(Json(changed))
}

/// Delete a trigger and its firings (admin); its profiles stay.
#[utoipa::path(
    delete,
    path = "/api/v1/triggers/{id}",
    operation_id = "delete_trigger",
    tag = "triggers",
    params(("id" = Uuid, Path, description = "Trigger id")),
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
    triggers::delete(&state.pool, id).await?;
    tracing::info!(%id, by = %caller.subject, "trigger deleted");
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct FiringsQuery {
    /// How many, newest first; 50 when absent.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

/// A trigger's latest firings: each host where its condition held, what
/// the agent measured, and what came of it (a profile started, or held
/// back by the cooldown or the cap).
#[utoipa::path(
    get,
    path = "/api/v1/triggers/{id}/firings",
    operation_id = "trigger_firings",
    tag = "triggers",
    params(("id" = Uuid, Path, description = "Trigger id"), FiringsQuery),
    responses(
        (status = 200, description = "The latest firings", body = TriggerFiringsResponse),
        NotFound,
        CommonErrors,
    ),
)]
async fn firings(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppQuery(query): AppQuery<FiringsQuery>,
) -> Result<Json<TriggerFiringsResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    let limit = query.limit.unwrap_or(50);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::Unprocessable(
            "`limit` must be between 1 and 1000".into(),
        ));
    }
    Ok(Json(TriggerFiringsResponse {
        firings: triggers::firings(&state.pool, id, limit).await?,
    }))
}
