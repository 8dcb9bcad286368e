//! Enrollment tokens (admin) and the enrollment an agent makes with one.
//! `POST /api/v1/agents/enroll` takes no bearer token: the enrollment
//! token in its body is the credential, checked and used up in
//! [`crate::service::enrollment`].

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use odp_api_types::{
    CreateEnrollmentTokenRequest, CreatedEnrollmentToken, EnrollAgentRequest, EnrollmentToken,
    EnrollmentTokenList, IssuedAgentIdentity,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppJson, AppPath, AppQuery};
use crate::openapi::{CommonErrors, EnrollmentRefusals, NotFound};
use crate::routes::HostPageQuery;
use crate::service::enrollment;
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(revoke))
        .routes(routes!(enroll))
}

/// Create an enrollment token for a host (admin): an agent of that host
/// started with it enrolls itself. Its secret is answered this once and
/// kept only as a SHA-256.
#[utoipa::path(
    post,
    path = "/api/v1/agents/enrollment-tokens",
    operation_id = "create_enrollment_token",
    tag = "agents",
    request_body = CreateEnrollmentTokenRequest,
    responses(
        (status = 201, description = "Created, with its secret", body = CreatedEnrollmentToken,
            links(
                ("revoke" = (operation_id = "revoke_enrollment_token", parameters(("id" = "$response.body#/token/id")))),
            ),
        ),
        CommonErrors,
    ),
)]
async fn create(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppJson(request): AppJson<CreateEnrollmentTokenRequest>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Role::Admin)?;
    let created = enrollment::create(&state.pool, request, &caller.subject).await?;
    let token = &created.token;
    tracing::info!(
        token = %token.id,
        host = %token.host,
        uses = token.uses,
        expires_at = %token.expires_at,
        by = %caller.subject,
        "enrollment token created"
    );
    Ok((StatusCode::CREATED, Json(created)))
}

/// Enrollment tokens, newest first, without their secrets (admin).
#[utoipa::path(
    get,
    path = "/api/v1/agents/enrollment-tokens",
    operation_id = "list_enrollment_tokens",
    tag = "agents",
    params(HostPageQuery),
    responses(
        (status = 200, description = "The tokens", body = EnrollmentTokenList),
        CommonErrors,
    ),
)]
async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppQuery(query): AppQuery<HostPageQuery>,
) -> Result<Json<EnrollmentTokenList>, ApiError> {
    caller.require(Role::Admin)?;
    let host = query.host.as_deref();
    Ok(Json(
        enrollment::list(&state.pool, host, query.limit).await?,
    ))
}

/// Revoke an enrollment token (admin): no agent enrolls with it from then
/// on. The identities it enrolled stay valid (revoke them on their own).
#[utoipa::path(
    delete,
    path = "/api/v1/agents/enrollment-tokens/{id}",
    operation_id = "revoke_enrollment_token",
    tag = "agents",
    params(("id" = Uuid, Path, description = "Token id")),
    responses(
        (status = 200, description = "The revoked token", body = EnrollmentToken),
        NotFound,
        CommonErrors,
    ),
)]
async fn revoke(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<EnrollmentToken>, ApiError> {
    caller.require(Role::Admin)?;
    let revoked = enrollment::revoke(&state.pool, id, &caller.subject).await?;
    tracing::info!(token = %id, host = %revoked.host, by = %caller.subject, "enrollment token revoked");
    Ok(Json(revoked))
}

/// Enroll an agent with an enrollment token: certify the public key it
/// made as an agent of the token's host. No bearer token: the enrollment
/// token is the credential, and each enrollment takes one of its uses.
#[utoipa::path(
    post,
    path = "/api/v1/agents/enroll",
    operation_id = "enroll_agent",
    tag = "agents",
    security(()),
    request_body = EnrollAgentRequest,
    responses(
        (status = 201, description = "Enrolled: the certificate for the agent's key", body = IssuedAgentIdentity),
        EnrollmentRefusals,
    ),
)]
async fn enroll(
    state: axum::extract::State<AppState>,
    AppJson(request): AppJson<EnrollAgentRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let host = request.host.clone();
    match enrollment::enroll(&state.identities, &state.pool, request).await {
        Ok((issued, token)) => {
            tracing::info!(
                identity = %issued.id,
                host = %issued.host,
                enrollment_token = %token,
                token_by = %issued.issued_by,
                "agent enrolled with a token"
            );
            Ok((StatusCode::CREATED, Json(issued)))
        }
        Err(refused) => {
            tracing::info!(host = ?host, reason = %refused, "agent enrollment refused");
            Err(refused.into())
        }
    }
}
