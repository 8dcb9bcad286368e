//! `POST /api/v1/profiles/import`: a profile from another tool's file
//! (pprof, or folded stacks) becomes a finished profile of a service, so
//! every query, and comparisons with ODP's own profiles, work on it.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use odp_api_types::Profile;
use odp_core::model::EventKind;
use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader, MAX_STACK_DEPTH};
use odp_core::{folded, pprof, Frame, Snapshot, WeightedStack};
use serde::Deserialize;
use tower_http::trace::TraceLayer;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::AppQuery;
use crate::openapi::{CommonErrors, ErrorBody};
use crate::validate::validate_name;
use crate::AppState;

/// Uploads may be this large; the API's other routes take 1 MiB.
pub(crate) const MAX_IMPORT_BYTES: usize = 32 << 20;
/// The agent id and host imported samples are stored under by default.
pub(crate) const IMPORT_AGENT: &str = "import";
pub(crate) const DEFAULT_HOST: &str = "imported";

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

/// pprof (protocol buffers, gzip-compressed or not) or folded stacks.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ImportFormat {
    Pprof,
    Folded,
}

impl ImportFormat {
    fn as_str(self) -> &'static str {
        match self {
            ImportFormat::Pprof => "pprof",
            ImportFormat::Folded => "folded",
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
    /// pprof only: which of the file's sample types to count.
    #[serde(default)]
    pub sample_type: Option<String>,
    /// What the counts measure; inferred from the pprof sample type, and
    /// `cpu-clock` for folded stacks, when absent.
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
    let parsed = match query.format {
        ImportFormat::Folded => {
            if query.sample_type.is_some() {
                return Err(ApiError::Unprocessable(
                    "`sample_type` applies to pprof imports only".into(),
                ));
            }
            parse_folded(&body)?
        }
        ImportFormat::Pprof => {
            let bytes = body.clone();
            let sample_type = query.sample_type.clone();
            tokio::task::spawn_blocking(move || parse_pprof(&bytes, sample_type.as_deref()))
                .await
                .map_err(|e| ApiError::Internal(e.to_string()))??
        }
    };
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
    let header = SnapshotHeader {
        profile_id: Uuid::new_v4(),
        host: host.to_owned(),
        agent_id: IMPORT_AGENT.to_owned(),
        sequence: 0,
        window_start_ms: 0,
        window_end_ms: 0,
        event,
        period: 0,
        frequency_hz: 0,
    };
    let snapshot = to_snapshot(parsed, header, chrono::Utc::now().timestamp_millis())?;
    state
        .read_limits
        .check_import(snapshot.stacks.len(), snapshot.frames.len())?;
    let samples = snapshot.total_samples();
    let row = odp_store::import_profile(
        &state.pool,
        &snapshot,
        &query.service,
        query.format.as_str(),
        &caller.subject,
    )
    .await?;
    tracing::info!(profile_id = %row.id, service = %row.service, format = query.format.as_str(),
        samples, by = %caller.subject, "profile imported");
    Ok((StatusCode::CREATED, Json(Profile::from(row))).into_response())
}

fn event_names() -> String {
    EventKind::ALL.map(EventKind::as_str).join(", ")
}

/// Stacks read from an uploaded file, and what the file says about them.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Parsed {
    pub stacks: Vec<WeightedStack>,
    /// The sample type the counts come from (pprof).
    pub sample_type: String,
    /// What the counts measure, when the file tells.
    pub event: Option<EventKind>,
    pub period_nanos: Option<i64>,
    pub time_nanos: Option<i64>,
    pub duration_nanos: Option<i64>,
}

fn parse_folded(body: &[u8]) -> Result<Parsed, ApiError> {
    let text = std::str::from_utf8(body)
        .map_err(|e| ApiError::Unprocessable(format!("folded stacks must be UTF-8 text: {e}")))?;
    let stacks = folded::parse_folded(text)
        .map_err(|e| ApiError::Unprocessable(format!("not folded stacks: {e}")))?;
    Ok(Parsed {
        stacks,
        sample_type: "samples".into(),
        event: Some(EventKind::CpuClock),
        ..Parsed::default()
    })
}

fn parse_pprof(body: &[u8], sample_type: Option<&str>) -> Result<Parsed, ApiError> {
    let decoded = pprof::decode(body, sample_type)
        .map_err(|e| ApiError::Unprocessable(format!("not a usable pprof profile: {e}")))?;
    Ok(Parsed {
        event: event_of_sample_type(&decoded.sample_type),
        stacks: decoded.stacks,
        sample_type: decoded.sample_type,
        period_nanos: decoded.period_nanos,
        time_nanos: decoded.time_nanos,
        duration_nanos: decoded.duration_nanos,
    })
}

/// What a pprof sample type measures, for the names Go, perf converters
/// and ODP's own export use.
pub(crate) fn event_of_sample_type(name: &str) -> Option<EventKind> {
    match name {
        "samples" | "cpu" => Some(EventKind::CpuClock),
        "alloc_space" => Some(EventKind::AllocBytes),
        "inuse_space" => Some(EventKind::HeapBytes),
        other => other.parse().ok(),
    }
}

/// The snapshot the import is stored as: one window spanning the file's
/// time range (or the instant `now_ms` when it has none).
fn to_snapshot(
    parsed: Parsed,
    mut header: SnapshotHeader,
    now_ms: i64,
) -> Result<Snapshot, ApiError> {
    let invalid = |m: String| Err(ApiError::Unprocessable(m));
    let mut builder = SnapshotBuilder::new();
    let mut total: u64 = 0;
    for (i, stack) in parsed.stacks.iter().enumerate() {
        if stack.frames.len() > MAX_STACK_DEPTH {
            return invalid(format!(
                "stack {} is {} frames deep, more than {MAX_STACK_DEPTH}",
                i + 1,
                stack.frames.len()
            ));
        }
        total = match total.checked_add(stack.count) {
            Some(t) if t <= i64::MAX as u64 => t,
            _ => {
                return invalid(format!(
                    "the sample counts add up to more than {}",
                    i64::MAX
                ))
            }
        };
        // Postgres text cannot hold NUL.
        let frames: Vec<Frame> = stack
            .frames
            .iter()
            .map(|f| Frame::function(f.replace('\0', "\u{fffd}")))
            .collect();
        builder.add(&frames, 0, stack.count);
    }
    if builder.samples() == 0 {
        return invalid(format!(
            "the file has no samples (of sample type {:?})",
            parsed.sample_type
        ));
    }
    // A timestamp outside what Postgres and chrono represent is not one.
    const YEAR_9999_MS: i64 = 253_402_300_799_000;
    let start_ms = parsed
        .time_nanos
        .map(|t| t / 1_000_000)
        .filter(|t| (0..YEAR_9999_MS).contains(t))
        .unwrap_or(now_ms);
    let duration_ms = parsed
        .duration_nanos
        .map(|d| d / 1_000_000)
        .filter(|&d| (0..=366 * 24 * 3600 * 1000).contains(&d))
        .unwrap_or(0);
    header.window_start_ms = start_ms;
    header.window_end_ms = (start_ms + duration_ms).min(YEAR_9999_MS);
    if let Some(period) = parsed.period_nanos.filter(|&p| p > 0) {
        header.period = period as u64;
        header.frequency_hz = u32::try_from((1_000_000_000 + period / 2) / period).unwrap_or(0);
    }
    Ok(builder.build(header))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> SnapshotHeader {
        SnapshotHeader {
            profile_id: Uuid::nil(),
            host: "h".into(),
            agent_id: IMPORT_AGENT.into(),
            sequence: 0,
            window_start_ms: 0,
            window_end_ms: 0,
            event: EventKind::CpuClock,
            period: 0,
            frequency_hz: 0,
        }
    }

    #[test]
    fn folded_text_becomes_one_window_at_the_upload_time() {
        let parsed = parse_folded(b"main;hot 6\nmain;warm 3\nmain;hot 1\n").unwrap();
        assert_eq!(parsed.event, Some(EventKind::CpuClock));
        let snapshot = to_snapshot(parsed, header(), 1_000).unwrap();
        assert_eq!(snapshot.total_samples(), 10);
        assert_eq!(snapshot.stacks.len(), 2, "equal stacks merge");
        assert_eq!(
            (snapshot.window_start_ms, snapshot.window_end_ms),
            (1_000, 1_000)
        );
        assert_eq!(snapshot.frames.len(), 3);
    }

    #[test]
    fn pprof_times_and_period_carry_over() {
        let bytes = pprof::encode(
            &[WeightedStack {
                frames: vec!["main".into(), "nul\0name".into()],
                count: 4,
            }],
            &pprof::PprofMeta {
                event: Some(odp_core::EventKind::CpuClock),
                period_nanos: Some(10_101_010),
                duration_nanos: Some(2_500_000_000),
                time_nanos: Some(1_700_000_000_123_456_789),
            },
        );
        let parsed = parse_pprof(&bytes, None).unwrap();
        let snapshot = to_snapshot(parsed, header(), 0).unwrap();
        assert_eq!(snapshot.window_start_ms, 1_700_000_000_123);
        assert_eq!(snapshot.window_end_ms, 1_700_000_002_623);
        assert_eq!((snapshot.period, snapshot.frequency_hz), (10_101_010, 99));
        assert_eq!(snapshot.frames[1].function, "nul\u{fffd}name");
    }

    #[test]
    fn bad_files_are_unprocessable() {
        let unprocessable = |r: Result<Parsed, ApiError>| {
            assert!(matches!(r, Err(ApiError::Unprocessable(_))), "{r:?}");
        };
        unprocessable(parse_folded(b"\xff\xfe not text"));
        unprocessable(parse_folded(b"main;x many\n"));
        unprocessable(parse_pprof(b"main;x 1\n", None));
        let empty = to_snapshot(parse_folded(b"main 0\n\n").unwrap(), header(), 0);
        assert!(matches!(empty, Err(ApiError::Unprocessable(_))));
        let huge = format!("a {}\nb {}\n", i64::MAX, 1);
        let overflow = to_snapshot(parse_folded(huge.as_bytes()).unwrap(), header(), 0);
        assert!(matches!(overflow, Err(ApiError::Unprocessable(_))));
        let deep = format!("{} 1\n", vec!["f"; MAX_STACK_DEPTH + 1].join(";"));
        let deep = to_snapshot(parse_folded(deep.as_bytes()).unwrap(), header(), 0);
        assert!(matches!(deep, Err(ApiError::Unprocessable(_))));
    }

    #[test]
    fn sample_types_name_their_events() {
        assert_eq!(event_of_sample_type("samples"), Some(EventKind::CpuClock));
        assert_eq!(event_of_sample_type("cycles"), Some(EventKind::Cycles));
        assert_eq!(
            event_of_sample_type("inuse_space"),
            Some(EventKind::HeapBytes)
        );
        assert_eq!(event_of_sample_type("contentions"), None);
    }
}
