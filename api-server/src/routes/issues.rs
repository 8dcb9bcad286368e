//! Common issue detection (ODP §3): what the rules found in a profile, and
//! the rules themselves. The pipeline evaluates; this only reads.

use axum::routing::get;
use axum::{Json, Router};
use odp_store::{Issue, RuleRow};
use serde::Serialize;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::AppPath;
use crate::routes::profiles::load;
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/profiles/{id}/issues", get(profile_issues))
        .route("/api/v1/rules", get(rules))
}

#[derive(Debug, Serialize)]
struct IssuesResponse {
    profile_id: Uuid,
    /// Detections, largest share first, each with its rule's title,
    /// explanation, fix and link and its heaviest matching stacks.
    issues: Vec<Issue>,
}

async fn profile_issues(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<IssuesResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    load(&state, id).await?;
    let issues = odp_store::profile_issues(&state.pool, id).await?;
    Ok(Json(IssuesResponse {
        profile_id: id,
        issues,
    }))
}

#[derive(Debug, Serialize)]
struct RulesResponse {
    rules: Vec<RuleRow>,
}

async fn rules(
    state: axum::extract::State<AppState>,
    caller: Caller,
) -> Result<Json<RulesResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    let rules = odp_store::list_rules(&state.pool).await?;
    Ok(Json(RulesResponse { rules }))
}
