//! Alert channels: where the pipeline announces new detections (a signed
//! webhook, or email through an SMTP relay), and the log of what it sent
//! to each. Admins only, reads included: channels name internal systems
//! and people. A webhook's secret is written, rotated, and never shown.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use odp_api_types::{
    Channel, ChannelList, CreateChannelRequest, DeliveriesPage, DeliveryStatus,
    UpdateChannelRequest,
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
use crate::service::channels;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(describe, update, remove))
        .routes(routes!(deliveries))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct DeliveriesQuery {
    /// Only deliveries in this state.
    #[param(inline)]
    status: Option<DeliveryStatus>,
    /// Page size; 50 when absent.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// The previous page's `next_before`: deliveries queued before it.
    before: Option<Uuid>,
}

/// Create a webhook or email channel (admin).
#[utoipa::path(
    post,
    path = "/api/v1/channels",
    operation_id = "create_channel",
    tag = "channels",
    request_body = CreateChannelRequest,
    responses(
        (status = 201, description = "Created", body = Channel,
            links(
                ("describe" = (operation_id = "describe_channel", parameters(("id" = "$response.body#/id")))),
                ("update" = (operation_id = "update_channel", parameters(("id" = "$response.body#/id")))),
                ("delete" = (operation_id = "delete_channel", parameters(("id" = "$response.body#/id")))),
                ("deliveries" = (operation_id = "channel_deliveries", parameters(("id" = "$response.body#/id")))),
            ),
        ),
        (status = 409, description = "A channel of that name exists", body = crate::openapi::ErrorBody),
        CommonErrors,
    ),
)]
async fn create(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppJson(body): AppJson<serde_json::Value>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    let channel = channels::create(&state, body).await?;
    tracing::info!(channel = %channel.id, name = %channel.name, kind = %channel.kind, by = %caller.subject, "alert channel created");
    Ok((StatusCode::CREATED, Json(channel)))
}

/// Every channel, by name (admin).
#[utoipa::path(
    get,
    path = "/api/v1/channels",
    operation_id = "list_channels",
    tag = "channels",
    responses(
        (status = 200, description = "The channels", body = ChannelList),
        CommonErrors,
    ),
)]
async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
) -> Result<Json<ChannelList>, ApiError> {
    caller.require(Role::Admin)?;
    Ok(Json(channels::list(&state).await?))
}

/// One channel (admin).
#[utoipa::path(
    get,
    path = "/api/v1/channels/{id}",
    operation_id = "describe_channel",
    tag = "channels",
    params(("id" = Uuid, Path, description = "Channel id")),
    responses(
        (status = 200, description = "The channel", body = Channel),
        NotFound,
        CommonErrors,
    ),
)]
async fn describe(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<Channel>, ApiError> {
    caller.require(Role::Admin)?;
    Ok(Json(channels::describe(&state, id).await?))
}

/// Change a channel (admin): enable or disable it, its services, its
/// address, its webhook secret or its recipients.
#[utoipa::path(
    patch,
    path = "/api/v1/channels/{id}",
    operation_id = "update_channel",
    tag = "channels",
    params(("id" = Uuid, Path, description = "Channel id")),
    request_body = UpdateChannelRequest,
    responses(
        (status = 200, description = "The changed channel", body = Channel),
        NotFound,
        CommonErrors,
    ),
)]
async fn update(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppJson(request): AppJson<UpdateChannelRequest>,
) -> Result<Json<Channel>, ApiError> {
    caller.require(Role::Admin)?;
    let secret_rotated = request.secret.is_some();
    let channel = channels::update(&state, id, request).await?;
    tracing::info!(channel = %id, by = %caller.subject, secret_rotated, "alert channel changed");
    Ok(Json(channel))
}

/// Delete a channel with its deliveries, pending ones included (admin).
#[utoipa::path(
    delete,
    path = "/api/v1/channels/{id}",
    operation_id = "delete_channel",
    tag = "channels",
    params(("id" = Uuid, Path, description = "Channel id")),
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
    channels::delete(&state, id).await?;
    tracing::info!(channel = %id, by = %caller.subject, "alert channel deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// The channel's deliveries, newest first, with every attempt (admin).
#[utoipa::path(
    get,
    path = "/api/v1/channels/{id}/deliveries",
    operation_id = "channel_deliveries",
    tag = "channels",
    params(("id" = Uuid, Path, description = "Channel id"), DeliveriesQuery),
    responses(
        (status = 200, description = "One page of deliveries", body = DeliveriesPage),
        NotFound,
        CommonErrors,
    ),
)]
async fn deliveries(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppQuery(query): AppQuery<DeliveriesQuery>,
) -> Result<Json<DeliveriesPage>, ApiError> {
    caller.require(Role::Admin)?;
    let page = channels::deliveries(&state, id, query.status, query.before, query.limit).await?;
    Ok(Json(page))
}
