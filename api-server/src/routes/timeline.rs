//! A profile's windows over time: per snapshot its host, bounds, event,
//! samples and sampling frequency, so a UI can plot activity and pick a
//! time window for the flame graph.

use axum::routing::get;
use axum::{Json, Router};
use odp_store::TimelineWindow;
use serde::Serialize;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::AppPath;
use crate::routes::profiles::load;
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/profiles/{id}/timeline", get(timeline))
}

#[derive(Debug, Serialize)]
struct TimelineJson {
    profile_id: Uuid,
    windows: Vec<TimelineWindow>,
}

async fn timeline(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<TimelineJson>, ApiError> {
    caller.require(Role::Viewer)?;
    load(&state, id).await?;
    let windows = odp_store::profile_timeline(&state.pool, id).await?;
    Ok(Json(TimelineJson {
        profile_id: id,
        windows,
    }))
}
