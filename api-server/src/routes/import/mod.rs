//! `POST /api/v1/profiles/import`: a profile from another tool's file
//! (pprof, folded stacks, a JFR recording or a speedscope file) becomes a
//! finished profile of a service, so every query, and comparisons with
//! ODP's own profiles, work on it.
//!
//! Each format is parsed into stacks by [`crate::formats`] (frames as names
//! for pprof and folded stacks; whole frames with module, file and line,
//! and threads, for JFR and speedscope), which become one snapshot stored
//! as the profile's only window. Files are parsed on the blocking pool.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use odp_api_types::Profile;
use odp_core::model::EventKind;
use serde::Deserialize;
use tower_http::trace::TraceLayer;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::AppQuery;
use crate::formats::{
    framed_to_snapshot, imported_header, parse_folded, parse_pprof, rich, Framed, DEFAULT_HOST,
};
use crate::openapi::{CommonErrors, ErrorBody};
use crate::service::profiles;
use crate::validate::validate_name;
use crate::AppState;

/// Uploads may be this large; the API's other routes take 1 MiB.
pub(crate) const MAX_IMPORT_BYTES: usize = 32 << 20;
/// The agent id and host imported samples are stored under by default.
pub(crate) const IMPORT_AGENT: &str = "import";

/// The import route with its own body limit. `app` merges it after the
/// global 1 MiB limit layer, which would otherwise apply to it too, so it
/// carries its own tracing layer as well (and `app` its own timeout).
pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(import))
        .layer(DefaultBodyLimit::max(MAX_IMPORT_BYTES))
        .layer(axum::middleware::from_fn(|request, next| {
            crate::body_limit::refuse_declared_oversize(MAX_IMPORT_BYTES as u64, request, next)
        }))
        .layer(TraceLayer::new_for_http())
}

/// pprof (protocol buffers, gzip-compressed or not), folded stacks, a
/// Java Flight Recorder recording (`.jfr`) or a speedscope file (JSON).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ImportFormat {
    Pprof,
    Folded,
    Jfr,
    Speedscope,
}

impl ImportFormat {
    fn as_str(self) -> &'static str {
        match self {
            ImportFormat::Pprof => "pprof",
            ImportFormat::Folded => "folded",
            ImportFormat::Jfr => "jfr",
            ImportFormat::Speedscope => "speedscope",
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ImportQuery {
    /// The service the profile belongs to (the token must be allowed to
    /// profile it).
    #[param(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    pub service: String,
    #[param(inline)]
    pub format: ImportFormat,
    /// The host the samples are stored under; `imported` when absent.
    #[serde(default)]
    #[param(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    pub host: Option<String>,
    /// pprof: which of the file's sample types to count. JFR: `cpu`
    /// (execution samples, the default), `alloc` (allocation samples,
    /// in bytes) or `lock` (monitor enters and parks, in nanoseconds
    /// waited); without it, a recording with no execution samples counts
    /// the first other kind it has.
    #[serde(default)]
    pub sample_type: Option<String>,
    /// What the counts measure; inferred from the pprof sample type, the
    /// JFR kind (`cpu-clock`, `alloc-bytes`, `lock`) or the speedscope
    /// unit (`cpu-clock` for `none`, `wall` for times, `alloc-bytes` for
    /// bytes), and `cpu-clock` for folded stacks, when absent.
    #[serde(default)]
    pub event: Option<String>,
}

/// Import another tool's profile as a finished profile of a service.
#[utoipa::path(
    post,
    path = "/api/v1/profiles/import",
    operation_id = "import_profile",
    tag = "profiles",
    params(ImportQuery),
    request_body(
        description = "The file, at most 32 MiB",
        content(
            (Vec<u8> = "application/octet-stream"),
            (String = "text/plain"),
        ),
    ),
    responses(
        (status = 201, description = "The imported profile", body = Profile,
            links(
                ("describe" = (operation_id = "describe_profile", parameters(("id" = "$response.body#/id")))),
                ("stop" = (operation_id = "stop_profile", parameters(("id" = "$response.body#/id")))),
                ("flamegraph" = (operation_id = "flame_graph", parameters(("id" = "$response.body#/id")))),
                ("top" = (operation_id = "top_functions", parameters(("id" = "$response.body#/id")))),
                ("issues" = (operation_id = "profile_issues", parameters(("id" = "$response.body#/id")))),
                ("timeline" = (operation_id = "timeline", parameters(("id" = "$response.body#/id")))),
            ),
        ),
        (status = 413, description = "The file exceeds 32 MiB, or holds more distinct stacks or frames than the server's import limits", body = ErrorBody),
        CommonErrors,
    ),
)]
async fn import(
    state: axum::extract::State<AppState>,
    caller: Caller,
    AppQuery(query): AppQuery<ImportQuery>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    validate_name("service", &query.service)?;
    caller.require_profiling(&query.service)?;
    let host = query.host.as_deref().unwrap_or(DEFAULT_HOST);
    validate_name("host", host)?;
    let event = match &query.event {
        Some(name) => Some(name.parse::<EventKind>().map_err(|e| {
            ApiError::Unprocessable(format!("`event`: {e}; one of {}", event_names()))
        })?),
        None => None,
    };
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge(format!(
                "the file exceeds the {MAX_IMPORT_BYTES} byte import limit"
            ))
        } else {
            ApiError::BadRequest(rejection.body_text())
        }
    })?;
    if body.is_empty() {
        return Err(ApiError::Unprocessable("the request body is empty".into()));
    }
    let sample_type = query.sample_type.clone();
    if sample_type.is_some()
        && matches!(
            query.format,
            ImportFormat::Folded | ImportFormat::Speedscope
        )
    {
        return Err(ApiError::Unprocessable(
            "`sample_type` applies to pprof and JFR imports only".into(),
        ));
    }
    let format = query.format;
    let parsed = tokio::task::spawn_blocking(move || match format {
        ImportFormat::Folded => parse_folded(&body).map(Framed::from),
        ImportFormat::Pprof => parse_pprof(&body, sample_type.as_deref()).map(Framed::from),
        ImportFormat::Jfr => rich::parse_jfr(&body, sample_type.as_deref()),
        ImportFormat::Speedscope => rich::parse_speedscope(&body),
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))??;
    let event = match event.or(parsed.event) {
        Some(event) => event,
        None => {
            return Err(ApiError::Unprocessable(format!(
                "cannot tell what sample type {:?} measures; pass `event`, one of {}",
                parsed.sample_type,
                event_names()
            )))
        }
    };
    let header = imported_header(Uuid::new_v4(), host, IMPORT_AGENT, event);
    let snapshot = framed_to_snapshot(parsed, header, chrono::Utc::now().timestamp_millis())?;
    state
        .read_limits
        .check_import(snapshot.stacks.len(), snapshot.frames.len())?;
    let samples = snapshot.total_samples();
    let profile = profiles::import(
        &state,
        &snapshot,
        &query.service,
        query.format.as_str(),
        &caller.subject,
    )
    .await?;
    tracing::info!(profile_id = %profile.id, service = %profile.service, format = query.format.as_str(),
        samples, by = %caller.subject, "profile imported");
    Ok((StatusCode::CREATED, Json(profile)).into_response())
}

fn event_names() -> String {
    EventKind::ALL.map(EventKind::as_str).join(", ")
}
