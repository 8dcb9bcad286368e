//! A profile's samples as a flame graph (JSON tree, folded text, SVG,
//! pprof or speedscope) and as a table of its hottest functions.

use axum::response::{IntoResponse, Response};
use axum::Json;
use odp_api_types::{FlameGraphBody, FlameGraphJson, TopResponse};
use odp_profile::flame;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppPath, AppQuery};
use crate::openapi::{CommonErrors, NotFound};
use crate::render::{nanos_per_sample, period_nanos, render, sample_unit, Orientation, Rendering};
use crate::service::profiles;
use crate::service::queries::{read_profile, shape, SliceParams, TreeParams};
use crate::AppState;

use crate::render::Format;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(flame_graph))
        .routes(routes!(top))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct FlameGraphQuery {
    #[serde(default)]
    #[param(inline)]
    pub format: Format,
    /// SVG: roots at the bottom (`flame`, the default) or on top
    /// (`icicle`).
    #[serde(default)]
    #[param(inline)]
    pub orientation: Orientation,
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
    /// JSON: at most about this many nodes (default 8192); lighter
    /// subtrees merge into one `other` node per parent, so every total
    /// stays exact.
    #[param(minimum = 1, maximum = 200000)]
    pub max_nodes: Option<usize>,
    /// JSON: open only the subtree at this path of frame names,
    /// `;`-separated from the root (as the UI asks when a cut node is
    /// zoomed).
    pub focus: Option<String>,
}

/// A profile's flame graph, optionally narrowed to threads, frames and a
/// time window.
#[utoipa::path(
    get,
    path = "/api/v1/profiles/{id}/flamegraph",
    operation_id = "flame_graph",
    tag = "queries",
    params(("id" = Uuid, Path, description = "Profile id"), FlameGraphQuery),
    responses(
        (status = 200, description = "The flame graph in the requested format", content(
            (FlameGraphBody = "application/json"),
            (String = "text/plain"),
            (String = "image/svg+xml"),
            (Vec<u8> = "application/octet-stream"),
        )),
        NotFound,
        CommonErrors,
    ),
)]
async fn flame_graph(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppQuery(query): AppQuery<FlameGraphQuery>,
) -> Result<Response, ApiError> {
    caller.require(Role::Viewer)?;
    let row = profiles::get(&state.profiles, id).await?;
    let slice = SliceParams {
        thread: query.thread.as_deref(),
        include: query.include.as_deref(),
        exclude: query.exclude.as_deref(),
        window_since: query.window_since.as_deref(),
        window_until: query.window_until.as_deref(),
    };
    let tree = TreeParams::new(query.max_nodes, query.focus.clone())?;
    let limits = state.read_limits.clone();
    let _turn = limits.heavy_read().await?;
    let data = read_profile(&state.pool, id, slice).await?;
    limits.check_read(&data)?;
    let data = std::sync::Arc::new(data);
    let (root, stacks) = shape(data.clone(), query.format, tree).await?;
    let nanos = |t: Option<chrono::DateTime<chrono::Utc>>| t.and_then(|t| t.timestamp_nanos_opt());
    let (started, finished) = (nanos(row.started_at), nanos(row.finished_at));
    let event = data.event.or(row.event);
    let units = sample_unit(event, data.period);
    let rendering = Rendering {
        title: format!("profile {id}"),
        file_stem: format!("profile-{id}"),
        period_nanos: nanos_per_sample(&units)
            .or_else(|| period_nanos(event, row.frequency_hz.into())),
        event,
        duration_nanos: started.zip(finished).map(|(s, f)| f - s),
        time_nanos: started,
        samples: data.samples(),
        stacks,
        orientation: query.orientation,
    };
    let snapshots = data.snapshots;
    render(query.format, rendering, &limits, |r| {
        Json(FlameGraphJson {
            profile_id: id,
            event: r.event,
            units,
            snapshots,
            samples: r.samples,
            root: root.unwrap_or_else(flame::empty),
        })
        .into_response()
    })
    .await
    .map_err(ApiError::from)
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct TopQuery {
    /// How many functions; 20 when absent.
    #[serde(default = "default_limit")]
    #[param(minimum = 1, maximum = 1000)]
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

/// The profile's hottest functions: self and total shares with error
/// bounds.
#[utoipa::path(
    get,
    path = "/api/v1/profiles/{id}/top",
    operation_id = "top_functions",
    tag = "queries",
    params(("id" = Uuid, Path, description = "Profile id"), TopQuery),
    responses(
        (status = 200, description = "The functions table", body = TopResponse),
        NotFound,
        CommonErrors,
    ),
)]
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
    profiles::get(&state.profiles, id).await?;
    let _turn = state.read_limits.heavy_read().await?;
    let slice = SliceParams {
        thread: query.thread.as_deref(),
        include: query.include.as_deref(),
        exclude: query.exclude.as_deref(),
        window_since: query.window_since.as_deref(),
        window_until: query.window_until.as_deref(),
    };
    let data = read_profile(&state.pool, id, slice).await?;
    state.read_limits.check_read(&data)?;
    let response = TopResponse {
        profile_id: id,
        event: data.event,
        units: sample_unit(data.event, data.period),
        samples: data.samples(),
        functions: data.top_functions(query.limit),
    };
    Ok(Json(
        serde_json::to_value(response).map_err(|e| ApiError::Internal(e.to_string()))?,
    ))
}
