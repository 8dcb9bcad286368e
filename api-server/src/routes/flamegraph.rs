//! A profile's samples as a flame graph (JSON tree, folded text, SVG,
//! pprof or speedscope) and as a table of its hottest functions.

use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use odp_core::flamegraph;
use odp_core::stats::{top_functions, FunctionShare};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppPath, AppQuery};
use crate::routes::aggregate::{filtered_profile_stacks, SliceParams};
use crate::routes::profiles::load;
use crate::routes::render::{period_nanos, render, Rendering};
use crate::AppState;

pub use crate::routes::render::Format;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/profiles/{id}/flamegraph", get(flame_graph))
        .route("/api/v1/profiles/{id}/top", get(top))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlameGraphQuery {
    #[serde(default)]
    pub format: Format,
    /// Only threads with this name, or matching it as a regex.
    pub thread: Option<String>,
    /// Only stacks with a frame matching this regex.
    pub include: Option<String>,
    /// Without stacks with a frame matching this regex.
    pub exclude: Option<String>,
    /// Only windows ending after this RFC 3339 time.
    pub window_since: Option<String>,
    /// Only windows starting before this RFC 3339 time.
    pub window_until: Option<String>,
}

#[derive(Debug, Serialize)]
struct FlameGraphJson {
    profile_id: Uuid,
    event: Option<String>,
    snapshots: i64,
    samples: u64,
    root: flamegraph::FlameNode,
}

async fn flame_graph(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppQuery(query): AppQuery<FlameGraphQuery>,
) -> Result<Response, ApiError> {
    caller.require(Role::Viewer)?;
    let row = load(&state, id).await?;
    let slice = SliceParams {
        thread: query.thread.as_deref(),
        include: query.include.as_deref(),
        exclude: query.exclude.as_deref(),
        window_since: query.window_since.as_deref(),
        window_until: query.window_until.as_deref(),
    };
    let data = filtered_profile_stacks(&state.pool, id, slice).await?;
    let nanos = |t: Option<chrono::DateTime<chrono::Utc>>| t.and_then(|t| t.timestamp_nanos_opt());
    let (started, finished) = (nanos(row.started_at), nanos(row.finished_at));
    let event = data.event.or(row.event);
    let rendering = Rendering {
        title: format!("profile {id}"),
        file_stem: format!("profile-{id}"),
        period_nanos: period_nanos(event.as_deref(), row.frequency_hz.into()),
        event,
        duration_nanos: started.zip(finished).map(|(s, f)| f - s),
        time_nanos: started,
        samples: data.samples,
        stacks: data.stacks,
    };
    let snapshots = data.snapshots;
    render(query.format, rendering, |r| {
        Json(FlameGraphJson {
            profile_id: id,
            event: r.event,
            snapshots,
            samples: r.samples,
            root: flamegraph::build(&r.stacks),
        })
        .into_response()
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopQuery {
    #[serde(default = "default_limit")]
    pub limit: usize,
    /// Only threads with this name, or matching it as a regex.
    pub thread: Option<String>,
    /// Only stacks with a frame matching this regex.
    pub include: Option<String>,
    /// Without stacks with a frame matching this regex.
    pub exclude: Option<String>,
    /// Only windows ending after this RFC 3339 time.
    pub window_since: Option<String>,
    /// Only windows starting before this RFC 3339 time.
    pub window_until: Option<String>,
}

fn default_limit() -> usize {
    20
}

#[derive(Debug, Serialize)]
struct TopResponse {
    profile_id: Uuid,
    event: Option<String>,
    samples: u64,
    functions: Vec<FunctionShare>,
}

async fn top(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppQuery(query): AppQuery<TopQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    caller.require(Role::Viewer)?;
    if !(1..=1000).contains(&query.limit) {
        return Err(ApiError::Unprocessable(
            "`limit` must be between 1 and 1000".into(),
        ));
    }
    load(&state, id).await?;
    let slice = SliceParams {
        thread: query.thread.as_deref(),
        include: query.include.as_deref(),
        exclude: query.exclude.as_deref(),
        window_since: query.window_since.as_deref(),
        window_until: query.window_until.as_deref(),
    };
    let data = filtered_profile_stacks(&state.pool, id, slice).await?;
    let response = TopResponse {
        profile_id: id,
        event: data.event,
        samples: data.samples,
        functions: top_functions(&data.stacks, query.limit),
    };
    Ok(Json(
        serde_json::to_value(response).map_err(|e| ApiError::Internal(e.to_string()))?,
    ))
}
