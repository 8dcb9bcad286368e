//! A profile's samples as a flame graph (JSON tree, folded text or SVG)
//! and as a table of its hottest functions.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use odp_core::stats::{top_functions, FunctionShare};
use odp_core::{flamegraph, folded};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppPath, AppQuery};
use crate::routes::profiles::load;
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/profiles/{id}/flamegraph", get(flame_graph))
        .route("/api/v1/profiles/{id}/top", get(top))
}

#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Json,
    Folded,
    Svg,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlameGraphQuery {
    #[serde(default)]
    pub format: Format,
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
    load(&state, id).await?;
    let data = odp_store::profile_stacks(&state.pool, id).await?;
    match query.format {
        Format::Json => Ok(Json(FlameGraphJson {
            profile_id: id,
            event: data.event,
            snapshots: data.snapshots,
            samples: data.samples,
            root: flamegraph::build(&data.stacks),
        })
        .into_response()),
        Format::Folded => Ok((
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            folded::to_folded(&data.stacks),
        )
            .into_response()),
        Format::Svg => {
            if data.samples == 0 {
                return Err(ApiError::NotFound(format!(
                    "profile {id} has no samples yet"
                )));
            }
            let text = folded::to_folded(&data.stacks);
            let title = format!(
                "profile {id} ({})",
                data.event.as_deref().unwrap_or("samples")
            );
            let svg = tokio::task::spawn_blocking(move || render_svg(&text, title))
                .await
                .map_err(|e| ApiError::Internal(e.to_string()))??;
            Ok(([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response())
        }
    }
}

fn render_svg(folded_text: &str, title: String) -> Result<Vec<u8>, ApiError> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title;
    options.count_name = "samples".into();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, folded_text.lines(), &mut svg)
        .map_err(|e| ApiError::Internal(format!("flame graph rendering failed: {e}")))?;
    Ok(svg)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopQuery {
    #[serde(default = "default_limit")]
    pub limit: usize,
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
    let data = odp_store::profile_stacks(&state.pool, id).await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_an_svg_with_the_functions() {
        let svg = render_svg("main;hot 6\nmain;warm 3\n", "t".into()).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert!(svg.starts_with("<?xml"));
        assert!(svg.contains("hot") && svg.contains("warm"));
    }
}
