//! A run's reads: its aggregate (every member) as a flame graph in each
//! format a profile has, its hottest functions, its members' windows, and
//! its hosts compared with each other (outliers).
//!
//! Parameters are read from the raw pairs, so that any bad one (an
//! unknown name, a format, a pattern, a number) is a 422 with a message.

use std::collections::HashMap;

use axum::response::{IntoResponse, Response};
use axum::Json;
use odp_api_types::{
    RunFlameGraphBody, RunFlameGraphJson, RunHostsResponse, RunIssuesResponse, RunTimelineJson,
    RunTopResponse,
};
use odp_core::filter::{StackFilter, ThreadFilter};
use odp_core::run::outliers::OutlierOptions;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::{Caller, Role};
use crate::error::ApiError;
use crate::extract::{AppPath, AppQuery};
use crate::openapi::{CommonErrors, NotFound};
use crate::render::{Format, Orientation};
use crate::service::queries::{
    filter_error, render_merged, MergedTitle, TreeParams, MAX_MAX_NODES,
};
use crate::service::runs::{self, reads};
use crate::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(flame_graph))
        .routes(routes!(top))
        .routes(routes!(timeline))
        .routes(routes!(hosts))
        .routes(routes!(issues))
}

/// The pairs by name, each given at most once and each one of `known`.
fn single(
    pairs: Vec<(String, String)>,
    known: &[&'static str],
) -> Result<HashMap<&'static str, String>, ApiError> {
    let mut single = HashMap::new();
    for (key, value) in pairs {
        let Some(name) = known.iter().find(|k| **k == key) else {
            return Err(ApiError::Unprocessable(format!(
                "unknown parameter `{key}`; expected {}",
                known.join(", ")
            )));
        };
        if single.insert(*name, value).is_some() {
            return Err(ApiError::Unprocessable(format!(
                "`{name}` may be given once"
            )));
        }
    }
    Ok(single)
}

fn parse_format(text: &str) -> Result<Format, ApiError> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).map_err(|_| {
        ApiError::Unprocessable(format!(
            "unknown format {text:?}; expected json, folded, svg, pprof or speedscope"
        ))
    })
}

fn parse_number<T: std::str::FromStr + PartialOrd + std::fmt::Display>(
    name: &str,
    text: &str,
    (min, max): (T, T),
) -> Result<T, ApiError> {
    match text.parse::<T>() {
        Ok(n) if n >= min && n <= max => Ok(n),
        _ => Err(ApiError::Unprocessable(format!(
            "`{name}` must be a number from {min} to {max}"
        ))),
    }
}

/// Threads and stacks to keep.
fn filters(
    thread: Option<&str>,
    include: Option<&str>,
    exclude: Option<&str>,
) -> Result<(Option<ThreadFilter>, StackFilter), ApiError> {
    let thread = thread
        .map(ThreadFilter::new)
        .transpose()
        .map_err(filter_error)?;
    let stacks = StackFilter::new(include, exclude).map_err(filter_error)?;
    Ok((thread, stacks))
}

/// `/runs/{id}/flamegraph`'s parameters.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
struct RunFlameGraphParams {
    #[param(inline)]
    format: Option<Format>,
    /// SVG: roots at the bottom (`flame`, the default) or on top
    /// (`icicle`).
    #[param(inline)]
    orientation: Option<Orientation>,
    /// Only threads with this name, or matching it as a regex.
    thread: Option<String>,
    /// Only stacks with a frame matching this regex.
    include: Option<String>,
    /// Without stacks with a frame matching this regex.
    exclude: Option<String>,
    /// JSON: at most about this many nodes (default 8192); lighter
    /// subtrees merge into one `other` node per parent, so every total
    /// stays exact.
    #[param(minimum = 1, maximum = 200000)]
    max_nodes: Option<usize>,
    /// JSON: open only the subtree at this path of frame names,
    /// `;`-separated from the root.
    focus: Option<String>,
}

/// The run's aggregate (every member, merged per host, then across
/// hosts) as a flame graph.
#[utoipa::path(
    get,
    path = "/api/v1/runs/{id}/flamegraph",
    operation_id = "run_flame_graph",
    tag = "runs",
    params(("id" = Uuid, Path, description = "Run id"), RunFlameGraphParams),
    responses(
        (status = 200, description = "The run's flame graph in the requested format", content(
            (RunFlameGraphBody = "application/json"),
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
    AppQuery(pairs): AppQuery<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    caller.require(Role::Viewer)?;
    let mut single = single(
        pairs,
        &[
            "format",
            "orientation",
            "thread",
            "include",
            "exclude",
            "max_nodes",
            "focus",
        ],
    )?;
    let params = RunFlameGraphParams {
        format: single
            .remove("format")
            .as_deref()
            .map(parse_format)
            .transpose()?,
        orientation: single
            .remove("orientation")
            .as_deref()
            .map(Orientation::parse)
            .transpose()?,
        max_nodes: single
            .remove("max_nodes")
            .map(|n| parse_number("max_nodes", &n, (1, MAX_MAX_NODES)))
            .transpose()?,
        focus: single.remove("focus"),
        thread: single.remove("thread"),
        include: single.remove("include"),
        exclude: single.remove("exclude"),
    };
    let (thread, stacks) = filters(
        params.thread.as_deref(),
        params.include.as_deref(),
        params.exclude.as_deref(),
    )?;
    let tree = TreeParams::new(params.max_nodes, params.focus)?;
    let format = params.format.unwrap_or_default();
    let row = runs::row(&state, id).await?;
    let read = reads::run_read(id, thread, stacks);
    let service = row.service.clone();
    let title = |sampled_hosts: usize| MergedTitle {
        title: format!("run {id} of {service} on {sampled_hosts} hosts"),
        file_stem: format!("run-{id}"),
        time_nanos: row.created_at.timestamp_nanos_opt(),
    };
    render_merged(
        &state,
        &read,
        format,
        params.orientation.unwrap_or_default(),
        tree,
        title,
        |parts| {
            Json(RunFlameGraphJson {
                run_id: id,
                service: row.service.clone(),
                event: parts.event,
                units: parts.units,
                profiles: parts.profiles,
                snapshots: parts.snapshots,
                samples: parts.samples,
                hosts: parts.hosts,
                root: parts.root,
            })
            .into_response()
        },
    )
    .await
    .map_err(ApiError::from)
}

/// `/runs/{id}/top`'s parameters.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
struct RunTopParams {
    /// How many functions; 20 when absent.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<usize>,
    /// Only threads with this name, or matching it as a regex.
    thread: Option<String>,
    /// Only stacks with a frame matching this regex.
    include: Option<String>,
    /// Without stacks with a frame matching this regex.
    exclude: Option<String>,
}

/// The run's hottest functions over every member: self and total shares
/// with error bounds.
#[utoipa::path(
    get,
    path = "/api/v1/runs/{id}/top",
    operation_id = "run_top_functions",
    tag = "runs",
    params(("id" = Uuid, Path, description = "Run id"), RunTopParams),
    responses(
        (status = 200, description = "The functions table", body = RunTopResponse),
        NotFound,
        CommonErrors,
    ),
)]
async fn top(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppQuery(pairs): AppQuery<Vec<(String, String)>>,
) -> Result<Json<RunTopResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    let mut single = single(pairs, &["limit", "thread", "include", "exclude"])?;
    let params = RunTopParams {
        limit: single
            .remove("limit")
            .map(|n| parse_number("limit", &n, (1, 1000)))
            .transpose()?,
        thread: single.remove("thread"),
        include: single.remove("include"),
        exclude: single.remove("exclude"),
    };
    let (thread, stacks) = filters(
        params.thread.as_deref(),
        params.include.as_deref(),
        params.exclude.as_deref(),
    )?;
    let limit = params.limit.unwrap_or(20);
    Ok(Json(reads::top(&state, id, thread, stacks, limit).await?))
}

/// The windows of every member of the run in time order: host, bounds,
/// event and samples.
#[utoipa::path(
    get,
    path = "/api/v1/runs/{id}/timeline",
    operation_id = "run_timeline",
    tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    responses(
        (status = 200, description = "The members' windows", body = RunTimelineJson),
        NotFound,
        CommonErrors,
    ),
)]
async fn timeline(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<RunTimelineJson>, ApiError> {
    caller.require(Role::Viewer)?;
    runs::row(&state, id).await?;
    let windows = reads::timeline(&state, id).await?;
    Ok(Json(RunTimelineJson {
        run_id: id,
        coverage: odp_api_types::SampleCoverage::of(&windows),
        windows,
    }))
}

/// `/runs/{id}/hosts`' parameters.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
struct RunHostsParams {
    /// The run's top functions compared one by one (the rest are one
    /// category); 10 when absent.
    #[param(minimum = 1, maximum = 100)]
    top_k: Option<usize>,
    /// Family-wise false-positive rate; a host is flagged when its
    /// p-value is below `alpha / hosts`. 0.01 when absent.
    #[param(exclusive_minimum = 0, exclusive_maximum = 1)]
    alpha: Option<f64>,
}

impl RunHostsParams {
    fn from_pairs(pairs: Vec<(String, String)>) -> Result<OutlierOptions, ApiError> {
        let mut single = single(pairs, &["top_k", "alpha"])?;
        let params = RunHostsParams {
            top_k: single
                .remove("top_k")
                .map(|n| parse_number("top_k", &n, (1, 100)))
                .transpose()?,
            alpha: single
                .remove("alpha")
                .map(|a| match a.parse::<f64>() {
                    Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
                    _ => Err(ApiError::Unprocessable(
                        "`alpha` must be a number between 0 and 1 (exclusive)".into(),
                    )),
                })
                .transpose()?,
        };
        let defaults = OutlierOptions::default();
        Ok(OutlierOptions {
            top_k: params.top_k.unwrap_or(defaults.top_k),
            alpha: params.alpha.unwrap_or(defaults.alpha),
        })
    }
}

/// Every chosen host of the run: its labels, samples and hottest
/// functions, and how far its function mix is from the other hosts' (a
/// chi-square test against the others pooled, over the run's top
/// functions); outliers are the hosts below `alpha / hosts`.
#[utoipa::path(
    get,
    path = "/api/v1/runs/{id}/hosts",
    operation_id = "run_hosts",
    tag = "runs",
    params(("id" = Uuid, Path, description = "Run id"), RunHostsParams),
    responses(
        (status = 200, description = "The hosts, most different first", body = RunHostsResponse),
        NotFound,
        CommonErrors,
    ),
)]
async fn hosts(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
    AppQuery(pairs): AppQuery<Vec<(String, String)>>,
) -> Result<Json<RunHostsResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    let options = RunHostsParams::from_pairs(pairs)?;
    let row = runs::row(&state, id).await?;
    let _turn = state.read_limits.heavy_read().await?;
    Ok(Json(reads::hosts(&state, &row, options).await?))
}

/// What the detection rules found in the run's merged samples once it
/// ended (one finding, and one alert per channel, for the whole run), with
/// the hosts where each rule measures most. Empty with `evaluated_at`
/// null until the pipeline has judged the run.
#[utoipa::path(
    get,
    path = "/api/v1/runs/{id}/issues",
    operation_id = "run_issues",
    tag = "runs",
    params(("id" = Uuid, Path, description = "Run id")),
    responses(
        (status = 200, description = "The run's findings, largest share first", body = RunIssuesResponse),
        NotFound,
        CommonErrors,
    ),
)]
async fn issues(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<RunIssuesResponse>, ApiError> {
    caller.require(Role::Viewer)?;
    let row = runs::row(&state, id).await?;
    Ok(Json(reads::issues(&state, &row).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn unprocessable<T: std::fmt::Debug>(result: Result<T, ApiError>) -> String {
        match result {
            Err(ApiError::Unprocessable(m)) => m,
            other => panic!("expected 422, got {other:?}"),
        }
    }

    #[test]
    fn parameters_are_known_and_single() {
        let known = &["format", "include"];
        let got = single(pairs(&[("format", "svg")]), known).unwrap();
        assert_eq!(got["format"], "svg");
        assert!(unprocessable(single(pairs(&[("limit", "1")]), known)).contains("unknown"));
        let twice = pairs(&[("format", "svg"), ("format", "json")]);
        assert!(unprocessable(single(twice, known)).contains("once"));
    }

    #[test]
    fn formats_numbers_and_filters_are_checked() {
        assert_eq!(parse_format("pprof").unwrap(), Format::Pprof);
        assert_eq!(parse_format("speedscope").unwrap(), Format::Speedscope);
        assert!(unprocessable(parse_format("png")).contains("format"));
        assert_eq!(parse_number("limit", "5", (1, 10)).unwrap(), 5);
        for bad in ["0", "11", "x", "-1"] {
            assert!(unprocessable(parse_number("limit", bad, (1, 10))).contains("limit"));
        }
        assert!(unprocessable(filters(None, Some("("), None)).contains("include"));
        assert!(unprocessable(filters(Some(""), None, None)).contains("thread"));
        let (thread, stacks) = filters(Some("^worker"), None, Some("gc")).unwrap();
        assert!(thread.is_some() && stacks.exclude.is_some());
    }

    #[test]
    fn outlier_options_default_and_are_bounded() {
        assert_eq!(
            RunHostsParams::from_pairs(Vec::new()).unwrap(),
            OutlierOptions::default()
        );
        let set = RunHostsParams::from_pairs(pairs(&[("top_k", "3"), ("alpha", "0.05")])).unwrap();
        assert_eq!((set.top_k, set.alpha), (3, 0.05));
        for (name, value) in [
            ("top_k", "0"),
            ("top_k", "101"),
            ("alpha", "1"),
            ("alpha", "0"),
        ] {
            let message = unprocessable(RunHostsParams::from_pairs(pairs(&[(name, value)])));
            assert!(message.contains(name), "{message}");
        }
    }
}
