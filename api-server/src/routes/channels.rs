//! Alert channels: where the pipeline announces new detections (a signed
//! webhook, or email through an SMTP relay), and the log of what it sent
//! to each. Admins only, reads included: channels name internal systems
//! and people. A webhook's secret is written, rotated, and never shown.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use odp_api_types::{
    Channel, ChannelList, CreateChannelRequest, DeliveriesPage, Delivery, DeliveryStatus,
    UpdateChannelRequest,
};
use odp_store::{ChannelRow, DeliveryFilter};
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
use crate::service::MAX_PAGE;
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
    let new = channels::new_channel(body)?;
    channels::check_destination(&state.egress, new.kind, &new.url).await?;
    let row = odp_store::create_channel(&state.pool, &new).await?;
    tracing::info!(channel = %row.id, name = %row.name, kind = %row.kind, by = %caller.subject, "alert channel created");
    Ok((StatusCode::CREATED, Json(channel(row)?)))
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
    let channels = odp_store::list_channels(&state.pool)
        .await?
        .into_iter()
        .map(channel)
        .collect::<Result<_, _>>()?;
    Ok(Json(ChannelList { channels }))
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
    Ok(Json(channel(load(&state, id).await?)?))
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
    let kind = channel(load(&state, id).await?)?.kind;
    let patch = channels::patch(kind, request)?;
    if let Some(url) = &patch.url {
        channels::check_destination(&state.egress, kind, url).await?;
    }
    let row = odp_store::update_channel(&state.pool, id, &patch)
        .await?
        .ok_or_else(|| no_channel(id))?;
    tracing::info!(channel = %id, by = %caller.subject, secret_rotated = patch.secret.is_some(), "alert channel changed");
    Ok(Json(channel(row)?))
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
    if !odp_store::delete_channel(&state.pool, id).await? {
        return Err(no_channel(id));
    }
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
    let limit = query.limit.unwrap_or(50);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::Unprocessable(format!(
            "`limit` must be between 1 and {MAX_PAGE}"
        )));
    }
    load(&state, id).await?;
    let filter = DeliveryFilter {
        channel_id: id,
        status: query.status,
        before: query.before,
        limit,
    };
    let deliveries = odp_store::channel_deliveries(&state.pool, &filter)
        .await?
        .ok_or_else(|| {
            ApiError::Unprocessable("`before` is not a delivery of this channel".into())
        })?;
    let next_before = (deliveries.len() as i64 == limit)
        .then(|| deliveries.last().map(|d| d.id))
        .flatten();
    Ok(Json(DeliveriesPage {
        deliveries: deliveries
            .into_iter()
            .map(|row| without_remote_answers(Delivery::from(row)))
            .collect(),
        next_before,
    }))
}

async fn load(state: &AppState, id: Uuid) -> Result<ChannelRow, ApiError> {
    odp_store::get_channel(&state.pool, id)
        .await?
        .ok_or_else(|| no_channel(id))
}

/// The channel as the API shows it.
fn channel(row: ChannelRow) -> Result<Channel, ApiError> {
    Ok(Channel::try_from(row)?)
}

/// A failed attempt shows no status code: what a remote answered is not
/// for the reader to see (the log would be a port scanner). The pipeline
/// no longer records one; attempts recorded before may hold one.
fn without_remote_answers(mut delivery: Delivery) -> Delivery {
    for attempt in &mut delivery.attempt_log {
        if !attempt.success {
            attempt.status_code = None;
        }
    }
    delivery
}

fn no_channel(id: Uuid) -> ApiError {
    ApiError::NotFound(format!("no channel {id}"))
}
