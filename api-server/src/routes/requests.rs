//! `GET /api/v1/requests`: the control requests (deploy, undeploy, stop)
//! with who asked, when, and how each went; newest first.

use axum::routing::get;
use axum::{Json, Router};
use odp_store::{RequestFilter, RequestKind, RequestRow};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppPath, AppQuery};
use crate::routes::profiles::validate_name;
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/requests", get(list))
        .route("/api/v1/requests/{id}", get(describe))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    /// deploy, undeploy or stop.
    kind: Option<String>,
    host: Option<String>,
    /// Only requests still under way.
    #[serde(default)]
    open: bool,
    limit: Option<i64>,
}

#[derive(Debug, Serialize)]
struct ListResponse {
    requests: Vec<RequestRow>,
}

async fn list(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Json<ListResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    let kind = match query.kind.as_deref() {
        None => None,
        Some("deploy") => Some(RequestKind::Deploy),
        Some("undeploy") => Some(RequestKind::Undeploy),
        Some("stop") => Some(RequestKind::Stop),
        Some(other) => {
            return Err(ApiError::Unprocessable(format!(
                "unknown kind {other:?}: deploy, undeploy or stop"
            )))
        }
    };
    if let Some(host) = &query.host {
        validate_name("host", host)?;
    }
    let limit = query.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::Unprocessable(
            "`limit` must be between 1 and 500".into(),
        ));
    }
    let filter = RequestFilter {
        kind,
        host: query.host,
        open_only: query.open,
        limit,
    };
    let requests = state.control.requests.list(&filter).await?;
    Ok(Json(ListResponse { requests }))
}

async fn describe(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<RequestRow>, ApiError> {
    caller.require(Role::Viewer)?;
    Ok(Json(state.control.load(id).await?))
}
