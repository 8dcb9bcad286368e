//! Agent identities (admin): issue one for a host, list them, revoke one.
//! What a revoked identity signs is refused by the pipeline and by this
//! server's heartbeat follower within about 30 s.

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use odp_api_types::{
    AgentIdentityList, AgentIdentityRecord, IssueAgentIdentityRequest, IssuedAgentIdentity,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath, AppQuery};
use crate::openapi::{CommonErrors, NotFound};
use crate::routes::HostPageQuery;
use crate::service::identities;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, issue))
        .routes(routes!(revoke))
}

/// Issue an agent identity: a certificate binding an Ed25519 key to a host
/// (admin). Without `public_key` the key pair is generated here and its
/// private key answered this once.
#[utoipa::path(
    post,
    path = "/api/v1/agents/identities",
    operation_id = "issue_agent_identity",
    tag = "agents",
    request_body = IssueAgentIdentityRequest,
    responses(
        (status = 201, description = "Issued", body = IssuedAgentIdentity,
            links(
                ("revoke" = (operation_id = "revoke_agent_identity", parameters(("id" = "$response.body#/id")))),
            ),
        ),
        CommonErrors,
    ),
)]
async fn issue(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppJson(request): AppJson<IssueAgentIdentityRequest>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    let issued = identities::issue(&state.identities, request, &caller.subject).await?;
    tracing::info!(
        identity = %issued.id,
        host = %issued.host,
        expires_at = %issued.expires_at,
        key_generated = issued.private_key_pem.is_some(),
        by = %caller.subject,
        "agent identity issued"
    );
    Ok((StatusCode::CREATED, Json(issued)))
}

/// Issued agent identities, newest first, revoked ones included (admin).
#[utoipa::path(
    get,
    path = "/api/v1/agents/identities",
    operation_id = "list_agent_identities",
    tag = "agents",
    params(HostPageQuery),
    responses(
        (status = 200, description = "The identities", body = AgentIdentityList),
        CommonErrors,
    ),
)]
async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppQuery(query): AppQuery<HostPageQuery>,
) -> Result<Json<AgentIdentityList>, ApiError> {
    caller.require(Role::Admin)?;
    let host = query.host.as_deref();
    Ok(Json(
        identities::list(&state.pool, host, query.limit).await?,
    ))
}

/// Revoke an agent identity (admin): what it signs is refused from then
/// on. Revoking it again changes nothing.
#[utoipa::path(
    delete,
    path = "/api/v1/agents/identities/{id}",
    operation_id = "revoke_agent_identity",
    tag = "agents",
    params(("id" = Uuid, Path, description = "Identity id")),
    responses(
        (status = 200, description = "The revoked identity", body = AgentIdentityRecord),
        NotFound,
        CommonErrors,
    ),
)]
async fn revoke(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<AgentIdentityRecord>, ApiError> {
    caller.require(Role::Admin)?;
    let revoked = identities::revoke(&state.pool, id, &caller.subject).await?;
    tracing::info!(identity = %id, host = %revoked.host, by = %caller.subject, "agent identity revoked");
    Ok(Json(revoked))
}
